// A TCP proxy on 127.0.0.1 that injects network faults between a client and a server on
// 127.0.0.1:<upstream port> (used with MotoServer, see moto_server.h). Each accepted connection is
// handled by its own thread per a Plan (relay, cut after N bytes, canned answers); on top of that
// the test can, at any time and from any thread (including an on_relay hook):
//   - DropConnections(): close every connection open right now (both sides, no answer);
//   - SetMode(kRefuse): close the listening socket, so new connections are refused
//     (ECONNREFUSED), then reopen it on the same port when the mode goes back to kNormal;
//   - SetMode(kBlackhole): accept new connections but never read or answer them (a hung peer;
//     the client only gets out by its own timeout). They are closed when the mode changes;
//   - SetModeFor(mode, d): the same, back to kNormal by itself after d.
// Counters and the request log cover every connection since construction.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sedna::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
int FreeLoopbackPort();

// connect(2) to 127.0.0.1:port; the socket, or -1.
int ConnectLoopback(int port);

class FaultProxy {
 public:
  struct Plan {
    enum Kind { kRelay, kCutAfter, kCanned, kCannedKeepAlive } kind = kRelay;
    size_t cut_after = 0;  // kCutAfter: server->client bytes forwarded before closing both sides
    // kCanned: sent after the request head, then the connection is closed. kCannedKeepAlive: sent
    // after every request head (bodyless requests only) on the same connection.
    std::string canned;
  };
  enum class Mode { kNormal, kRefuse, kBlackhole };

  // Relays every connection to 127.0.0.1:upstream_port.
  explicit FaultProxy(int upstream_port);
  // The i-th accepted connection (from 0) is handled per plan(i), called on the accept thread.
  FaultProxy(int upstream_port, std::function<Plan(int index)> plan);
  ~FaultProxy();  // closes everything and joins every thread
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string endpoint() const;  // "127.0.0.1:<port>"

  // Connections accepted (blackholed ones included; refused ones never reach the proxy).
  int connections() const { return connections_; }
  // Every byte clients sent, in arrival order, all connections concatenated.
  std::string requests() const;
  // HTTP/1.1 requests seen: occurrences of " HTTP/1.1\r\n" in requests().
  int request_count() const;
  // Bytes forwarded from the server (or canned answers) to clients.
  int64_t bytes_to_client() const { return bytes_to_client_; }

  // Shuts down (both ways, both sides) every connection open now: nothing more is forwarded on
  // them once this returned, and their clients see the connection closed. New connections are
  // unaffected.
  void DropConnections();
  // Return once the accept thread applied the mode (listener closed or reopened), ~10 ms.
  void SetMode(Mode mode);
  void SetModeFor(Mode mode, std::chrono::milliseconds duration);
  Mode mode() const;

  // Optional: called on a relay thread after each forward to a client, with the new
  // bytes_to_client() total. It may call DropConnections and SetMode*. Assign before traffic.
  std::function<void(int64_t total)> on_relay;

 private:
  void SetModeUntil(Mode mode, std::chrono::steady_clock::time_point until);
  void OpenListener();
  void AcceptLoop();
  void Record(const char* data, size_t n);
  void Register(int fd);    // DropConnections shuts it down from now on
  void Unregister(int fd);  // and closes it
  void Handle(int client, const Plan& plan, uint64_t generation);
  bool Dropped(uint64_t generation) const { return generation_ != generation || stop_; }

  int upstream_port_;
  std::function<Plan(int)> plan_;
  int listen_fd_ = -1;  // only the accept thread touches it after construction
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int64_t> bytes_to_client_{0};
  std::atomic<uint64_t> generation_{0};  // bumped by DropConnections
  std::thread acceptor_;
  std::vector<std::thread> handlers_;  // accept thread only, joined in the destructor
  mutable std::mutex mu_;
  std::string requests_;                                // guarded by mu_
  std::vector<int> open_fds_;                           // guarded by mu_
  uint64_t mode_epoch_ = 0;                             // guarded by mu_; bumped by SetMode*
  std::atomic<uint64_t> applied_epoch_{0};              // the accept thread's progress
  Mode mode_ = Mode::kNormal;                           // guarded by mu_
  std::chrono::steady_clock::time_point mode_until_{};  // guarded by mu_; {} = no deadline
};

}  // namespace sedna::testing
