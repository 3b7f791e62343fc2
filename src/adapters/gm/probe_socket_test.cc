// The probe's blocking socket steps against real sockets on 127.0.0.1: resolve, connect
// (accepted and refused), send and receive with their deadline, end of stream.
#include "adapters/gm/probe_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace sedna::gm {
namespace {

using std::chrono::milliseconds;

// A TCP socket bound to 127.0.0.1 on a free port, listening unless told not to; port 0 if any of
// that failed (each test asserts it did not).
struct LocalSocket {
  int fd = -1;
  uint16_t port = 0;
  explicit LocalSocket(bool listen = true) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
        (!listen || ::listen(fd, 4) == 0)) {
      port = ntohs(a.sin_port);
    }
  }
  ~LocalSocket() { ::close(fd); }
};

Resolved Loopback(uint16_t port) {
  auto r = ResolveWithin("127.0.0.1", port, milliseconds(3000));
  EXPECT_TRUE(r.has_value());
  return r.value_or(Resolved{});
}

// A client connected with ConnectWithin to a listening LocalSocket, and the server's end of it.
class ProbeConnection : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(server_.port, 0);
    Resolved r = Loopback(server_.port);
    ASSERT_EQ(r.addrs.size(), 1u);
    ASSERT_EQ(ConnectWithin(r.addrs[0], r.lens[0], milliseconds(3000), fd_), 0);
    ASSERT_GE(fd_, 0);
    peer_ = ::accept(server_.fd, nullptr, nullptr);
    ASSERT_GE(peer_, 0);
  }
  void TearDown() override {
    if (peer_ >= 0) ::close(peer_);
    if (fd_ >= 0) ::close(fd_);
  }
  LocalSocket server_;
  int fd_ = -1;    // the client's socket
  int peer_ = -1;  // the server's end (blocking)
};

TEST(ProbeSocket, ResolvesANumericAddressAndNamesIt) {
  Resolved r = Loopback(9000);
  EXPECT_EQ(r.error, 0);
  ASSERT_EQ(r.addrs.size(), 1u);
  ASSERT_EQ(r.lens.size(), 1u);
  EXPECT_EQ(r.addrs[0].ss_family, AF_INET);
  EXPECT_EQ(NumericHost(r.addrs[0], r.lens[0]), "127.0.0.1");
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(&r.addrs[0])->sin_port), 9000);
}

TEST(ProbeSocket, ResolvesLocalhostToLoopbackAddresses) {
  auto r = ResolveWithin("localhost", 9000, milliseconds(3000));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->error, 0);
  ASSERT_FALSE(r->addrs.empty());
  ASSERT_EQ(r->addrs.size(), r->lens.size());
  for (size_t i = 0; i < r->addrs.size(); ++i) {
    const std::string n = NumericHost(r->addrs[i], r->lens[i]);
    EXPECT_TRUE(n == "127.0.0.1" || n == "::1") << n;
  }
}

TEST_F(ProbeConnection, SendsAndReceivesUntilEndOfStream) {
  const auto deadline = ProbeClock::now() + milliseconds(3000);
  ASSERT_TRUE(SendAllBy(fd_, "ping", deadline));
  char got[4] = {0};
  ASSERT_EQ(::recv(peer_, got, sizeof got, MSG_WAITALL), 4);
  EXPECT_EQ(std::string(got, 4), "ping");

  std::string buf = "x";
  ASSERT_EQ(::send(peer_, "pong", 4, 0), 4);
  EXPECT_EQ(RecvSomeBy(fd_, buf, deadline), 4);
  EXPECT_EQ(buf, "xpong");  // appended

  // Nothing more arrives: the deadline ends the wait, and nothing is appended.
  EXPECT_EQ(RecvSomeBy(fd_, buf, ProbeClock::now() + milliseconds(50)), kRecvTimeout);
  EXPECT_EQ(buf, "xpong");

  ::close(peer_);
  peer_ = -1;
  EXPECT_EQ(RecvSomeBy(fd_, buf, deadline), kRecvEof);
}

TEST(ProbeSocket, APortNobodyListensOnIsRefused) {
  LocalSocket bound_only(/*listen=*/false);  // holds the port so nothing else takes it
  ASSERT_NE(bound_only.port, 0);
  Resolved r = Loopback(bound_only.port);
  ASSERT_EQ(r.addrs.size(), 1u);
  int fd = -1;
  EXPECT_EQ(ConnectWithin(r.addrs[0], r.lens[0], milliseconds(3000), fd), ECONNREFUSED);
  EXPECT_EQ(fd, -1);  // untouched on failure
}

TEST_F(ProbeConnection, ASendThePeerNeverReadsStopsAtTheDeadline) {
  // Far more than both sockets' buffers hold: the send must block, then give up.
  const std::string big(64 << 20, 'x');
  errno = 0;
  EXPECT_FALSE(SendAllBy(fd_, big, ProbeClock::now() + milliseconds(100)));
  EXPECT_EQ(errno, ETIMEDOUT);
}

TEST(ProbeSocket, RandomBytesHaveTheLengthAskedAndDiffer) {
  const std::string a = RandomBytes(16), b = RandomBytes(16);
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(b.size(), 16u);
  EXPECT_NE(a, b);  // equal with probability 2^-128
  EXPECT_TRUE(RandomBytes(0).empty());
}

}  // namespace
}  // namespace sedna::gm
