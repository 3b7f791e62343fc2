// A small HTTP/1.1 server (Boost.Beast parser, Asio sockets) that runs on the caller's
// io_context. No Asio socket or Beast type appears here: the parser is request_reader.cc, the
// connection connection.cc, the accept loop http_server.cc.
#pragma once

#include <utility>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
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

// Why the server closed a connection on its own before any request on it was answered.
enum class DropReason {
  kEvicted,  // closed to make room for a new connection (see "Behaviour on the wire")
  kNoRoom,   // accepted at max_connections with nothing evictable while another such waits
};
inline constexpr int kDropReasons = 2;
std::string_view DropReasonName(DropReason reason);  // "evicted", "no room"

struct HttpServerOptions {
  std::string address = "0.0.0.0";        // numeric IPv4 or IPv6 address
  uint16_t port = 0;                      // 0 picks a free port; see HttpServer::port()
  size_t body_limit = 1 << 20;            // larger bodies get 413 and the connection is closed
  std::chrono::seconds idle_timeout{60};  // no bytes moving for this long closes; 0 = never
  // At most this many connections are open; see "Behaviour on the wire" for what happens to
  // the next one. 0 = no limit.
  size_t max_connections = 256;
  // A whole request header must arrive within this time, counted from accept for a
  // connection's first request and from the first byte of each later one; past it the client
  // gets 408 and the connection is closed. 0 = no deadline.
  std::chrono::seconds header_timeout{10};
  // A request body must be complete within this time after its header, however steadily it
  // arrives and however long it waited for the body budget; past it the client gets 408 and
  // the connection is closed. 0 = no deadline.
  std::chrono::seconds body_timeout{10};
  // Bytes of incomplete request bodies buffered at once across all connections, as the bodies'
  // lengths (chunked: body_limit each); bodies of at most 16 KiB are not counted (each
  // connection may hold that much). A body that does not fit waits, unread, first come first
  // served, until others finish. Raised to body_limit when lower.
  size_t body_buffer_limit = size_t{32} << 20;
  // At max_connections, a connection waiting for its request becomes evictable once it has
  // waited this long (see "Behaviour on the wire"). 0: at once, so that a flood of new
  // connections cannot slow accepting down to max_connections per grace period.
  std::chrono::milliseconds eviction_grace{0};
  // Called (on the io thread) when the server itself rejects a request it could not hand to the
  // handler (413, 431, 400, 408, 501): status, the request target when its request line was read
  // ("" otherwise).
  std::function<void(int status, const std::string& target)> on_rejected;
  // Called (on the io thread) when the server closes a connection without a reply (DropReason),
  // with the peer as "address:port". Under attack this may run thousands of times a second: a
  // caller that logs should rate-limit.
  std::function<void(DropReason reason, const std::string& peer)> on_dropped;
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
//  * header deadline (header_timeout): a request header still incomplete that long after accept
//    (first request) or after its first byte (later requests) gets 408 `408: Request Timeout`
//    and a close, however steadily its bytes trickle in;
//  * body deadline (body_timeout): a body still incomplete that long after its header gets 408
//    `408: Request Timeout` and a close;
//  * body budget (body_buffer_limit): a body over 16 KiB is read only once its length fits the
//    budget; until then its socket is not read (the client's bytes wait in the kernel) and no
//    `100 Continue` is sent. The bytes are the lengths of the bodies being read, so every body
//    admitted can complete;
//  * no limit per peer address: all of a node's workers post from one address;
//  * the first read of a new connection is tried at once, so a request sent with the connect
//    (a worker's report) is complete, and safe from eviction, as soon as it is accepted;
//  * room for new connections: at max_connections the server keeps accepting as long as it can
//    evict someone, closing (no reply; on_dropped kEvicted) for each new connection
//      1. a connection closing after its final reply (the one closing longest), else
//      2. the connection that has waited longest for its request to be complete, whatever its
//         peer (from accept, or from the end of its previous reply: idle keep-alive connections
//         wait too; a body waiting for the budget too), provided for at least eviction_grace.
//    A connection whose request is in the handler or whose reply is being written is never
//    evicted. While nothing is evictable, accepting pauses (new connections wait in the listen
//    backlog) until a connection closes or becomes evictable. A connection already accepted when
//    nothing is evictable (the accept was pending) waits, unread, until there is room; so does
//    the accept loop meanwhile (on_dropped kNoRoom would close a second such one);
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

  // Gauges of the admission policy; call on the io_context's thread.
  struct Stats {
    size_t connections = 0;      // open
    size_t body_bytes = 0;       // charged to the body budget now (see body_buffer_limit)
    size_t peak_body_bytes = 0;  // the most ever charged at once
    size_t bodies_waiting = 0;   // bodies waiting for the budget, unread
  };
  Stats stats() const;

  // Closes the listening socket and every open connection at once; the handler is not called
  // again. Idempotent.
  void Stop();

  struct Core;  // implementation detail, defined in server_core.h

 private:
  HttpServer(std::shared_ptr<Core> core, uint16_t port) : core_(std::move(core)), port_(port) {}

  std::shared_ptr<Core> core_;
  uint16_t port_ = 0;
};

}  // namespace sedna::http
