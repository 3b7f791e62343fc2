#include "adapters/gm/gm_link.h"

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/gm/backoff.h"
#include "adapters/gm/ws_accept.h"
#include "adapters/gm/ws_wire.h"
#include "ws_test_server.h"

namespace sedna::gm {
namespace {

using namespace std::chrono_literals;
using sedna::testing::WsTestServer;
using std::chrono::milliseconds;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr milliseconds kWait = 5s;  // cap for awaited events; they normally take milliseconds
constexpr const char* kFirstFrame =
    R"({"namespace":"","resourceKind":"","resourceName":"","operation":""})";

// ---------------------------------------------------------------------------------------------
// Backoff

TEST(BackoffTest, DelaysStayWithinTheDoublingCappedBound) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Backoff b(100ms, 3000ms, seed);
    for (int n = 0; n < 16; ++n) {
      const milliseconds cap = std::min<milliseconds>(3000ms, 100ms * (1LL << n));
      ASSERT_EQ(b.cap(), cap) << "seed " << seed << " n " << n;
      const milliseconds d = b.Next();
      ASSERT_GE(d, 0ms);
      ASSERT_LE(d, cap);
    }
  }
}

TEST(BackoffTest, FullJitterSpreadsOverTheWholeRange) {
  Backoff b(1000ms, 1000ms, 99);
  std::set<int64_t> seen;
  milliseconds lo = 1000ms, hi = 0ms;
  for (int i = 0; i < 1000; ++i) {
    const milliseconds d = b.Next();
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    seen.insert(d.count());
  }
  EXPECT_LT(lo, 100ms);
  EXPECT_GT(hi, 900ms);
  EXPECT_GT(seen.size(), 300u);
}

TEST(BackoffTest, SameSeedSameSequenceAndResetRestartsTheCap) {
  Backoff a(10ms, 1000ms, 5), b(10ms, 1000ms, 5), c(10ms, 1000ms, 6);
  std::vector<milliseconds> sa, sb, sc;
  for (int i = 0; i < 20; ++i) {
    sa.push_back(a.Next());
    sb.push_back(b.Next());
    sc.push_back(c.Next());
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
  EXPECT_EQ(a.cap(), 1000ms);
  a.Reset();
  EXPECT_EQ(a.cap(), 10ms);
  EXPECT_LE(a.Next(), 10ms);
  EXPECT_EQ(a.cap(), 20ms);
}

TEST(BackoffTest, ClampsDegenerateSettings) {
  Backoff zero(0ms, 0ms, 1);
  EXPECT_EQ(zero.cap(), 1ms);
  zero.Next();
  EXPECT_EQ(zero.cap(), 1ms);
  Backoff inverted(50ms, 10ms, 1);
  inverted.Next();
  EXPECT_EQ(inverted.cap(), 50ms);
}

// ---------------------------------------------------------------------------------------------
// GmLink against a real websocket server on 127.0.0.1

// What the link reported, in order, shared between the loop thread and the test thread.
struct Events {
  template <class Pred>
  bool Wait(Pred pred, milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, timeout, [&] { return pred(); });
  }
  template <class F>
  void Update(F f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      f();
    }
    cv.notify_all();
  }
  template <class F>
  auto Read(F f) {
    std::lock_guard<std::mutex> lock(mu);
    return f();
  }

  std::mutex mu;
  std::condition_variable cv;
  int connected = 0;
  std::vector<std::string> disconnects;  // reasons
  std::vector<std::string> frames;
  std::vector<milliseconds> delays;
  std::vector<size_t> dones;     // the frames each Send's done said were written
  std::vector<std::string> log;  // "connected", "frame", "done:<n>", "disconnected"
};

class GmLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = WsTestServer::Start();
    ASSERT_NE(server_, nullptr);
    loop_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (loop_.joinable()) {
      OnLoop([this] { link_.reset(); });
      work_.reset();
      loop_.join();  // returns once the destroyed link's pending handlers have all finished
    }
    if (server_) server_->Stop();
  }

  GmLinkOptions Options() {
    GmLinkOptions o;
    o.address = server_->address();
    o.node_name = "edge-node";
    o.first_frame = kFirstFrame;
    o.backoff_initial = 10ms;
    o.backoff_max = 100ms;
    o.jitter_seed = 42;
    return o;
  }

  GmLinkCallbacks Callbacks() {
    GmLinkCallbacks cb;
    cb.on_connected = [this] {
      ev_.Update([&] {
        ++ev_.connected;
        ev_.log.push_back("connected");
      });
    };
    cb.on_frame = [this](std::string text) {
      ev_.Update([&] {
        ev_.frames.push_back(std::move(text));
        ev_.log.push_back("frame");
      });
    };
    cb.on_disconnected = [this](std::string reason) {
      ev_.Update([&] {
        ev_.disconnects.push_back(std::move(reason));
        ev_.log.push_back("disconnected");
      });
    };
    cb.on_reconnect_scheduled = [this](milliseconds delay) {
      ev_.Update([&] { ev_.delays.push_back(delay); });
    };
    return cb;
  }

  void StartLink(GmLinkOptions options) { StartLink(std::move(options), Callbacks()); }
  void StartLink(GmLinkOptions options, GmLinkCallbacks callbacks) {
    OnLoop([&] {
      link_ = std::make_unique<GmLink>(io_, std::move(options), std::move(callbacks));
      link_->Start();
    });
  }

  // Runs f on the loop thread and returns its result.
  template <class F>
  auto OnLoop(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    asio::post(io_, [&task] { task(); });
    return result.get();
  }

  // Lets every handler already queued on the loop run.
  void FlushLoop() {
    OnLoop([] {});
    OnLoop([] {});
  }

  std::function<void(size_t)> RecordDone() {
    return [this](size_t written) {
      ev_.Update([&] {
        ev_.dones.push_back(written);
        ev_.log.push_back("done:" + std::to_string(written));
      });
    };
  }

  // Connects with Options() and consumes the first frame on the server side.
  void ConnectReady(GmLinkOptions options) {
    StartLink(std::move(options));
    ASSERT_TRUE(server_->WaitForConnection(kWait));
    ASSERT_EQ(server_->WaitForFrame(kWait), kFirstFrame);
    ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 1; }));
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::thread loop_;
  std::unique_ptr<WsTestServer> server_;
  Events ev_;
  std::unique_ptr<GmLink> link_;  // created, used and destroyed on loop_
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST_F(GmLinkTest, HandshakeCarriesNodeNameAndNoOriginThenTheFirstFrame) {
  StartLink(Options());
  ASSERT_TRUE(server_->WaitForConnection(kWait));
  EXPECT_EQ(server_->last_node_name(), "edge-node");
  EXPECT_EQ(server_->last_request_target(), "/");
  bool host_seen = false;
  for (const std::string& h : server_->last_request_headers()) {
    EXPECT_NE(Lower(h).rfind("origin:", 0), 0u) << h;
    if (Lower(h) == "host: " + server_->address()) host_seen = true;
  }
  EXPECT_TRUE(host_seen);
  EXPECT_EQ(server_->WaitForFrame(kWait), kFirstFrame);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 1; }));
  EXPECT_TRUE(OnLoop([&] { return link_->connected(); }));
  EXPECT_TRUE(ev_.Read([&] { return ev_.disconnects.empty(); }));
}

TEST_F(GmLinkTest, EmptyFirstFrameSendsNothingBeforeTheCallersFrames) {
  GmLinkOptions o = Options();
  o.first_frame.clear();
  StartLink(o);
  ASSERT_TRUE(server_->WaitForConnection(kWait));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 1; }));
  EXPECT_TRUE(OnLoop([&] { return link_->Send("mine", RecordDone()); }));
  EXPECT_EQ(server_->WaitForFrame(kWait), "mine");
}

TEST_F(GmLinkTest, FramesFromTheServerArriveInOrder) {
  ConnectReady(Options());
  constexpr int kFrames = 1000;
  for (int i = 0; i < kFrames; ++i) ASSERT_TRUE(server_->Send("frame-" + std::to_string(i)));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == kFrames; }));
  ev_.Read([&] {
    for (int i = 0; i < kFrames; ++i) EXPECT_EQ(ev_.frames[i], "frame-" + std::to_string(i));
  });
}

TEST_F(GmLinkTest, AcceptsA64MiBFrameWhenAllowed) {
  GmLinkOptions o = Options();
  o.max_frame_bytes = 64u << 20;
  ConnectReady(o);
  std::string big(64u << 20, 'x');
  big.back() = '!';
  ASSERT_TRUE(server_->Send(big));
  ASSERT_TRUE(server_->Send("after"));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == 2; }, 60s));
  ev_.Read([&] {
    EXPECT_TRUE(ev_.frames[0] == big);
    EXPECT_EQ(ev_.frames[1], "after");
  });
  EXPECT_TRUE(ev_.Read([&] { return ev_.disconnects.empty(); }));
}

TEST_F(GmLinkTest, AFrameOverTheDefaultLimitFailsTheConnectionUnread) {
  ConnectReady(Options());
  ASSERT_TRUE(server_->Send(std::string(GmLinkOptions::kDefaultMaxFrameBytes, 'x')));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == 1; }, 30s));
  ASSERT_TRUE(server_->Send(std::string(GmLinkOptions::kDefaultMaxFrameBytes + 1, 'y')));
  ASSERT_TRUE(ev_.Wait([&] { return !ev_.disconnects.empty(); }, 30s));
  ev_.Read([&] {
    EXPECT_EQ(ev_.frames.size(), 1u);  // the large frame was never delivered
    EXPECT_EQ(ev_.disconnects[0], "read: frame over the 2359296-byte limit");
  });
  // And the link dials again.
  ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 2; }, 30s));
}

TEST_F(GmLinkTest, SendWritesTheFrameThenReportsDone) {
  ConnectReady(Options());
  EXPECT_TRUE(OnLoop([&] { return link_->Send("hello", RecordDone()); }));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.dones.size() == 1; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.dones[0]; }), 1u);
  EXPECT_EQ(server_->WaitForFrame(kWait), "hello");
}

// A batch leaves in one write: every frame arrives, whole and in order, and one done reports them
// all; a Send after it is taken again.
TEST_F(GmLinkTest, ABatchArrivesWholeAndInOrderAndIsReportedOnce) {
  ConnectReady(Options());
  constexpr int kFrames = 50;
  std::vector<std::string> texts;
  for (int i = 0; i < kFrames; ++i) {
    texts.push_back("burst-" + std::to_string(i) + std::string(i * 100, 'x'));
  }
  std::vector<std::string_view> views(texts.begin(), texts.end());
  EXPECT_TRUE(OnLoop([&] { return link_->Send(views, RecordDone()); }));
  for (int i = 0; i < kFrames; ++i) EXPECT_EQ(server_->WaitForFrame(kWait), texts[i]);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.dones.size() == 1; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.dones[0]; }), size_t{kFrames});
  EXPECT_TRUE(OnLoop([&] { return link_->Send("next", RecordDone()); }));
  EXPECT_EQ(server_->WaitForFrame(kWait), "next");
  EXPECT_FALSE(
      OnLoop([&] { return link_->Send(std::span<const std::string_view>(), RecordDone()); }));
}

TEST_F(GmLinkTest, SendWhileAWriteIsInFlightReturnsFalse) {
  ConnectReady(Options());
  bool second_done_called = false;
  auto [first, second] = OnLoop([&] {
    bool a = link_->Send(std::string(1u << 20, 'a'), RecordDone());
    bool b = link_->Send("b", [&](size_t) { second_done_called = true; });
    return std::pair(a, b);
  });
  EXPECT_TRUE(first);
  EXPECT_FALSE(second);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.dones.size() == 1; }));
  EXPECT_TRUE(OnLoop([&] { return link_->Send("c", RecordDone()); }));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.dones.size() == 2; }));
  EXPECT_EQ(server_->WaitForFrame(kWait), std::string(1u << 20, 'a'));
  EXPECT_EQ(server_->WaitForFrame(kWait), "c");
  FlushLoop();
  EXPECT_FALSE(OnLoop([&] { return second_done_called; }));
}

TEST_F(GmLinkTest, SendWhenNotConnectedReturnsFalse) {
  bool done_called = false;
  OnLoop([&] {
    link_ = std::make_unique<GmLink>(io_, Options(), Callbacks());
    EXPECT_FALSE(link_->Send("early", [&](size_t) { done_called = true; }));
    link_->Start();
    EXPECT_FALSE(link_->connected());
    EXPECT_FALSE(link_->Send("connecting", [&](size_t) { done_called = true; }));
  });
  ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 1; }));
  FlushLoop();
  EXPECT_FALSE(OnLoop([&] { return done_called; }));
}

TEST_F(GmLinkTest, ServerDropReconnectsAndResendsTheFirstFrame) {
  ConnectReady(Options());
  server_->DropConnection();
  ASSERT_TRUE(ev_.Wait([&] { return ev_.disconnects.size() == 1; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.disconnects[0]; }).rfind("read: ", 0), 0u);
  EXPECT_FALSE(OnLoop([&] { return link_->connected(); }));
  ASSERT_TRUE(server_->WaitForConnection(kWait));
  EXPECT_EQ(server_->last_node_name(), "edge-node");
  EXPECT_EQ(server_->WaitForFrame(kWait), kFirstFrame);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 2; }));
  EXPECT_EQ(server_->connection_count(), 2);
  EXPECT_EQ(ev_.Read([&] { return ev_.log; }),
            (std::vector<std::string>{"connected", "disconnected", "connected"}));
}

TEST_F(GmLinkTest, AWriteCutByALostConnectionReportsDoneFalseBeforeDisconnected) {
  ConnectReady(Options());
  server_->SetUnresponsive(true);  // the frame below cannot drain into the kernel buffers
  EXPECT_TRUE(OnLoop([&] { return link_->Send(std::string(32u << 20, 'z'), RecordDone()); }));
  server_->DropConnection();
  ASSERT_TRUE(ev_.Wait([&] { return ev_.disconnects.size() == 1; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.log; }),
            (std::vector<std::string>{"connected", "done:0", "disconnected"}));
}

TEST_F(GmLinkTest, UnansweredPingsFailTheConnection) {
  GmLinkOptions o = Options();
  o.ping_interval = 100ms;
  o.ping_timeout = 100ms;
  ConnectReady(o);
  server_->SetUnresponsive(true);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.disconnects.size() >= 1; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.disconnects[0]; }), "ping timeout after 100 ms");
}

TEST_F(GmLinkTest, AnsweredPingsKeepTheConnection) {
  GmLinkOptions o = Options();
  o.ping_interval = 20ms;
  o.ping_timeout = 2000ms;
  ConnectReady(o);
  ASSERT_TRUE(server_->WaitForPings(5, kWait));
  EXPECT_TRUE(ev_.Read([&] { return ev_.disconnects.empty(); }));
  EXPECT_EQ(server_->connection_count(), 1);
}

TEST_F(GmLinkTest, RefusedConnectionsRetryWithCappedJitteredBackoff) {
  // Bound but not listening: every connect is refused, and no one else can take the port.
  asio::io_context local;
  tcp::acceptor closed(local);
  closed.open(tcp::v4());
  closed.bind({asio::ip::address_v4::loopback(), 0});
  const std::string address = "127.0.0.1:" + std::to_string(closed.local_endpoint().port());

  GmLinkOptions o = Options();
  o.address = address;
  o.backoff_initial = 1ms;
  o.backoff_max = 16ms;
  o.jitter_seed = 7;
  StartLink(o);
  constexpr size_t kAttempts = 12;
  ASSERT_TRUE(ev_.Wait([&] { return ev_.delays.size() >= kAttempts; }));
  OnLoop([&] { link_->Stop(); });

  Backoff expected(1ms, 16ms, 7);
  bool jittered = false;
  ev_.Read([&] {
    EXPECT_EQ(ev_.connected, 0);
    for (size_t i = 0; i < kAttempts; ++i) {
      EXPECT_EQ(ev_.disconnects[i], "connect " + address + ": Connection refused");
      const milliseconds cap = std::min<milliseconds>(16ms, 1ms * (1LL << i));
      EXPECT_EQ(expected.cap(), cap);
      EXPECT_EQ(ev_.delays[i], expected.Next()) << i;
      EXPECT_GE(ev_.delays[i], 0ms);
      EXPECT_LE(ev_.delays[i], cap) << i;
      if (ev_.delays[i] != cap) jittered = true;
    }
  });
  EXPECT_TRUE(jittered);
}

TEST_F(GmLinkTest, BackoffRestartsAfterAConnectionOnWhichTheGmProvedAlive) {
  GmLinkOptions o = Options();
  o.backoff_initial = 10ms;
  o.backoff_max = 10000ms;
  o.jitter_seed = 11;
  StartLink(o);
  // Two connections on which the GM sends nothing: the backoff keeps growing.
  for (int i = 1; i <= 2; ++i) {
    ASSERT_TRUE(server_->WaitForConnection(kWait));
    ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == i; }));
    server_->DropConnection();
    ASSERT_TRUE(ev_.Wait([&] { return ev_.delays.size() == static_cast<size_t>(i); }));
  }
  // A connection on which the GM sends a frame: the next delay starts from backoff_initial again.
  ASSERT_TRUE(server_->WaitForConnection(kWait));
  ASSERT_TRUE(server_->Send("alive"));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == 1; }));
  server_->DropConnection();
  ASSERT_TRUE(ev_.Wait([&] { return ev_.delays.size() == 3; }));

  Backoff expected(10ms, 10000ms, 11);
  std::vector<milliseconds> want;
  want.push_back(expected.Next());
  want.push_back(expected.Next());
  expected.Reset();
  want.push_back(expected.Next());
  EXPECT_EQ(ev_.Read([&] { return ev_.delays; }), want);
}

// A listener that never accepts: TCP connects (backlog) but the handshake is never answered.
struct SilentListener {
  SilentListener() : acceptor(io, {asio::ip::address_v4::loopback(), 0}) {}
  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  }
  asio::io_context io;
  tcp::acceptor acceptor;
};

TEST_F(GmLinkTest, AHandshakeThatNeverCompletesTimesOut) {
  SilentListener silent;
  GmLinkOptions o = Options();
  o.address = silent.address();
  o.connect_timeout = 100ms;
  StartLink(o);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.disconnects.size() >= 2; }));
  OnLoop([&] { link_->Stop(); });
  EXPECT_EQ(ev_.Read([&] { return ev_.disconnects[0]; }),
            "handshake " + silent.address() + ": timed out after 100 ms");
}

TEST_F(GmLinkTest, StopDuringTheHandshakeIsClean) {
  SilentListener silent;
  GmLinkOptions o = Options();
  o.address = silent.address();
  StartLink(o);
  // Accept and read the upgrade request: the link is now waiting for the response.
  tcp::socket peer(silent.io);
  silent.acceptor.accept(peer);
  asio::streambuf request;
  asio::read_until(peer, request, "\r\n\r\n");
  OnLoop([&] { link_->Stop(); });
  // The link closed its socket: the peer reads EOF.
  boost::system::error_code ec;
  char byte;
  peer.read_some(asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, asio::error::eof);
  FlushLoop();
  ev_.Read([&] {
    EXPECT_EQ(ev_.connected, 0);
    EXPECT_TRUE(ev_.disconnects.empty());
    EXPECT_TRUE(ev_.delays.empty());
  });
  EXPECT_FALSE(OnLoop([&] { return link_->connected(); }));
}

TEST_F(GmLinkTest, StopOrDestroyRightAfterStartIsClean) {
  OnLoop([&] {
    link_ = std::make_unique<GmLink>(io_, Options(), Callbacks());
    link_->Start();
    link_->Stop();
    link_->Start();
    link_.reset();  // destroyed with its resolve/connect in flight
  });
  FlushLoop();
  ev_.Read([&] {
    EXPECT_EQ(ev_.connected, 0);
    EXPECT_TRUE(ev_.disconnects.empty());
  });
}

TEST_F(GmLinkTest, NoCallbacksAfterStopAndStartAgainReconnects) {
  ConnectReady(Options());
  OnLoop([&] {
    link_->Stop();
    EXPECT_FALSE(link_->connected());
    EXPECT_FALSE(link_->Send("late", RecordDone()));
  });
  server_->Send("ignored");  // false once the server noticed the close
  FlushLoop();
  ev_.Read([&] {
    EXPECT_TRUE(ev_.disconnects.empty());
    EXPECT_TRUE(ev_.frames.empty());
    EXPECT_TRUE(ev_.dones.empty());
  });
  OnLoop([&] { link_->Start(); });
  ASSERT_TRUE(server_->WaitForConnection(kWait));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 2; }));
}

TEST_F(GmLinkTest, StopFromOnFrameEndsDeliveryAtOnce) {
  GmLinkCallbacks cb = Callbacks();
  cb.on_frame = [this](std::string text) {
    ev_.Update([&] { ev_.frames.push_back(std::move(text)); });
    if (ev_.Read([&] { return ev_.frames.size(); }) == 10) link_->Stop();
  };
  StartLink(Options(), cb);
  ASSERT_TRUE(server_->WaitForConnection(kWait));
  // Frames after the 10th race the link's Stop(): once it has closed, the server's Send fails.
  for (int i = 0; i < 100; ++i) {
    const bool sent = server_->Send(std::to_string(i));
    if (i < 10) {
      ASSERT_TRUE(sent) << i;
    }
  }
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == 10; }));
  FlushLoop();
  ev_.Read([&] {
    EXPECT_EQ(ev_.frames.size(), 10u);
    EXPECT_TRUE(ev_.disconnects.empty());
  });
}

TEST_F(GmLinkTest, AnInvalidAddressIsReportedAndRetried) {
  GmLinkOptions o = Options();
  o.address = "no-port-here";
  StartLink(o);
  ASSERT_TRUE(ev_.Wait([&] { return ev_.disconnects.size() >= 2; }));
  OnLoop([&] { link_->Stop(); });
  EXPECT_EQ(ev_.Read([&] { return ev_.disconnects[0]; }),
            "invalid GM address 'no-port-here' (want host:port)");
}

// ---------------------------------------------------------------------------------------------
// GmLink against a GM played byte by byte: what the link does with frames a server may send, or
// must not, and with upgrade answers that are not an acceptance.

// Accepts one connection, reads the upgrade request, then writes what the test gives and reads
// what the link sends back, from the test thread (reads give up after kWait).
class RawPeer {
 public:
  std::string address() const { return listener_.address(); }

  // Accepts the link's connection and reads its upgrade request.
  std::string Accept() {
    listener_.acceptor.accept(sock_);
    while (in_.find("\r\n\r\n") == std::string::npos && ReadSome()) {
    }
    const auto end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return "";
    std::string request = in_.substr(0, end + 4);
    in_.erase(0, end + 4);
    key_ = HeaderValue(request, "Sec-WebSocket-Key");
    return request;
  }
  std::string Accepting() const {
    return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Accept: " +
           WebSocketAccept(key_) + "\r\n\r\n";
  }
  void Write(const std::string& bytes) { asio::write(sock_, asio::buffer(bytes)); }
  // Small kernel buffers for the connections accepted after this (set on the listener).
  void SmallBuffers(int bytes) {
    for (int opt : {SO_RCVBUF, SO_SNDBUF}) {
      ::setsockopt(listener_.acceptor.native_handle(), SOL_SOCKET, opt, &bytes, sizeof bytes);
    }
  }
  // Writes `bytes` over and over without blocking until the link stops taking them (no room for
  // `stall`) or `limit` bytes were written; returns how many were.
  size_t WriteUntilStalled(const std::string& bytes, size_t limit, milliseconds stall) {
    size_t total = 0, at = 0;
    while (total < limit) {
      const ssize_t n = ::send(sock_.native_handle(), bytes.data() + at, bytes.size() - at,
                               MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        total += static_cast<size_t>(n);
        at = (at + static_cast<size_t>(n)) % bytes.size();
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
      pollfd p{sock_.native_handle(), POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(stall.count())) == 0) break;
    }
    return total;
  }

  struct Frame {
    FrameHead head;
    std::string payload;  // unmasked
  };
  // The next frame the link wrote; nullopt on EOF or after kWait.
  std::optional<Frame> ReadFrame() {
    for (;;) {
      if (auto h = ParseFrameHead(in_); h && in_.size() >= h->size + h->length) {
        Frame f{*h, in_.substr(h->size, h->length)};
        in_.erase(0, h->size + h->length);
        Unmask(f.head, f.payload);
        return f;
      }
      if (!ReadSome()) return std::nullopt;
    }
  }
  // True when the link closed the connection (EOF) within kWait.
  bool ReadsEof() {
    while (ReadSome()) in_.clear();
    return eof_;
  }

 private:
  bool ReadSome() {
    pollfd p{sock_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kWait.count())) != 1) return false;
    char buf[65536];
    const ssize_t n = ::recv(sock_.native_handle(), buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = n == 0;
      return false;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  SilentListener listener_;
  tcp::socket sock_{listener_.io};
  std::string in_;
  std::string key_;
  bool eof_ = false;
};

// A frame as a server may (unmasked) or may not (`first` byte as given) send it.
std::string RawFrame(uint8_t first, const std::string& payload) {
  std::string f = EncodeFrame(first & 0x0F, payload);
  f[0] = static_cast<char>(first);
  return f;
}
std::string Server(uint8_t opcode, const std::string& payload) {
  return EncodeFrame(opcode, payload);
}
std::string CloseBody(uint16_t code, const std::string& reason) {
  return std::string{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)} + reason;
}

class GmLinkRawTest : public GmLinkTest {
 protected:
  // Starts the link against peer_, answers its upgrade with `answer` and, when it is the
  // acceptance, reads the first frame.
  void Connect(const std::string& answer = "") {
    GmLinkOptions o = Options();
    o.address = peer_.address();
    o.ping_interval = milliseconds(0);
    StartLink(o);
    request_ = peer_.Accept();
    ASSERT_FALSE(request_.empty());
    peer_.Write(answer.empty() ? peer_.Accepting() : answer);
    if (!answer.empty()) return;
    auto first = peer_.ReadFrame();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->payload, kFirstFrame);
    ASSERT_TRUE(ev_.Wait([&] { return ev_.connected == 1; }));
  }
  std::string Disconnect() {
    EXPECT_TRUE(ev_.Wait([&] { return !ev_.disconnects.empty(); }));
    return ev_.Read([&] { return ev_.disconnects.empty() ? "" : ev_.disconnects[0]; });
  }

  RawPeer peer_;
  std::string request_;
};

TEST_F(GmLinkRawTest, EveryFrameIsMaskedWithAKeyOfItsOwn) {
  Connect();
  EXPECT_TRUE(OnLoop([&] {
    const std::string_view two[] = {"same payload", "same payload"};
    return link_->Send(two, RecordDone());
  }));
  auto a = peer_.ReadFrame(), b = peer_.ReadFrame();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->head.masked && b->head.masked && a->head.fin);
  EXPECT_EQ(a->head.opcode, kOpText);
  EXPECT_EQ(a->payload, "same payload");
  EXPECT_EQ(b->payload, "same payload");
  EXPECT_NE(a->head.mask, b->head.mask);
}

TEST_F(GmLinkRawTest, APingIsAnsweredWithItsPayloadAndAFragmentedMessageArrivesWhole) {
  Connect();
  // "hel" + a ping between the fragments + "lo": one message, and the ping answered at once.
  peer_.Write(RawFrame(kOpText, "hel") + Server(kOpPing, "p-1") +
              RawFrame(0x80 | kOpContinuation, "lo") + Server(kOpBinary, "bin"));
  auto pong = peer_.ReadFrame();
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->head.opcode, kOpPong);
  EXPECT_EQ(pong->payload, "p-1");
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == 2; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.frames; }), (std::vector<std::string>{"hello", "bin"}));
  EXPECT_TRUE(ev_.Read([&] { return ev_.disconnects.empty(); }));
}

TEST_F(GmLinkRawTest, FramesThatCameWithTheUpgradeAnswerAreDeliveredAfterOnConnected) {
  GmLinkOptions o = Options();
  o.address = peer_.address();
  o.first_frame.clear();
  StartLink(o);
  ASSERT_FALSE(peer_.Accept().empty());
  peer_.Write(peer_.Accepting() + Server(kOpText, "early-1") + Server(kOpText, "early-2"));
  ASSERT_TRUE(ev_.Wait([&] { return ev_.frames.size() == 2; }));
  EXPECT_EQ(ev_.Read([&] { return ev_.log; }),
            (std::vector<std::string>{"connected", "frame", "frame"}));
}

TEST_F(GmLinkRawTest, ACloseFromTheGmIsEchoedAndReportedWithItsCodeAndReason) {
  Connect();
  peer_.Write(Server(kOpClose, CloseBody(1001, "going away")));
  EXPECT_EQ(Disconnect(), "closed by GM (code 1001: going away)");
  auto echo = peer_.ReadFrame();
  ASSERT_TRUE(echo.has_value());
  EXPECT_EQ(echo->head.opcode, kOpClose);
  EXPECT_EQ(echo->payload, CloseBody(1001, ""));
  EXPECT_TRUE(peer_.ReadsEof());
}

// Each forbidden frame fails the connection with its reason, and the link tells the GM why in a
// close frame with the RFC's code.
TEST_F(GmLinkRawTest, AFrameTheProtocolForbidsFailsTheConnectionWithItsCloseCode) {
  struct Case {
    std::string bytes;
    std::string reason;
    uint16_t code;
  };
  std::string masked = ClientFrame(kOpText, "hi", "abcd");
  const std::vector<Case> cases = {
      {masked, "read: a masked frame from the server", 1002},
      {RawFrame(0x80 | 0x40 | kOpText, "x"), "read: a frame with reserved bits set", 1002},
      {RawFrame(0x80 | kOpContinuation, "x"), "read: an unexpected frame (opcode 0)", 1002},
      {RawFrame(kOpText, "a") + Server(kOpText, "b"), "read: an unexpected frame (opcode 1)", 1002},
      {Server(0x3, "x"), "read: an unexpected frame (opcode 3)", 1002},
      {Server(0xB, "x"), "read: an unknown control frame (opcode 11)", 1002},
      {RawFrame(kOpPing, "x"), "read: a fragmented or long control frame", 1002},
      {Server(kOpPing, std::string(126, 'p')), "read: a fragmented or long control frame", 1002},
      {Server(kOpText, "caf\xC3"), "read: a text message that is not UTF-8", 1007},
      {RawFrame(kOpText, "\xE2\x82") + RawFrame(0x80, "\xAC\xFF"),
       "read: a text message that is not UTF-8", 1007},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].reason + " #" + std::to_string(i));
    RawPeer peer;
    GmLinkOptions o = Options();
    o.address = peer.address();
    o.ping_interval = milliseconds(0);
    o.first_frame.clear();
    Events ev;
    GmLinkCallbacks cb;
    cb.on_frame = [&](std::string text) { ev.Update([&] { ev.frames.push_back(text); }); };
    cb.on_disconnected = [&](std::string r) { ev.Update([&] { ev.disconnects.push_back(r); }); };
    OnLoop([&] {
      link_ = std::make_unique<GmLink>(io_, o, cb);
      link_->Start();
    });
    ASSERT_FALSE(peer.Accept().empty());
    peer.Write(peer.Accepting() + Server(kOpText, "before") + cases[i].bytes);
    ASSERT_TRUE(ev.Wait([&] { return !ev.disconnects.empty(); }));
    OnLoop([&] { link_.reset(); });
    EXPECT_EQ(ev.Read([&] { return ev.disconnects[0]; }), cases[i].reason);
    EXPECT_EQ(ev.Read([&] { return ev.frames; }), std::vector<std::string>{"before"});
    auto close = peer.ReadFrame();
    ASSERT_TRUE(close.has_value());
    EXPECT_EQ(close->head.opcode, kOpClose);
    EXPECT_EQ(close->payload, CloseBody(cases[i].code, ""));
  }
}

TEST_F(GmLinkRawTest, AnUpgradeAnswerThatIsNotAnAcceptanceIsReported) {
  Connect("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(Disconnect(), "handshake " + peer_.address() + ": declined (HTTP 403)");
  // The request was the one Sedna's GM expects (protocol §P1.1).
  EXPECT_EQ(request_.rfind("GET / HTTP/1.1\r\n", 0), 0u);
  EXPECT_EQ(HeaderValue(request_, "Sec-WebSocket-Version"), "13");
  EXPECT_EQ(HeaderValue(request_, "Node-Name"), "edge-node");
  EXPECT_EQ(Base64(std::string(16, '\0')).size(),
            HeaderValue(request_, "Sec-WebSocket-Key").size());
}

TEST_F(GmLinkRawTest, AnAcceptanceForAnotherKeyIsRefused) {
  Connect(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
  EXPECT_EQ(Disconnect(), "handshake " + peer_.address() + ": no Sec-WebSocket-Accept for the key");
}

// A GM that pings and never reads: once the pongs wait behind a write the GM does not take, the
// link stops reading, so the GM's own writes stall, instead of the link queueing pongs without
// bound. When the GM reads again, every ping got its pong, and the link's frames follow.
TEST_F(GmLinkRawTest, AGmThatPingsWithoutReadingIsNotReadEither) {
  peer_.SmallBuffers(64 << 10);
  Connect();
  std::string pings;
  for (int i = 0; i < 512; ++i)
    pings += Server(kOpPing, std::string(125, static_cast<char>('a' + i % 26)));
  const size_t frame = pings.size() / 512;
  const size_t limit = 256u << 20;  // without the stop, the link would take all of it
  const size_t sent = peer_.WriteUntilStalled(pings, limit, 2000ms);
  EXPECT_LT(sent, limit / 4) << "the link kept reading";
  std::printf("the GM stalled after %zu bytes of pings\n", sent);
  EXPECT_TRUE(OnLoop([&] { return link_->Send("after", RecordDone()); }));
  // The pongs of the pings the link had read come first, then "after" among the pongs of those it
  // reads once its writes move again.
  size_t pongs = 0;
  bool after = false;
  while (!after || pongs < sent / frame) {
    auto f = peer_.ReadFrame();
    ASSERT_TRUE(f.has_value()) << pongs << " pongs of " << sent / frame;
    if (f->head.opcode == kOpText) {
      EXPECT_EQ(f->payload, "after");
      after = true;
      continue;
    }
    ASSERT_EQ(f->head.opcode, kOpPong);
    ASSERT_EQ(f->payload, std::string(125, static_cast<char>('a' + pongs % 512 % 26)));
    ++pongs;
  }
  EXPECT_EQ(pongs, sent / frame);  // a ping cut short by the stall is not answered
  EXPECT_TRUE(ev_.Read([&] { return ev_.disconnects.empty(); }));
}

}  // namespace
}  // namespace sedna::gm
