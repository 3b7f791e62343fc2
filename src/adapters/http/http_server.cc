#include "adapters/http/http_server.h"

#include "adapters/http/admission.h"

// Boost 1.74 Asio needs <utility> (std::exchange) before its headers with g++ 12.
#include <utility>

#include <algorithm>
#include <array>
#include <charconv>
#include <exception>
#include <list>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

namespace sedna::http {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr size_t kHeaderLimit = 64 * 1024;
// The longest chunk-size line or trailer section accepted: bounded while incomplete (the bytes
// buffered for it) and once parsed (a line's extensions; the trailer fields' names and values).
constexpr size_t kChunkLineLimit = 8 * 1024;
constexpr Clock::time_point kNever = Clock::time_point::max();
constexpr size_t kReadChunk = 16 * 1024;
constexpr std::chrono::milliseconds kDrainTime{500};
constexpr std::chrono::milliseconds kAcceptBackoff{100};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// Header map nodes a connection keeps between requests, and the largest name or value kept.
constexpr size_t kSpareHeaders = 32;
constexpr size_t kSpareHeaderBytes = 256;
// A body, read buffer or reply whose capacity grew past this is freed once its request is done,
// so that an idle connection holds little memory.
constexpr size_t kKeepBytes = 32 * 1024;
// Bodies up to this size are never charged to the body budget (Admission::Limits::small_body).
constexpr size_t kSmallBody = 16 * 1024;

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    if (EqualsIgnoreCase(haystack.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

void AppendNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

std::string EndpointText(const std::string& address, uint16_t port) {
  std::string s = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  s += ':';
  AppendNumber(s, port);
  return s;
}

HttpResponse TextResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

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

class Connection;

Admission::Limits AdmissionLimits(const HttpServerOptions& o) {
  Admission::Limits l;
  l.max_connections = o.max_connections;
  l.eviction_grace = o.eviction_grace;
  // A body up to body_limit must always be able to get a grant.
  l.body_buffer_limit = std::max(o.body_buffer_limit, o.body_limit);
  l.small_body = std::min(kSmallBody, l.body_buffer_limit);
  return l;
}

}  // namespace

struct HttpServer::Core : std::enable_shared_from_this<HttpServer::Core> {
  Core(net::io_context& io, HttpServerOptions opts, HttpHandler h)
      : options(std::move(opts)),
        handler(std::move(h)),
        acceptor(io),
        backoff(io),
        room_timer(io),
        admission(AdmissionLimits(options)) {}

  // (Re)starts the accept loop unless stopped, busy, or at max_connections with no connection
  // evictable now (then a room timer is armed for when one will be, if any).
  void Accept() noexcept;
  void StartAccept();
  void OnAccept(const error_code& ec, tcp::socket socket);
  // Applies the eviction policy, then starts a Connection on `socket`.
  void Admit(tcp::socket socket);
  void ArmRoomTimer(Clock::time_point at) noexcept;
  void Drop(DropReason reason, const tcp::endpoint& peer) noexcept;

  // Registration of an open connection, for Stop(), eviction and the body budget.
  Admission::Id Register(Connection* c) {
    const Admission::Id id = admission.Open(Clock::now());
    try {
      connections.emplace(id, c);
    } catch (...) {
      admission.Close(id);
      throw;
    }
    return id;
  }
  void Unregister(Admission::Id id) noexcept {
    connections.erase(id);
    admission.Close(id);
    ResumeGranted();
    Accept();  // resumes a paused accept loop
  }
  // Lets the connections whose queued body was granted read on.
  void ResumeGranted() noexcept;
  void Stop() noexcept;

  const HttpServerOptions options;
  const HttpHandler handler;
  tcp::acceptor acceptor;
  net::steady_timer backoff;
  net::steady_timer room_timer;
  Admission admission;
  std::unordered_map<Admission::Id, Connection*> connections;
  // A connection accepted when there was no room after all; admitted by Accept() once there is.
  std::optional<tcp::socket> parked;
  Clock::time_point room_timer_at = kNever;  // when the pending room timer fires, or kNever
  bool accepting = false;
  bool admitting = false;  // inside Admit(): Accept() waits for its end
  bool resuming = false;   // inside ResumeGranted()
  bool stopped = false;
};

namespace {

// One client connection. Owned by its pending completion handlers; registered with the Core
// while open so that Stop() can close it, and with the Core's Admission, which may evict it and
// grants its body reads (admission.h).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<HttpServer::Core> core, tcp::socket socket, tcp::endpoint peer)
      : core_(std::move(core)),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        idle_(core_->options.idle_timeout),
        peer_(std::move(peer)) {}

  ~Connection() {
    if (!closed_) Leave();
  }

  void Start() {
    id_ = core_->Register(this);
    registered_ = true;
    error_code ec;
    socket_.non_blocking(true, ec);  // for the first, synchronous send of each reply
    non_blocking_ = !ec;
    last_activity_ = Clock::now();
    head_.reserve(256);
    NextRequest();
    // The first request's header deadline counts from accept.
    header_started_ = true;
    if (core_->options.header_timeout.count() > 0) {
      header_deadline_ = last_activity_ + core_->options.header_timeout;
    }
    ArmTimer();
    // A client that sent its request at once (a worker's report) has it complete now, before
    // this connection could become anyone's eviction victim.
    if (non_blocking_) {
      const size_t n = socket_.read_some(buffer_.prepare(kReadChunk), ec);
      if (ec != net::error::would_block && ec != net::error::try_again) {
        reading_ = true;
        return OnRead(ec, n);
      }
    }
    ParseBuffered();
  }

  // Hard close: pending operations complete with operation_aborted and do nothing more.
  void Close() noexcept {
    if (closed_) return;
    closed_ = true;
    error_code ec;
    socket_.close(ec);
    try {
      timer_.cancel();
    } catch (...) {
    }
    Leave();
  }

  // The body budget granted this connection's queued body (Core::ResumeGranted()): it reads on.
  void OnBodyGranted() noexcept {
    Guard([&] {
      if (closed_ || !body_waiting_) return;
      body_waiting_ = false;
      if (Clock::now() >= body_deadline_) {  // its timer has yet to run: no reading meanwhile
        body_deadline_ = kNever;
        return Reject(408, "408: Request Timeout");
      }
      ReserveBody();
      ParseBuffered();
    });
  }

  const tcp::endpoint& peer() const { return peer_; }

 private:
  // Runs `f` as the body of a completion handler: nothing may escape into io_context::run().
  template <class F>
  void Guard(F&& f) {
    try {
      f();
    } catch (...) {
      Close();
    }
  }

  // Admission states (admission.h). Wait and Drain make the connection evictable, so the Core
  // re-checks for room.
  void AdmitWaiting() noexcept {
    core_->admission.Wait(id_, Clock::now());
    core_->ResumeGranted();
    core_->Accept();
  }
  void AdmitBusy() noexcept {
    body_waiting_ = false;
    core_->admission.Busy(id_);
    core_->ResumeGranted();
  }
  void AdmitDraining() noexcept {
    body_waiting_ = false;
    core_->admission.Drain(id_, Clock::now());
    core_->ResumeGranted();
    core_->Accept();
  }

  void Leave() noexcept {
    if (registered_) {
      registered_ = false;
      core_->Unregister(id_);
    }
  }

  // The header is complete and the body is not: starts the body deadline and asks the body
  // budget for the body's length (chunked: body_limit). Without a grant, reading pauses until
  // Core::ResumeGranted() calls OnBodyGranted(); the deadline runs meanwhile.
  void StartBody() {
    body_started_ = true;
    if (core_->options.body_timeout.count() > 0) {
      body_deadline_ = Clock::now() + core_->options.body_timeout;
      if (body_deadline_ < timer_expiry_) ArmTimer();
    }
    const boost::optional<std::uint64_t> length = parser_->content_length();
    body_asked_ = length ? static_cast<size_t>(*length) : core_->options.body_limit;
    body_known_ = static_cast<bool>(length);
    const bool granted = core_->admission.AskBody(id_, body_asked_);
    body_waiting_ = !granted;
    if (granted) ReserveBody();
    core_->ResumeGranted();  // asking may have granted others (it releases this one's charge)
  }

  void ReserveBody() {
    if (body_known_) request_.body.reserve(body_asked_);  // within body_limit
  }

  void NextRequest() {
    request_.method.clear();
    request_.target.clear();
    // Keep the header nodes, unless large, for the next request (clients send the same fields
    // each time).
    while (!request_.headers.empty() && spare_headers_.size() < kSpareHeaders) {
      auto node = request_.headers.extract(request_.headers.begin());
      if (node.key().capacity() <= kSpareHeaderBytes &&
          node.mapped().capacity() <= kSpareHeaderBytes) {
        spare_headers_.push_back(std::move(node));
      }
    }
    request_.headers.clear();
    request_.body.clear();
    if (request_.body.capacity() > kKeepBytes) std::string().swap(request_.body);
    if (buffer_.size() == 0 && buffer_.capacity() > kKeepBytes) buffer_.shrink_to_fit();
    parser_.emplace(request_, spare_headers_);
    parser_->eager(true);
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(core_->options.body_limit);
    continue_sent_ = false;
    header_started_ = false;  // the deadline starts with the request's first byte
    header_deadline_ = kNever;
    body_started_ = false;
    body_waiting_ = false;
    body_deadline_ = kNever;
    AdmitWaiting();
  }

  // Starts the header deadline of a later request (its first byte has arrived).
  void StartHeaderClock() {
    header_started_ = true;
    if (core_->options.header_timeout.count() == 0) return;
    header_deadline_ = Clock::now() + core_->options.header_timeout;
    if (header_deadline_ < timer_expiry_) ArmTimer();
  }

  void ParseBuffered() {
    for (;;) {
      if (buffer_.size() > 0) {
        if (!header_started_) StartHeaderClock();
        error_code ec;
        size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec && ec != bhttp::error::need_more) return ParseError(ec);
        if (!body_started_ && parser_->is_header_done()) {
          header_deadline_ = kNever;
          if (!parser_->is_done()) StartBody();
        }
        // After the header, only a chunk-size line or the trailer section stays unconsumed.
        if (ec && parser_->is_header_done() && buffer_.size() > kChunkLineLimit) {
          return Reject(431, "431: Request Header Fields Too Large");
        }
        if (!ec && parser_->is_done()) {
          if (!HandleRequest()) return;  // the reply is still being written, or closing
          // The reply went out at once and the next request has begun.
          if (buffer_.size() > 0) return PostParse();  // pipelined: after other handlers
          continue;
        }
        if (!ec && used > 0 && buffer_.size() > 0) continue;
      }
      if (body_waiting_) return;  // OnBodyGranted() reads on
      if (parser_->is_header_done() && parser_->expects_continue() && !continue_sent_ &&
          parser_->version() >= 11) {
        continue_sent_ = true;
        return WriteContinue();
      }
      return Read();
    }
  }

  // ParseBuffered() from a fresh handler, as after an asynchronous write.
  void PostParse() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      self->Guard([&] {
        if (!self->closed_ && !self->draining_) self->ParseBuffered();
      });
    });
  }

  void Read() {
    reading_ = true;
    socket_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](const error_code& ec, size_t n) {
                              self->Guard([&] { self->OnRead(ec, n); });
                            });
  }

  void OnRead(const error_code& ec, size_t n) {
    reading_ = false;
    if (closed_) return;
    last_activity_ = Clock::now();
    if (ec) return Close();  // EOF or error; a partial request gets no reply
    buffer_.commit(n);
    if (draining_) {
      buffer_.consume(buffer_.size());
      return Read();
    }
    ParseBuffered();
  }

  void ParseError(const error_code& ec) {
    if (ec == bhttp::error::body_limit) return Reject(413, "413: Request Entity Too Large");
    if (ec == bhttp::error::header_limit) {
      return Reject(431, "431: Request Header Fields Too Large");
    }
    if (parser_->unsupported_coding()) return Reject(501, "501: Not Implemented");
    Reject(400, "400: Bad Request");
  }

  // Answers a request the handler never sees with `status` (text/plain `body`), then closes.
  void Reject(int status, std::string body) {
    header_deadline_ = kNever;
    body_deadline_ = kNever;
    AdmitBusy();
    if (core_->options.on_rejected) {
      core_->options.on_rejected(status, request_.target);  // "" until the request line is read
    }
    Reply(TextResponse(status, std::move(body)), /*keep_alive=*/false);
  }

  // Answers the parsed request. True when the reply is already written and the next request
  // has begun (see Reply()).
  bool HandleRequest() {
    if (core_->stopped) {
      Close();
      return false;
    }
    body_deadline_ = kNever;
    AdmitBusy();
    bool keep_alive = parser_->keep_alive();
    HttpResponse response = [&] {
      try {
        return core_->handler(request_);
      } catch (...) {
        return TextResponse(500, "500: Internal Server Error");
      }
    }();
    if (closed_) return false;  // the handler stopped the server
    return Reply(std::move(response), keep_alive);
  }

  // Sends the reply. True when it was written at once and the next request has begun: the
  // caller continues with ParseBuffered(). Otherwise the write completes later (then parsing
  // resumes from its handler) or the connection is closing.
  bool Reply(HttpResponse response, bool keep_alive) {
    response_ = std::move(response);
    if (response_.status < 200 || response_.status > 999) {
      response_ = TextResponse(500, "500: Internal Server Error");
    }
    const int version = parser_ ? parser_->version() : 11;
    const bool head_only = request_.method == "HEAD";

    head_.assign(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    AppendNumber(head_, static_cast<uint64_t>(response_.status));
    head_ += ' ';
    std::string_view reason = bhttp::obsolete_reason(static_cast<bhttp::status>(response_.status));
    if (reason != "<unknown-status>") head_ += reason;
    head_ += "\r\n";
    if (!response_.content_type.empty() && !HasLineBreak(response_.content_type)) {
      head_ += "Content-Type: ";
      head_ += response_.content_type;
      head_ += "\r\n";
    }
    for (const auto& [name, value] : response_.headers) {
      if (name.empty() || HasLineBreak(name) || HasLineBreak(value) ||
          EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding")) {
        continue;
      }
      if (EqualsIgnoreCase(name, "connection")) {
        if (ContainsIgnoreCase(value, "close")) keep_alive = false;
        continue;
      }
      head_ += name;
      head_ += ": ";
      head_ += value;
      head_ += "\r\n";
    }
    head_ += "Content-Length: ";
    AppendNumber(head_, response_.body.size());
    head_ += "\r\n";
    if (!keep_alive) {
      head_ += "Connection: close\r\n";
    } else if (version == 10) {
      head_ += "Connection: keep-alive\r\n";
    }
    head_ += "\r\n";

    close_after_write_ = !keep_alive;
    std::array<net::const_buffer, 2> buffers{
        net::buffer(head_), head_only ? net::const_buffer() : net::buffer(response_.body)};
    // One non-blocking send first: a reply nearly always fits the socket buffer, and then no
    // write operation, completion handler or reactor round trip is needed.
    error_code write_ec;
    size_t sent = 0;
    if (non_blocking_) {
      sent = socket_.write_some(buffers, write_ec);
      if (write_ec == net::error::would_block || write_ec == net::error::try_again) {
        write_ec = {};
        sent = 0;
      }
      if (write_ec || sent == net::buffer_size(buffers)) return AfterWrite(write_ec);
    }
    if (sent < head_.size()) {
      buffers[0] += sent;
    } else {
      buffers[1] += sent - head_.size();
      buffers[0] = net::const_buffer();
    }
    net::async_write(socket_, buffers, [self = shared_from_this()](const error_code& ec, size_t) {
      self->Guard([&] {
        if (self->closed_) return;
        if (self->AfterWrite(ec)) self->ParseBuffered();
      });
    });
    return false;
  }

  // The reply is written (or failed). True when the connection goes on with the next request,
  // already begun, and the caller is to call ParseBuffered().
  bool AfterWrite(const error_code& ec) {
    last_activity_ = Clock::now();
    if (ec) {
      Close();
      return false;
    }
    if (response_.body.capacity() > kKeepBytes) std::string().swap(response_.body);
    if (close_after_write_) {
      Drain();
      return false;
    }
    NextRequest();
    return true;
  }

  void WriteContinue() {
    net::async_write(socket_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = shared_from_this()](const error_code& ec, size_t) {
                       self->Guard([&] {
                         if (self->closed_) return;
                         self->last_activity_ = Clock::now();
                         if (ec) return self->Close();
                         self->Read();
                       });
                     });
  }

  // Half-closes and discards input until the client closes or kDrainTime passes, so that unread
  // request bytes do not turn the close into a reset that would destroy the final reply.
  void Drain() {
    AdmitDraining();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    draining_ = true;
    drain_deadline_ = Clock::now() + kDrainTime;
    if (idle_.count() > 0) drain_deadline_ = std::min(drain_deadline_, last_activity_ + idle_);
    ArmTimer();
    // After a 408 a read is still pending; its completion drains (OnRead).
    if (reading_) return;
    buffer_.consume(buffer_.size());
    Read();
  }

  // The earliest of the idle, header, body and drain deadlines that apply, or kNever.
  Clock::time_point Deadline() const {
    if (draining_) return drain_deadline_;
    Clock::time_point d = std::min(header_deadline_, body_deadline_);
    if (idle_.count() > 0) d = std::min(d, last_activity_ + idle_);
    return d;
  }

  // One wait is pending at a time (at timer_expiry_); it re-arms itself until the deadline has
  // really passed. It never waits longer than header_timeout, so that a header deadline
  // starting later (StartHeaderClock()) is never earlier than the pending wait: no re-arm per
  // request.
  void ArmTimer() {
    Clock::time_point deadline = Deadline();
    const std::chrono::seconds header_timeout = core_->options.header_timeout;
    if (!draining_ && header_timeout.count() > 0) {
      deadline = std::min(deadline, Clock::now() + header_timeout);
    }
    timer_expiry_ = deadline;
    if (deadline == kNever) return;
    timer_.expires_at(deadline);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      self->Guard([&] {
        if (ec || self->closed_) return;
        const Clock::time_point now = Clock::now();
        if (now < self->Deadline()) return self->ArmTimer();
        self->timer_expiry_ = kNever;
        if (!self->draining_ && now >= self->header_deadline_) {
          self->header_deadline_ = kNever;
          return self->Reject(408, "408: Request Timeout");
        }
        if (!self->draining_ && now >= self->body_deadline_) {
          self->body_deadline_ = kNever;
          return self->Reject(408, "408: Request Timeout");
        }
        self->Close();
      });
    });
  }

  std::shared_ptr<HttpServer::Core> core_;
  tcp::socket socket_;
  net::steady_timer timer_;
  const std::chrono::seconds idle_;
  const tcp::endpoint peer_;
  Admission::Id id_ = 0;
  boost::beast::flat_buffer buffer_;
  HttpRequest request_;
  std::vector<HeaderMap::node_type> spare_headers_;
  std::optional<RequestParser> parser_;
  HttpResponse response_;
  std::string head_;
  Clock::time_point last_activity_;
  Clock::time_point drain_deadline_;
  Clock::time_point header_deadline_ = kNever;
  Clock::time_point body_deadline_ = kNever;
  size_t body_asked_ = 0;  // the body's length (chunked: body_limit), as asked of the budget
  Clock::time_point timer_expiry_ = kNever;  // of the pending timer wait, kNever if none
  bool registered_ = false;
  bool closed_ = false;
  bool non_blocking_ = false;  // the socket is in non-blocking mode (see Reply())
  bool reading_ = false;       // an async_read_some is pending
  bool header_started_ = false;
  bool body_started_ = false;  // the header is complete: the body (if any) is being read
  bool body_known_ = false;    // body_asked_ is the Content-Length
  bool body_waiting_ = false;  // for the body budget's grant: nothing is read meanwhile
  bool draining_ = false;
  bool continue_sent_ = false;
  bool close_after_write_ = false;
};

}  // namespace

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kEvicted:
      return "evicted";
    case DropReason::kNoRoom:
      return "no room";
  }
  return "unknown";
}

void HttpServer::Core::Accept() noexcept {
  if (stopped || accepting || admitting) return;
  const Clock::time_point at = admission.RoomAt();
  if (at == kNever) return;  // resumes when a connection closes or becomes evictable
  if (at != Clock::time_point::min() && Clock::now() < at) return ArmRoomTimer(at);
  if (parked) {  // there is room for it now
    tcp::socket socket = std::move(*parked);
    parked.reset();
    admitting = true;
    try {
      Admit(std::move(socket));
    } catch (...) {
      // Out of memory while setting up the connection: it is dropped.
    }
    admitting = false;
    if (parked) return;
  }
  try {
    StartAccept();
  } catch (...) {
    // Could not queue the accept (out of memory): retry after the back-off.
    accepting = false;
    try {
      backoff.expires_after(kAcceptBackoff);
      backoff.async_wait([self = shared_from_this()](const error_code& ec) {
        if (!ec) self->Accept();
      });
    } catch (...) {
    }
  }
}

void HttpServer::Core::ResumeGranted() noexcept {
  if (resuming || stopped) return;  // the outer call takes the grants this one would
  resuming = true;
  for (Admission::Id id; (id = admission.PopGranted()) != 0;) {
    auto it = connections.find(id);
    if (it != connections.end()) it->second->OnBodyGranted();
  }
  resuming = false;
}

void HttpServer::Core::ArmRoomTimer(Clock::time_point at) noexcept {
  if (room_timer_at <= at) return;  // a wait for an earlier time is pending
  try {
    room_timer.expires_at(at);
    room_timer_at = at;
    room_timer.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec) return;  // cancelled, or replaced by an earlier wait
      self->room_timer_at = kNever;
      self->Accept();
    });
  } catch (...) {
    // Out of memory: accepting resumes at the next close or phase change instead.
    room_timer_at = kNever;
  }
}

void HttpServer::Core::Drop(DropReason reason, const tcp::endpoint& peer) noexcept {
  if (!options.on_dropped) return;
  try {
    options.on_dropped(reason, EndpointText(peer.address().to_string(), peer.port()));
  } catch (...) {
  }
}

void HttpServer::Core::StartAccept() {
  accepting = true;
  acceptor.async_accept([self = shared_from_this()](const error_code& ec, tcp::socket socket) {
    try {
      self->OnAccept(ec, std::move(socket));
    } catch (...) {
      // Out of memory while setting up a connection: drop it and keep accepting.
      self->accepting = false;
      self->admitting = false;
      self->Accept();
    }
  });
}

void HttpServer::Core::OnAccept(const error_code& ec, tcp::socket socket) {
  accepting = false;
  if (stopped) return;
  if (ec == net::error::operation_aborted) return;
  if (ec && ec != net::error::connection_aborted) {
    // e.g. EMFILE: retrying at once would spin.
    backoff.expires_after(kAcceptBackoff);
    backoff.async_wait([self = shared_from_this()](const error_code& wait_ec) {
      if (!wait_ec) self->Accept();
    });
    return;
  }
  if (!ec) {
    admitting = true;
    Admit(std::move(socket));
    admitting = false;
  }
  Accept();
}

void HttpServer::Core::Admit(tcp::socket socket) {
  // A dropped socket closes as it goes out of scope, unread.
  error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  const Admission::Room room = admission.MakeRoom(Clock::now());
  if (!room.admit) {
    // Accepted while the pending accept could not know: it waits, unread, for room, and no
    // other connection is accepted meanwhile.
    if (parked) return Drop(DropReason::kNoRoom, peer);
    parked.emplace(std::move(socket));
    return;
  }
  if (room.evict != 0) {
    Connection* victim = connections.at(room.evict);
    Drop(DropReason::kEvicted, victim->peer());
    victim->Close();
  }
  socket.set_option(tcp::no_delay(true), ec);
  std::make_shared<Connection>(shared_from_this(), std::move(socket), peer)->Start();
}

void HttpServer::Core::Stop() noexcept {
  if (stopped) return;
  stopped = true;
  error_code ignored;
  acceptor.close(ignored);
  parked.reset();
  try {
    backoff.cancel();
    room_timer.cancel();
  } catch (...) {
  }
  while (!connections.empty()) connections.begin()->second->Close();  // Close() unregisters
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(boost::asio::io_context& io,
                                                      HttpServerOptions options,
                                                      HttpHandler handler) {
  const std::string where = "listen " + EndpointText(options.address, options.port);
  try {
    if (!handler) return Result<std::unique_ptr<HttpServer>>::Error(where + ": no handler");
    error_code ec;
    net::ip::address address = net::ip::make_address(options.address, ec);
    if (ec) return Result<std::unique_ptr<HttpServer>>::Error(where + ": invalid address");
    const tcp::endpoint endpoint(address, options.port);

    auto core = std::make_shared<Core>(io, std::move(options), std::move(handler));
    tcp::acceptor& acceptor = core->acceptor;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
    tcp::endpoint bound;
    if (!ec) bound = acceptor.local_endpoint(ec);
    if (!ec) {
      core->Accept();
      return std::unique_ptr<HttpServer>(new HttpServer(std::move(core), bound.port()));
    }
    return Result<std::unique_ptr<HttpServer>>::Error(where + ": " + ec.message());
  } catch (const std::exception& e) {
    return Result<std::unique_ptr<HttpServer>>::Error(where + ": " + e.what());
  } catch (...) {
    return Result<std::unique_ptr<HttpServer>>::Error(where + ": unknown error");
  }
}

HttpServer::~HttpServer() { Stop(); }

HttpServer::Stats HttpServer::stats() const {
  Stats st;
  st.connections = core_->admission.open();
  st.body_bytes = core_->admission.buffered_body_bytes();
  st.peak_body_bytes = core_->admission.peak_body_bytes();
  st.bodies_waiting = core_->admission.body_queue();
  return st;
}

void HttpServer::Stop() {
  if (core_) core_->Stop();
}

}  // namespace sedna::http
