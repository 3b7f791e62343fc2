// Inside http::HttpServer (not for its users): the state the accept loop (http_server.cc) and
// the connections (connection.cc) share. One Core per server, on the io_context's thread: it
// owns the listening socket and the admission policy (admission.h) and knows every open
// Connection, so that Stop() can close them, eviction can pick one and a body grant can wake it.
#pragma once

// Boost 1.74 Asio needs <utility> (std::exchange) before its headers with g++ 12.
#include <utility>

#include <chrono>
#include <memory>
#include <optional>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/http/admission.h"
#include "adapters/http/http_server.h"

namespace sedna::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
inline constexpr Clock::time_point kNever = Clock::time_point::max();
// Sockets and timers on the io_context's own executor, not Asio's type-erased any_io_executor
// (whose dispatch and work tracking every read's completion went through).
using Executor = net::io_context::executor_type;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Acceptor = net::basic_socket_acceptor<tcp, Executor>;
using Timer = net::basic_waitable_timer<Clock, net::wait_traits<Clock>, Executor>;

class Connection;

// The admission limits of `o`: the body budget raised to body_limit, the small-body allowance
// within it.
Admission::Limits AdmissionLimits(const HttpServerOptions& o);

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
  void OnAccept(const error_code& ec, Socket socket);
  // Applies the eviction policy, then starts a Connection on `socket`.
  void Admit(Socket socket);
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
  Acceptor acceptor;
  Timer backoff;
  Timer room_timer;
  Admission admission;
  std::unordered_map<Admission::Id, Connection*> connections;
  // A connection accepted when there was no room after all; admitted by Accept() once there is.
  std::optional<Socket> parked;
  Clock::time_point room_timer_at = kNever;  // when the pending room timer fires, or kNever
  bool accepting = false;
  bool admitting = false;  // inside Admit(): Accept() waits for its end
  bool resuming = false;   // inside ResumeGranted()
  bool stopped = false;
};

}  // namespace sedna::http
