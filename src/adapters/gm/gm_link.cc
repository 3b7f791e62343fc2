#include "adapters/gm/gm_link.h"

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <sys/socket.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

#include "adapters/gm/backoff.h"
#include "adapters/gm/link_buffers.h"
#include "adapters/gm/ws_accept.h"
#include "adapters/gm/ws_wire.h"

namespace sedna::gm {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr std::size_t kKeepBufferBytes = 1u << 20;  // larger buffers are released after use
constexpr std::size_t kMaxResponseHeadBytes = 16u << 10;
constexpr std::size_t kReadChunkBytes = 16u << 10;
// Reading stops while more than this waits to be written behind the write under way, and resumes
// once it is being written: a GM that pings and does not read cannot grow the queue of pongs.
constexpr std::size_t kMaxQueuedBytes = 64u << 10;
constexpr const char* kUserAgent = "sedna-lc";

struct HostPort {
  std::string host;
  std::string port;
  uint16_t port_number = 0;
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
  hp.port_number = static_cast<uint16_t>(port);
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

void TrimString(std::string& s) {
  s.clear();
  if (s.capacity() > kKeepBufferBytes) s.shrink_to_fit();
}

// The io_context's own executor, not the type-erased any_io_executor: every write's completion
// would go through any_executor's dispatch and work tracking.
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;

// One connection attempt and, if it succeeds, that connection. Handlers hold it by shared_ptr, so
// the socket outlives every operation on it; the link drops its own reference when the attempt
// fails, which makes every later handler of that attempt a no-op.
struct Conn {
  Conn(asio::io_context& io, size_t max_message_bytes)
      : resolver(io),
        socket(io.get_executor()),
        deadline(io),
        ping_timer(io),
        pong_deadline(io),
        reader(max_message_bytes) {}

  void MarkAlive() {
    alive = true;
    awaiting_pong = false;
  }

  tcp::resolver resolver;
  Socket socket;
  asio::steady_timer deadline;  // bounds the attempt until kConnected
  asio::steady_timer ping_timer;
  asio::steady_timer pong_deadline;
  std::string key;  // Sec-WebSocket-Key of the upgrade request
  ReadBuffer rbuf;
  MessageReader reader;
  // Writing: `out` is being written (stable until its completion), `queued` waits behind it.
  // Frames are appended whole, so the stream never carries a frame inside another.
  std::string out;
  std::string queued;
  bool writing = false;
  bool read_paused = false;  // by kMaxQueuedBytes: no read is under way
  // The Send batch not yet reported: its done, where each of its frames ends (in `queued`, or in
  // `out` once batch_in_out).
  std::function<void(size_t)> done;
  std::vector<size_t> batch_ends;
  bool batch_in_out = false;
  Phase phase = Phase::kResolving;
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
  c.socket.close(ignored);
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

  bool Send(std::span<const std::string_view> frames, std::function<void(size_t)> done) {
    if (!running || !conn || conn->phase != Phase::kConnected || conn->done || frames.empty()) {
      return false;
    }
    Conn& c = *conn;
    c.batch_ends.clear();
    for (std::string_view f : frames) {
      AppendMaskedFrame(c.queued, kOpText, f, masks.Next());
      c.batch_ends.push_back(c.queued.size());
    }
    c.done = std::move(done);
    c.batch_in_out = false;
    if (!c.writing) Write(conn);
    return true;
  }

  // Queues a frame behind what is being written, and starts writing if nothing is.
  void Queue(const std::shared_ptr<Conn>& c, uint8_t opcode, std::string_view payload) {
    AppendMaskedFrame(c->queued, opcode, payload, masks.Next());
    if (!c->writing) Write(c);
  }

  // Writes everything queued in one operation (one send while the socket takes it all).
  void Write(const std::shared_ptr<Conn>& c) {
    c->out.swap(c->queued);
    c->queued.clear();
    if (c->done) c->batch_in_out = true;  // a batch not yet reported was queued: it is in `out`
    c->writing = true;
    asio::async_write(c->socket, asio::buffer(c->out),
                      [self = shared_from_this(), c](error_code ec, std::size_t n) {
                        if (!self->Current(c)) return;
                        c->writing = false;
                        if (ec) {
                          return self->Fail(c,
                                            c->phase == Phase::kFirstFrame
                                                ? "write first frame to " + self->opts.address +
                                                      ": " + ec.message()
                                                : "write: " + ec.message(),
                                            n);
                        }
                        self->Written(c);
                      });
  }

  void Written(const std::shared_ptr<Conn>& c) {
    std::function<void(size_t)> d;
    size_t frames = 0;
    if (c->batch_in_out) {
      d = std::move(c->done);
      c->done = nullptr;
      c->batch_in_out = false;
      frames = c->batch_ends.size();
    }
    TrimString(c->out);
    if (c->phase == Phase::kFirstFrame) {
      OnConnected(c);  // may Send, which starts the next write
      if (!Current(c)) return;
    }
    if (!c->writing && !c->queued.empty()) Write(c);
    if (d) d(frames);
    if (Current(c) && c->read_paused && c->queued.size() <= kMaxQueuedBytes) {
      c->read_paused = false;
      Read(c);
    }
  }

  // Begins an attempt; its outcome is reported asynchronously, never from inside this call.
  void Connect() {
    auto c = std::make_shared<Conn>(io, opts.max_frame_bytes);
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
        hp.host, hp.port, [self, c, hp](error_code ec, const tcp::resolver::results_type& results) {
          if (!self->Current(c)) return;
          if (ec) return self->Fail(c, "resolve " + self->opts.address + ": " + ec.message());
          c->phase = Phase::kConnecting;
          asio::async_connect(
              c->socket, results, [self, c, hp](error_code ec, const tcp::endpoint&) {
                if (!self->Current(c)) return;
                if (ec) return self->Fail(c, "connect " + self->opts.address + ": " + ec.message());
                self->Handshake(c, hp);
              });
        });
  }

  // Writes the upgrade request (protocol §P1.1: Node-Name, no Origin), then reads its answer.
  void Handshake(const std::shared_ptr<Conn>& c, const HostPort& hp) {
    c->phase = Phase::kHandshaking;
    error_code ignored;
    c->socket.set_option(tcp::no_delay(true), ignored);
    std::array<uint32_t, 4> nonce{masks.Next(), masks.Next(), masks.Next(), masks.Next()};
    c->key = Base64(std::string_view(reinterpret_cast<const char*>(nonce.data()), 16));
    c->out = UpgradeRequest(hp.host, hp.port_number, c->key, opts.node_name, kUserAgent);
    c->writing = true;
    asio::async_write(c->socket, asio::buffer(c->out),
                      [self = shared_from_this(), c](error_code ec, std::size_t) {
                        if (!self->Current(c)) return;
                        c->writing = false;
                        TrimString(c->out);
                        if (ec) {
                          return self->Fail(
                              c, "handshake " + self->opts.address + ": " + ec.message());
                        }
                        self->ReadHandshake(c);
                      });
  }

  void ReadHandshake(const std::shared_ptr<Conn>& c) {
    c->socket.async_read_some(
        c->rbuf.Prepare(kReadChunkBytes), [self = shared_from_this(), c](error_code ec, size_t n) {
          if (!self->Current(c)) return;
          const std::string fail = "handshake " + self->opts.address + ": ";
          if (ec) return self->Fail(c, fail + ec.message());
          c->rbuf.Commit(n);
          const std::string_view in = c->rbuf.data();
          const auto end = in.find("\r\n\r\n");
          if (end == std::string_view::npos) {
            if (in.size() > kMaxResponseHeadBytes) {
              return self->Fail(c, fail + "response head over " +
                                       std::to_string(kMaxResponseHeadBytes) + " bytes");
            }
            return self->ReadHandshake(c);
          }
          const std::string why = CheckUpgradeResponse(std::string(in.substr(0, end + 4)), c->key);
          if (!why.empty()) return self->Fail(c, fail + why);
          c->rbuf.Consume(end + 4);  // what follows is the GM's first frames
          if (self->opts.first_frame.empty()) return self->OnConnected(c);
          c->phase = Phase::kFirstFrame;
          self->Queue(c, kOpText, self->opts.first_frame);
        });
  }

  // on_connected comes before the first on_frame, also for frames that came with the handshake.
  void OnConnected(const std::shared_ptr<Conn>& c) {
    c->phase = Phase::kConnected;
    c->deadline.cancel();
    SchedulePing(c);
    if (cbs.on_connected) cbs.on_connected();
    if (Current(c)) Read(c);
  }

  // Delivers the frames already read, then reads more.
  void Read(const std::shared_ptr<Conn>& c) {
    const std::optional<size_t> want = TakeFrames(c);
    if (!want) return;
    if (c->queued.size() > kMaxQueuedBytes) {
      c->read_paused = true;  // Written() reads again
      return;
    }
    c->rbuf.Trim();
    c->socket.async_read_some(c->rbuf.Prepare(std::max(*want, kReadChunkBytes)),
                              [self = shared_from_this(), c](error_code ec, size_t n) {
                                if (!self->Current(c)) return;
                                if (ec) return self->Fail(c, "read: " + ec.message());
                                c->rbuf.Commit(n);
                                self->Read(c);
                              });
  }

  // Takes every whole frame off the read buffer: data messages go to on_frame, pings are
  // answered, a close or a forbidden frame ends the connection. Returns how many more bytes the
  // next frame needs at least, or nullopt when the connection ended (also when a callback stopped
  // the link).
  std::optional<size_t> TakeFrames(const std::shared_ptr<Conn>& c) {
    for (;;) {
      size_t used = 0;
      MessageReader::Event ev = c->reader.Next(c->rbuf.data(), used);
      c->rbuf.Consume(used);
      switch (ev.kind) {
        case MessageReader::Event::kNeedMore:
          return ev.need;
        case MessageReader::Event::kMessage:
          c->MarkAlive();
          if (cbs.on_frame) cbs.on_frame(std::move(ev.payload));
          if (!Current(c)) return std::nullopt;
          break;
        case MessageReader::Event::kPing:
          c->MarkAlive();
          Queue(c, kOpPong, ev.payload);
          break;
        case MessageReader::Event::kPong:
          c->MarkAlive();
          break;
        case MessageReader::Event::kClose: {
          SendCloseNow(*c, ev.code == 1005 ? 0 : ev.code);  // echoed (RFC 6455 §5.5.1)
          std::string reason = "closed by GM (code " + std::to_string(ev.code);
          if (!ev.payload.empty()) reason += ": " + ev.payload;
          Fail(c, reason + ")");
          return std::nullopt;
        }
        case MessageReader::Event::kRefused:
          SendCloseNow(*c, ev.code);
          Fail(c, "read: " + ev.payload);
          return std::nullopt;
      }
    }
  }

  // Best effort, right before the socket closes: a close frame with `code` (none when 0) if no
  // write is under way, which it would cut into.
  void SendCloseNow(Conn& c, uint16_t code) {
    if (c.writing) return;
    const char body[2] = {static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
    std::string frame;
    AppendMaskedFrame(frame, kOpClose, std::string_view(body, code ? 2 : 0), masks.Next());
    [[maybe_unused]] const ssize_t n =
        ::send(c.socket.native_handle(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  // Every ping_interval: send a ping unless one is unanswered; a ping left unanswered (no pong,
  // no frame) for ping_timeout fails the connection.
  void SchedulePing(const std::shared_ptr<Conn>& c) {
    if (opts.ping_interval <= std::chrono::milliseconds::zero()) return;
    c->ping_timer.expires_after(opts.ping_interval);
    c->ping_timer.async_wait([self = shared_from_this(), c](error_code ec) {
      if (ec || !self->Current(c)) return;
      if (!c->awaiting_pong) self->Ping(c);
      self->SchedulePing(c);
    });
  }

  void Ping(const std::shared_ptr<Conn>& c) {
    auto self = shared_from_this();
    c->awaiting_pong = true;
    const uint64_t seq = ++c->ping_seq;
    c->pong_deadline.expires_after(opts.ping_timeout);
    c->pong_deadline.async_wait([self, c, seq](error_code ec) {
      if (ec || !self->Current(c) || !c->awaiting_pong || c->ping_seq != seq) return;
      self->Fail(c, "ping timeout after " + Ms(self->opts.ping_timeout));
    });
    Queue(c, kOpPing, {});
  }

  // Ends the attempt or connection `c` (if still current), schedules the next attempt, then
  // reports: done of a Send not yet reported (with how many of its frames were written whole:
  // `written` bytes of the write under way were), on_disconnected, on_reconnect_scheduled.
  void Fail(const std::shared_ptr<Conn>& c, std::string reason, size_t written = 0) {
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
    if (done) {
      size_t whole = 0;
      if (c->batch_in_out) {
        while (whole < c->batch_ends.size() && c->batch_ends[whole] <= written) ++whole;
      }
      done(whole);
    }
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
  RandomPool masks;
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

bool GmLink::Send(std::span<const std::string_view> frames,
                  std::function<void(size_t written)> done) {
  return impl_->Send(frames, std::move(done));
}

}  // namespace sedna::gm
