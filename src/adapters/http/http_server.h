// A small HTTP/1.1 server (Boost.Beast parser, Asio sockets) that runs on the caller's
// io_context. The Beast types stay in http_server.cc; this header exposes none.
#pragma once

#include <utility>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace sedna::http {

struct HttpRequest {
  std::string method;  // as received, case preserved ("POST")
  std::string target;  // request-target as received, query string included
  // Field names lower-cased; repeated fields are joined with ", " in arrival order.
  std::map<std::string, std::string> headers;
  std::string body;  // de-chunked
};

struct HttpResponse {
  int status = 200;  // a final status, 200..999; anything else is answered as 500
  std::string content_type = "application/json";  // omitted from the reply when empty
  std::string body;
  // Extra fields. Content-Length and Transfer-Encoding are ignored (the server always sends its
  // own Content-Length); `Connection` is not copied, but a value containing "close" makes the
  // server close the connection after this reply. Fields with CR or LF are dropped.
  std::vector<std::pair<std::string, std::string>> headers;
};

// Called on the io_context's thread once per complete request, in arrival order per connection.
// It must not throw; if it does anyway, the client gets 500 `500: Internal Server Error`
// (text/plain) and the connection stays usable. It may call HttpServer::Stop() or destroy the
// server; the current request then gets no reply.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string address = "0.0.0.0";        // numeric IPv4 or IPv6 address
  uint16_t port = 0;                      // 0 picks a free port; see HttpServer::port()
  size_t body_limit = 1 << 20;            // larger bodies get 413 and the connection is closed
  std::chrono::seconds idle_timeout{60};  // no bytes moving for this long closes; 0 = never
  size_t max_connections = 256;           // accepting pauses while this many are open; 0 = no limit
  // Called (on the io thread) when the server itself rejects a request it could not hand to the
  // handler (413, 431, 400, 501): status, the request target when its header was read (""
  // otherwise).
  std::function<void(int status, const std::string& target)> on_rejected;
};

// Behaviour on the wire:
//  * keep-alive by default for HTTP/1.1; `Connection: close` and HTTP/1.0 (without
//    `Connection: keep-alive`) get one reply carrying `Connection: close`, then the server closes;
//  * pipelined requests are answered one at a time, in order;
//  * every reply carries Content-Length (no body is written for HEAD);
//  * `Expect: 100-continue` is answered with `100 Continue` before the body is read;
//  * body over body_limit: 413 `413: Request Entity Too Large`; header over 64 KiB: 431;
//    unparsable request: 400 `400: Bad Request`; all text/plain, each followed by a close;
//  * Transfer-Encoding other than exactly `chunked` (`gzip, chunked`, `identity`, anything
//    unknown, parameters): 501 `501: Not Implemented` and a close; Transfer-Encoding twice, or
//    with Content-Length: 400;
//  * a chunk-size line or a trailer section over 8 KiB: 431 and a close; trailer fields are read
//    and discarded (never merged into HttpRequest::headers);
//  * a closing connection is half-closed and drained for up to 500 ms, so the client reads the
//    final reply instead of a reset.
//
// Threading: Start() may be called from any thread. Stop() and the destructor must run on the
// io_context's thread, or while no thread runs the io_context. The io_context must outlive the
// server.
class HttpServer {
 public:
  // Binds and listens (SO_REUSEADDR), then accepts on `io`. Errors name the endpoint and the
  // reason, e.g. "listen 0.0.0.0:9100: Address already in use".
  static Result<std::unique_ptr<HttpServer>> Start(boost::asio::io_context& io,
                                                   HttpServerOptions options, HttpHandler handler);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();  // Stop()

  // The bound port (the chosen one when options.port was 0). Safe from any thread.
  uint16_t port() const { return port_; }

  // Closes the listening socket and every open connection at once; the handler is not called
  // again. Idempotent.
  void Stop();

  struct Core;  // implementation detail, defined in http_server.cc

 private:
  HttpServer(std::shared_ptr<Core> core, uint16_t port) : core_(std::move(core)), port_(port) {}

  std::shared_ptr<Core> core_;
  uint16_t port_ = 0;
};

}  // namespace sedna::http
