// The worker API's HTTP/1.1 request parsing (http::HttpServer: Beast's parser plus the server's
// own limits, chunking, pipelining and rejections) on arbitrary bytes sent by one client.
//
// The parser lives inside the server's connection, so the harness drives the real server: one
// HttpServer on 127.0.0.1 for the whole run, and per input one loopback connection that writes
// the input, half-closes, and reads until the server closes. The client runs on the same
// io_context and thread as the server, so one input is one run of the loop with no timing
// involved (a few thousand inputs a second).
//
// Invariants: the server closes every connection once the client has half-closed (within 5 s);
// what it sends back is a sequence of well-formed replies (HTTP/1.x status line, Content-Length),
// 100 Continue or the handler's 200 until at most one final rejection (400, 413, 431 or 501,
// each reported to on_rejected) after which nothing follows; one 200 per handler call; the
// handler only sees requests within the limits (lower-case field names, body within body_limit,
// no transfer-coding but chunked); no connection of an earlier input is still open.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "adapters/http/http_server.h"
#include "fuzz_check.h"

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using sedna::http::HttpRequest;
using sedna::http::HttpResponse;

constexpr size_t kBodyLimit = 2048;

struct Counts {
  int handled = 0;
  int rejected = 0;
  int dropped = 0;
};

bool IsLowerName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
  }
  return true;
}

HttpResponse Handle(const HttpRequest& req, Counts& counts) {
  ++counts.handled;
  FUZZ_CHECK(!req.method.empty(), "empty method");
  FUZZ_CHECK(!req.target.empty(), "empty target");
  FUZZ_CHECK(req.body.size() <= kBodyLimit, "body over the limit");
  for (const auto& [name, value] : req.headers) FUZZ_CHECK(IsLowerName(name), name);
  if (auto te = req.headers.find("transfer-encoding"); te != req.headers.end()) {
    // Exactly one field, `chunked` in any case, optional whitespace around (Beast trims it).
    std::string v = te->second;
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
    for (char& c : v) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    FUZZ_CHECK(v == "chunked", te->second);
  }
  HttpResponse r;
  r.content_type.clear();
  return r;  // 200, empty body: every 200 has Content-Length 0, also for HEAD
}

struct Harness {
  net::io_context io;
  Counts counts;
  std::unique_ptr<sedna::http::HttpServer> server;

  Harness() {
    sedna::http::HttpServerOptions options;
    options.address = "127.0.0.1";
    options.body_limit = kBodyLimit;
    options.on_rejected = [this](int, const std::string&) { ++counts.rejected; };
    options.on_dropped = [this](sedna::http::DropReason, const std::string&) { ++counts.dropped; };
    auto s = sedna::http::HttpServer::Start(
        io, std::move(options), [this](const HttpRequest& r) { return Handle(r, counts); });
    FUZZ_CHECK(s.ok(), s.message());
    server = std::move(*s);
  }
};

// Content-Length of a reply header (without its status line), -1 when absent.
long ContentLength(std::string_view head) {
  size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string_view::npos) {
    pos += 2;
    std::string_view line = head.substr(pos, head.find("\r\n", pos) - pos);
    if (line.size() > 16 &&
        (line.substr(0, 16) == "Content-Length: " || line.substr(0, 16) == "content-length: ")) {
      return std::strtol(std::string(line.substr(16)).c_str(), nullptr, 10);
    }
  }
  return -1;
}

// Checks the byte stream the server sent; returns the number of 200 replies and rejections.
void CheckReplies(std::string_view out, int* ok_replies, int* rejections) {
  while (!out.empty()) {
    size_t end = out.find("\r\n\r\n");
    FUZZ_CHECK(end != std::string_view::npos, out);
    std::string_view head = out.substr(0, end);
    out.remove_prefix(end + 4);
    FUZZ_CHECK(head.size() >= 12 && head.substr(0, 7) == "HTTP/1." && head[8] == ' ', head);
    const int status = std::atoi(std::string(head.substr(9, 3)).c_str());
    if (status == 100) continue;
    const long length = ContentLength(head);
    FUZZ_CHECK(length >= 0, head);
    if (status == 200) {
      FUZZ_CHECK(length == 0, head);
      ++*ok_replies;
      continue;
    }
    FUZZ_CHECK(status == 400 || status == 413 || status == 431 || status == 501, head);
    ++*rejections;
    // The body is left out for HEAD; nothing follows a rejection.
    FUZZ_CHECK(out.empty() || out.size() == static_cast<size_t>(length), head);
    return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness();  // lives for the whole run
  const Counts before = h->counts;

  tcp::socket client(h->io);
  std::string input(reinterpret_cast<const char*>(data), size);
  std::string received;
  bool done = false;
  // All asynchronous, on the server's loop (a blocking connect would also see EINTR from
  // libFuzzer's timer signal). Written and read concurrently, so that a server that answers
  // before the whole input is in does not deadlock the exchange.
  client.async_connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), h->server->port()),
                       [&](boost::system::error_code ec) {
                         FUZZ_CHECK(!ec, ec.message());
                         net::async_write(client, net::buffer(input),
                                          [&](boost::system::error_code ec, size_t) {
                                            boost::system::error_code ignored;
                                            if (!ec)
                                              client.shutdown(tcp::socket::shutdown_send, ignored);
                                          });
                         net::async_read(client, net::dynamic_buffer(received),
                                         [&](boost::system::error_code, size_t) { done = true; });
                       });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done) {
    h->io.run_one_until(deadline);
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline,
               "the server kept the connection open after the client's EOF");
  }
  client.close();
  h->io.poll();  // the server's side of the close

  int ok_replies = 0, rejections = 0;
  CheckReplies(received, &ok_replies, &rejections);
  FUZZ_CHECK(ok_replies == h->counts.handled - before.handled, received);
  FUZZ_CHECK(rejections == h->counts.rejected - before.rejected, received);
  FUZZ_CHECK(h->counts.dropped == before.dropped, "a connection was dropped");
  return 0;
}
