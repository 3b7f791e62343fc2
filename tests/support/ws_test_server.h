// A websocket server on 127.0.0.1 for tests that emulate Sedna's GM. It runs its own io_context on
// its own thread; the public methods are thread-safe (none may be called from on_frame except Send,
// DropConnection, CloseConnection and SetUnresponsive) and the Wait* methods block on a condition
// variable for at most their timeout.
//
// It frames RFC 6455 with the LC's byte-level codec (adapters/gm/ws_wire.h), not through Beast's
// stream, so that it can stop reading a connection entirely: pings then go unanswered while TCP
// stays open, like a half-open or hung peer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sedna::testing {

class WsTestServer {
 public:
  // Listens on 127.0.0.1:port (0 = ephemeral). nullptr when the port cannot be bound.
  static std::unique_ptr<WsTestServer> Start(uint16_t port = 0);
  ~WsTestServer();  // Stop()s.
  WsTestServer(const WsTestServer&) = delete;
  WsTestServer& operator=(const WsTestServer&) = delete;

  uint16_t port() const;
  std::string address() const;  // "127.0.0.1:<port>"

  // True when a websocket connection was accepted since the previous call (or since Start).
  bool WaitForConnection(std::chrono::milliseconds timeout);
  // Of the last accepted connection's upgrade request.
  std::string last_node_name() const;                     // its Node-Name header
  std::string last_request_target() const;                // e.g. "/"
  std::vector<std::string> last_request_headers() const;  // "Name: value", as received

  // The next data frame received on any connection, FIFO; nullopt after timeout.
  std::optional<std::string> WaitForFrame(std::chrono::milliseconds timeout);
  // The same queue, with where and when each frame came from.
  struct Frame {
    std::string text;
    std::string node;  // the Node-Name header of the connection it came on
    std::chrono::steady_clock::time_point received;
  };
  std::optional<Frame> WaitForNodeFrame(std::chrono::milliseconds timeout);

  // Multi-node mode (off by default; set it before clients connect): a new connection replaces
  // only the open connection with the same Node-Name, as the GM's per-node client map does, so
  // several LCs stay connected at once. Off: every new connection replaces the current one.
  void SetMultiNode(bool multi_node);
  // Queues a text frame to the open connection whose Node-Name is `node` (the newest such one).
  // False when there is none.
  bool SendTo(const std::string& node, const std::string& text);
  // True once a connection with Node-Name `node` is open (now or within the timeout).
  bool WaitForNode(const std::string& node, std::chrono::milliseconds timeout);
  // True once no connection with Node-Name `node` is open (now or within the timeout).
  bool WaitForNodeGone(const std::string& node, std::chrono::milliseconds timeout);
  // Closes the TCP socket of the connection of `node` without a close frame.
  void DropNode(const std::string& node);
  std::vector<std::string> connected_nodes() const;  // Node-Names of open connections, sorted
  // Queues a text frame to the current (last accepted, still open) connection; frames are written
  // in call order. False when there is none.
  bool Send(const std::string& text);
  // Closes the current connection's TCP socket without a close frame.
  void DropConnection();
  // Sends a close frame with `code` and `reason` on the current connection, then closes its TCP
  // socket once written (without waiting for the client's close). May be called from on_frame.
  void CloseConnection(uint16_t code, const std::string& reason);
  // While true, no connection's socket is read after its handshake: frames and pings stay in the
  // kernel buffers unanswered, TCP stays open. false resumes reading.
  void SetUnresponsive(bool unresponsive);
  // True when at least `count` pings were received in total.
  bool WaitForPings(int count, std::chrono::milliseconds timeout);
  int connection_count() const;  // websocket connections accepted so far
  // Closes everything and joins the server thread. Idempotent; not from on_frame.
  void Stop();

  // Optional: called on the server thread for each data frame, before WaitForFrame can return it.
  // Assign it before a client connects.
  std::function<void(const std::string&)> on_frame;

 private:
  WsTestServer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sedna::testing
