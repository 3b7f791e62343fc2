// The server's accept loop and life cycle (http_server.h): listening, accepting, admitting a
// new connection under the eviction policy (admission.h) or parking it until there is room,
// back-off after accept errors, and Stop(). Each admitted socket becomes a Connection
// (connection.h).
#include "adapters/http/http_server.h"

#include <algorithm>
#include <exception>
#include <string>

#include <boost/asio/ip/address.hpp>

#include "adapters/http/connection.h"
#include "adapters/http/http_text.h"
#include "adapters/http/server_core.h"

namespace sedna::http {
namespace {

constexpr std::chrono::milliseconds kAcceptBackoff{100};
// Bodies up to this size are never charged to the body budget (Admission::Limits::small_body).
constexpr size_t kSmallBody = 16 * 1024;

}  // namespace

Admission::Limits AdmissionLimits(const HttpServerOptions& o) {
  Admission::Limits l;
  l.max_connections = o.max_connections;
  l.eviction_grace = o.eviction_grace;
  // A body up to body_limit must always be able to get a grant.
  l.body_buffer_limit = std::max(o.body_buffer_limit, o.body_limit);
  l.small_body = std::min(kSmallBody, l.body_buffer_limit);
  return l;
}

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
    Socket socket = std::move(*parked);
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
  acceptor.async_accept([self = shared_from_this()](const error_code& ec, Socket socket) {
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

void HttpServer::Core::OnAccept(const error_code& ec, Socket socket) {
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

void HttpServer::Core::Admit(Socket socket) {
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
    Acceptor& acceptor = core->acceptor;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(Acceptor::reuse_address(true), ec);
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
