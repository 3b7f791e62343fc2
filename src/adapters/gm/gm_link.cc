#include "adapters/gm/gm_link.h"

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <charconv>
#include <optional>

#include "adapters/gm/backoff.h"

namespace sedna::gm {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr std::size_t kKeepBufferBytes = 1u << 20;  // larger buffers are released after use
constexpr const char* kUserAgent = "sedna-lc";

struct HostPort {
  std::string host;
  std::string port;
};

// "host:port" or "[v6]:port"; nullopt when malformed.
std::optional<HostPort> SplitAddress(const std::string& address) {
  HostPort hp;
  if (!address.empty() && address[0] == '[') {
    auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return std::nullopt;
    }
    hp.host = address.substr(1, close - 1);
    hp.port = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    hp.host = address.substr(0, colon);
    hp.port = address.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) return std::nullopt;
  }
  unsigned port = 0;
  const char* end = hp.port.data() + hp.port.size();
  auto [ptr, ec] = std::from_chars(hp.port.data(), end, port);
  if (hp.host.empty() || ec != std::errc() || ptr != end || port == 0 || port > 65535) {
    return std::nullopt;
  }
  return hp;
}

enum class Phase { kResolving, kConnecting, kHandshaking, kFirstFrame, kConnected };

const char* PhaseVerb(Phase p) {
  switch (p) {
    case Phase::kResolving:
      return "resolve";
    case Phase::kConnecting:
      return "connect";
    case Phase::kHandshaking:
      return "handshake";
    case Phase::kFirstFrame:
      return "write first frame to";
    case Phase::kConnected:
      break;
  }
  return "connected to";
}

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

// One connection attempt and, if it succeeds, that connection. Handlers hold it by shared_ptr, so
// the stream outlives every operation on it; the link drops its own reference when the attempt
// fails, which makes every later handler of that attempt a no-op.
struct Conn {
  explicit Conn(asio::io_context& io)
      : resolver(io), ws(io.get_executor()), deadline(io), ping_timer(io), pong_deadline(io) {}

  void MarkAlive() {
    alive = true;
    awaiting_pong = false;
  }

  tcp::resolver resolver;
  // The io_context's own executor, not tcp_stream's type-erased any_io_executor: every write's
  // completion went through any_executor's dispatch and work tracking.
  websocket::stream<beast::basic_stream<tcp, asio::io_context::executor_type>> ws;
  asio::steady_timer deadline;  // bounds the attempt until kConnected
  asio::steady_timer ping_timer;
  asio::steady_timer pong_deadline;
  websocket::response_type response;
  beast::flat_buffer rbuf;
  std::string wbuf;                // the frame being written; stable while writing
  std::function<void(bool)> done;  // of the Send in flight
  Phase phase = Phase::kResolving;
  bool writing = false;
  bool corked = false;  // TCP_CORK: frames of a burst leave in as few segments as possible
  bool ping_in_flight = false;
  bool awaiting_pong = false;  // a ping was sent and nothing was received since
  bool alive = false;          // the GM sent something on this connection
  uint64_t ping_seq = 0;
};

void CloseConn(Conn& c) {
  error_code ignored;
  c.resolver.cancel();
  c.deadline.cancel();
  c.ping_timer.cancel();
  c.pong_deadline.cancel();
  beast::get_lowest_layer(c.ws).socket().close(ignored);
}

}  // namespace

struct GmLink::Impl : std::enable_shared_from_this<GmLink::Impl> {
  Impl(asio::io_context& io_context, GmLinkOptions o, GmLinkCallbacks c)
      : io(io_context),
        opts(std::move(o)),
        cbs(std::move(c)),
        retry_timer(io_context),
        backoff(opts.backoff_initial, opts.backoff_max, opts.jitter_seed) {}

  bool Current(const std::shared_ptr<Conn>& c) const { return running && conn == c; }

  void Start() {
    if (running) return;
    running = true;
    ++epoch;
    backoff.Reset();
    Connect();
  }

  void Stop() {
    if (!running) return;
    running = false;
    ++epoch;
    retry_timer.cancel();
    if (auto c = std::move(conn)) {
      c->done = nullptr;
      CloseConn(*c);
    }
  }

  bool Send(std::string text, std::function<void(bool)> done, bool more) {
    if (!running || !conn || conn->phase != Phase::kConnected || conn->writing) return false;
    auto c = conn;
    if (more != c->corked) {
      // Uncorking before the last frame of a burst is written sends it with everything held.
      int v = more ? 1 : 0;
      const int fd = beast::get_lowest_layer(c->ws).socket().native_handle();
      if (::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, sizeof v) == 0) c->corked = more;
    }
    c->writing = true;
    c->wbuf = std::move(text);
    c->done = std::move(done);
    c->ws.text(true);
    c->ws.async_write(asio::buffer(c->wbuf),
                      [self = shared_from_this(), c](error_code ec, std::size_t) {
                        if (!self->Current(c)) return;
                        c->writing = false;
                        if (ec) return self->Fail(c, "write: " + ec.message());
                        ReleaseWriteBuffer(*c);
                        auto d = std::move(c->done);
                        c->done = nullptr;
                        if (d) d(true);
                      });
    return true;
  }

  static void ReleaseWriteBuffer(Conn& c) {
    c.wbuf.clear();
    if (c.wbuf.capacity() > kKeepBufferBytes) c.wbuf.shrink_to_fit();
  }

  // Begins an attempt; its outcome is reported asynchronously, never from inside this call.
  void Connect() {
    auto c = std::make_shared<Conn>(io);
    conn = c;
    auto self = shared_from_this();
    auto fail_later = [&](std::string reason) {
      asio::post(io, [self, c, reason = std::move(reason)] { self->Fail(c, reason); });
    };
    auto hp = SplitAddress(opts.address);
    if (!hp) return fail_later("invalid GM address '" + opts.address + "' (want host:port)");
    try {
      Dial(c, *hp);
    } catch (const std::exception& e) {
      fail_later("connect " + opts.address + ": " + e.what());
    }
  }

  void Dial(const std::shared_ptr<Conn>& c, const HostPort& hp) {
    auto self = shared_from_this();
    c->deadline.expires_after(opts.connect_timeout);
    c->deadline.async_wait([self, c](error_code ec) {
      if (ec || !self->Current(c) || c->phase == Phase::kConnected) return;
      self->Fail(c, std::string(PhaseVerb(c->phase)) + " " + self->opts.address +
                        ": timed out after " + Ms(self->opts.connect_timeout));
    });
    c->resolver.async_resolve(
        hp.host, hp.port, [self, c](error_code ec, const tcp::resolver::results_type& results) {
          if (!self->Current(c)) return;
          if (ec) return self->Fail(c, "resolve " + self->opts.address + ": " + ec.message());
          c->phase = Phase::kConnecting;
          beast::get_lowest_layer(c->ws).async_connect(
              results, [self, c](error_code ec, const tcp::endpoint&) {
                if (!self->Current(c)) return;
                if (ec) return self->Fail(c, "connect " + self->opts.address + ": " + ec.message());
                self->Handshake(c);
              });
        });
  }

  void Handshake(const std::shared_ptr<Conn>& c) {
    c->phase = Phase::kHandshaking;
    error_code ignored;
    beast::get_lowest_layer(c->ws).socket().set_option(tcp::no_delay(true), ignored);
    // The link enforces its own deadlines (connect_timeout, ping_timeout).
    c->ws.set_option(websocket::stream_base::timeout{websocket::stream_base::none(),
                                                     websocket::stream_base::none(), false});
    c->ws.set_option(
        websocket::stream_base::decorator([node = opts.node_name](websocket::request_type& req) {
          req.set(beast::http::field::user_agent, kUserAgent);
          req.set("Node-Name", node);
        }));
    c->ws.read_message_max(opts.max_frame_bytes);
    c->ws.auto_fragment(false);  // one message = one frame, as gorilla writes them
    Conn* raw = c.get();         // the callback is owned by raw->ws
    c->ws.control_callback([raw](websocket::frame_type kind, beast::string_view) {
      if (kind != websocket::frame_type::close) raw->MarkAlive();
    });
    auto self = shared_from_this();
    c->ws.async_handshake(c->response, opts.address, "/", [self, c](error_code ec) {
      if (!self->Current(c)) return;
      if (ec) {
        std::string reason = "handshake " + self->opts.address + ": " + ec.message();
        if (ec == websocket::error::upgrade_declined) {
          reason += " (HTTP " + std::to_string(c->response.result_int()) + ")";
        }
        return self->Fail(c, reason);
      }
      c->response = {};
      if (self->opts.first_frame.empty()) return self->OnConnected(c);
      c->phase = Phase::kFirstFrame;
      c->writing = true;
      c->wbuf = self->opts.first_frame;
      c->ws.text(true);
      c->ws.async_write(asio::buffer(c->wbuf), [self, c](error_code ec, std::size_t) {
        if (!self->Current(c)) return;
        c->writing = false;
        if (ec) {
          return self->Fail(c, "write first frame to " + self->opts.address + ": " + ec.message());
        }
        ReleaseWriteBuffer(*c);
        self->OnConnected(c);
      });
    });
  }

  void OnConnected(const std::shared_ptr<Conn>& c) {
    c->phase = Phase::kConnected;
    c->deadline.cancel();
    Read(c);
    SchedulePing(c);
    if (cbs.on_connected) cbs.on_connected();
  }

  void Read(const std::shared_ptr<Conn>& c) {
    c->ws.async_read(c->rbuf, [self = shared_from_this(), c](error_code ec, std::size_t) {
      if (!self->Current(c)) return;
      if (ec == websocket::error::closed) {
        const auto& cr = c->ws.reason();
        std::string reason = "closed by GM (code " + std::to_string(cr.code);
        if (!cr.reason.empty()) reason += ": " + std::string(cr.reason.data(), cr.reason.size());
        return self->Fail(c, reason + ")");
      }
      if (ec == websocket::error::message_too_big) {
        return self->Fail(c, "read: frame over the " + std::to_string(self->opts.max_frame_bytes) +
                                 "-byte limit");
      }
      if (ec) return self->Fail(c, "read: " + ec.message());
      c->MarkAlive();
      std::string text = beast::buffers_to_string(c->rbuf.data());
      c->rbuf.consume(c->rbuf.size());
      if (c->rbuf.capacity() > kKeepBufferBytes) c->rbuf.shrink_to_fit();
      if (self->cbs.on_frame) self->cbs.on_frame(std::move(text));
      if (self->Current(c)) self->Read(c);
    });
  }

  // Every ping_interval: send a ping unless one is unanswered or still queued behind a write; a
  // ping left unanswered (no pong, no frame) for ping_timeout fails the connection.
  void SchedulePing(const std::shared_ptr<Conn>& c) {
    if (opts.ping_interval <= std::chrono::milliseconds::zero()) return;
    c->ping_timer.expires_after(opts.ping_interval);
    c->ping_timer.async_wait([self = shared_from_this(), c](error_code ec) {
      if (ec || !self->Current(c)) return;
      if (!c->awaiting_pong && !c->ping_in_flight) self->Ping(c);
      self->SchedulePing(c);
    });
  }

  void Ping(const std::shared_ptr<Conn>& c) {
    auto self = shared_from_this();
    c->awaiting_pong = true;
    c->ping_in_flight = true;
    const uint64_t seq = ++c->ping_seq;
    c->pong_deadline.expires_after(opts.ping_timeout);
    c->pong_deadline.async_wait([self, c, seq](error_code ec) {
      if (ec || !self->Current(c) || !c->awaiting_pong || c->ping_seq != seq) return;
      self->Fail(c, "ping timeout after " + Ms(self->opts.ping_timeout));
    });
    // A failed ping also fails the read loop, which reports it.
    c->ws.async_ping({}, [c](error_code) { c->ping_in_flight = false; });
  }

  // Ends the attempt or connection `c` (if still current), schedules the next attempt, then
  // reports: done(false) of a Send in flight, on_disconnected, on_reconnect_scheduled.
  void Fail(const std::shared_ptr<Conn>& c, std::string reason) {
    if (!Current(c)) return;
    conn = nullptr;
    CloseConn(*c);
    if (c->alive) backoff.Reset();
    const auto delay = backoff.Next();
    const uint64_t e = ++epoch;
    retry_timer.expires_after(delay);
    retry_timer.async_wait([self = shared_from_this(), e](error_code ec) {
      if (ec || !self->running || self->epoch != e) return;
      self->Connect();
    });
    auto done = std::move(c->done);
    c->done = nullptr;
    if (done) done(false);
    if (!running || epoch != e) return;  // a callback stopped or restarted the link
    if (cbs.on_disconnected) cbs.on_disconnected(std::move(reason));
    if (!running || epoch != e) return;
    if (cbs.on_reconnect_scheduled) cbs.on_reconnect_scheduled(delay);
  }

  asio::io_context& io;
  GmLinkOptions opts;
  GmLinkCallbacks cbs;
  asio::steady_timer retry_timer;
  Backoff backoff;
  bool running = false;
  uint64_t epoch = 0;          // bumped by Start, Stop and every scheduled retry
  std::shared_ptr<Conn> conn;  // the current attempt or connection; null while waiting or stopped
};

GmLink::GmLink(boost::asio::io_context& io, GmLinkOptions options, GmLinkCallbacks callbacks)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(callbacks))) {}

GmLink::~GmLink() { impl_->Stop(); }

void GmLink::Start() { impl_->Start(); }

void GmLink::Stop() { impl_->Stop(); }

bool GmLink::connected() const {
  return impl_->running && impl_->conn && impl_->conn->phase == Phase::kConnected;
}

bool GmLink::Send(std::string text, std::function<void(bool written)> done, bool more) {
  return impl_->Send(std::move(text), std::move(done), more);
}

}  // namespace sedna::gm
