// The request reader (request_reader.h): Boost.Beast's basic_parser and flat_buffer. This is the
// only translation unit of the HTTP server that includes Beast's parser.
#include "adapters/http/request_reader.h"

// Boost 1.74 Asio needs <utility> (std::exchange) before its headers with g++ 12.
#include <utility>

#include <algorithm>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>

#include "adapters/http/http_text.h"

namespace sedna::http {
namespace {

namespace bhttp = boost::beast::http;
using boost::system::error_code;
using HeaderMap = decltype(HttpRequest::headers);

// Feeds a Beast request parser straight into a (reused) HttpRequest. Header map nodes come from
// `spare` (the previous request's, with their strings' capacity) while it has any.
class RequestParser final : public bhttp::basic_parser<true> {
 public:
  RequestParser(HttpRequest& req, std::vector<HeaderMap::node_type>& spare)
      : req_(req), spare_(spare) {}

  int version() const { return version_; }
  bool expects_continue() const { return expect_continue_; }
  // The request named a transfer-coding other than exactly "chunked" (the parse then fails).
  bool unsupported_coding() const { return unsupported_coding_; }

 private:
  void on_request_impl(bhttp::verb, std::string_view method, std::string_view target, int version,
                       error_code&) override {
    req_.method.assign(method);
    req_.target.assign(target);
    version_ = version;
  }
  void on_response_impl(int, std::string_view, int, error_code&) override {}
  void on_field_impl(bhttp::field f, std::string_view name, std::string_view value,
                     error_code& ec) override {
    if (header_done_) {  // a trailer field: counted and discarded
      trailer_bytes_ += name.size() + value.size() + 4;
      if (trailer_bytes_ > kChunkLineLimit) ec = bhttp::error::header_limit;
      return;
    }
    if (f == bhttp::field::transfer_encoding && !EqualsIgnoreCase(TrimOws(value), "chunked")) {
      unsupported_coding_ = true;
      ec = bhttp::error::bad_transfer_encoding;
      return;
    }
    if (f == bhttp::field::expect && EqualsIgnoreCase(value, "100-continue")) {
      expect_continue_ = true;
    }
    if (spare_.empty()) {
      name_.resize(name.size());
      std::transform(name.begin(), name.end(), name_.begin(), AsciiLower);
      auto [it, inserted] = req_.headers.try_emplace(name_, value);
      if (!inserted) {
        it->second += ", ";
        it->second += value;
      }
      return;
    }
    HeaderMap::node_type node = std::move(spare_.back());
    spare_.pop_back();
    std::string& key = node.key();
    key.resize(name.size());
    std::transform(name.begin(), name.end(), key.begin(), AsciiLower);
    node.mapped().assign(value);
    auto result = req_.headers.insert(std::move(node));
    if (!result.inserted) {  // a repeated field: joined, and the node goes back
      result.position->second += ", ";
      result.position->second += value;
      spare_.push_back(std::move(result.node));
    }
  }
  void on_header_impl(error_code&) override { header_done_ = true; }
  // No reserve here: the connection reserves a body's length once the body budget grants it.
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  size_t on_body_impl(std::string_view body, error_code&) override {
    req_.body.append(body);
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, std::string_view extensions, error_code& ec) override {
    if (extensions.size() > kChunkLineLimit) ec = bhttp::error::header_limit;
  }
  size_t on_chunk_body_impl(std::uint64_t, std::string_view body, error_code&) override {
    req_.body.append(body);
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  HttpRequest& req_;
  std::vector<HeaderMap::node_type>& spare_;
  std::string name_;
  int version_ = 11;
  bool expect_continue_ = false;
  bool header_done_ = false;
  bool unsupported_coding_ = false;
  size_t trailer_bytes_ = 0;
};

}  // namespace

struct RequestReader::Impl {
  boost::beast::flat_buffer buffer;
  std::optional<RequestParser> parser;
};

RequestReader::RequestReader() : impl_(std::make_unique<Impl>()) {}
RequestReader::~RequestReader() = default;

std::span<char> RequestReader::Prepare(size_t n) {
  auto b = impl_->buffer.prepare(n);
  return {static_cast<char*>(b.data()), b.size()};
}
void RequestReader::Commit(size_t n) { impl_->buffer.commit(n); }
size_t RequestReader::buffered() const { return impl_->buffer.size(); }
void RequestReader::DiscardBuffered() { impl_->buffer.consume(impl_->buffer.size()); }
void RequestReader::ShrinkIfEmpty(size_t keep) {
  if (impl_->buffer.size() == 0 && impl_->buffer.capacity() > keep) impl_->buffer.shrink_to_fit();
}

void RequestReader::Begin(HttpRequest& req, std::vector<HeaderNode>& spare, size_t body_limit) {
  RequestParser& p = impl_->parser.emplace(req, spare);
  p.eager(true);
  p.header_limit(kHeaderLimit);
  p.body_limit(body_limit);
}

RequestReader::Parsed RequestReader::Parse() {
  RequestParser& p = *impl_->parser;
  error_code ec;
  Parsed r;
  r.used = p.put(impl_->buffer.data(), ec);
  impl_->buffer.consume(r.used);
  if (!ec) return r;
  if (ec == bhttp::error::need_more) {
    r.error = Error::kNeedMore;
  } else if (ec == bhttp::error::body_limit) {
    r.error = Error::kBodyLimit;
  } else if (ec == bhttp::error::header_limit) {
    r.error = Error::kHeaderLimit;
  } else if (p.unsupported_coding()) {
    r.error = Error::kUnsupportedCoding;
  } else {
    r.error = Error::kBad;
  }
  return r;
}

bool RequestReader::started() const { return impl_->parser.has_value(); }
bool RequestReader::header_done() const { return impl_->parser->is_header_done(); }
bool RequestReader::done() const { return impl_->parser->is_done(); }
std::optional<uint64_t> RequestReader::content_length() const {
  const boost::optional<std::uint64_t> n = impl_->parser->content_length();
  if (!n) return std::nullopt;
  return *n;
}
bool RequestReader::keep_alive() const { return impl_->parser->keep_alive(); }
int RequestReader::version() const { return impl_->parser ? impl_->parser->version() : 11; }
bool RequestReader::expects_continue() const { return impl_->parser->expects_continue(); }

}  // namespace sedna::http
