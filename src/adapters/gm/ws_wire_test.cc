// The byte-level websocket format of ws_wire.h: frames both ways and the upgrade's text.
#include "adapters/gm/ws_wire.h"

#include <gtest/gtest.h>

#include <string>

namespace sedna::gm {
namespace {

// A server frame as the GM would send it (unmasked, FIN set).
std::string ServerBytes(uint8_t opcode, const std::string& payload) {
  std::string f(1, static_cast<char>(0x80 | opcode));
  const uint64_t n = payload.size();
  if (n < 126) {
    f.push_back(static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    f.push_back(static_cast<char>(126));
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xFF));
  } else {
    f.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8)
      f.push_back(static_cast<char>((n >> shift) & 0xFF));
  }
  return f + payload;
}

TEST(WsWireTest, TakeFrameReadsEachLengthForm) {
  for (size_t n : {size_t{0}, size_t{125}, size_t{126}, size_t{65535}, size_t{65536}}) {
    const std::string payload(n, 'x');
    std::string buf = ServerBytes(kOpText, payload) + ServerBytes(kOpPing, "p");
    uint64_t skip = 0;
    // Every strict prefix of the first frame is incomplete.
    std::string part = buf.substr(0, buf.size() - 3 - 1);
    EXPECT_FALSE(TakeFrame(part, skip).has_value()) << n;
    auto f = TakeFrame(buf, skip);
    ASSERT_TRUE(f.has_value()) << n;
    EXPECT_EQ(f->opcode, kOpText);
    EXPECT_EQ(f->payload, payload);
    EXPECT_EQ(skip, 0u);
    auto g = TakeFrame(buf, skip);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->opcode, kOpPing);
    EXPECT_EQ(g->payload, "p");
    EXPECT_TRUE(buf.empty());
  }
}

TEST(WsWireTest, TakeFrameSkipsAPayloadOver1MiB) {
  const size_t n = (1u << 20) + 10;
  std::string buf = ServerBytes(kOpBinary, std::string(n, 'y')).substr(0, 10 + 100);
  uint64_t skip = 0;
  auto f = TakeFrame(buf, skip);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, kOpBinary);
  EXPECT_TRUE(f->payload.empty());
  EXPECT_EQ(skip, n - 100);
  EXPECT_TRUE(buf.empty());
}

TEST(WsWireTest, ClientFrameIsMaskedWithTheGivenMask) {
  const std::string mask("\x01\x02\x03\x04", 4);
  for (size_t n : {size_t{3}, size_t{300}, size_t{70000}}) {
    const std::string payload(n, 'a');
    const std::string f = ClientFrame(kOpText, payload, mask);
    EXPECT_EQ(static_cast<unsigned char>(f[0]), 0x81);
    EXPECT_TRUE(static_cast<unsigned char>(f[1]) & 0x80);  // masked
    const size_t off = n < 126 ? 2 : n <= 0xFFFF ? 4 : 10;
    ASSERT_EQ(f.size(), off + 4 + n);
    EXPECT_EQ(f.substr(off, 4), mask);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(f[off + 4 + i] ^ mask[i % 4], 'a') << i;
    // Read back as a (masked) frame: same length and opcode.
    std::string buf = f;
    uint64_t skip = 0;
    auto g = TakeFrame(buf, skip);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->opcode, kOpText);
    EXPECT_EQ(g->payload.size(), n);
  }
}

TEST(WsWireTest, EncodeFrameWithoutAMaskIsAServerFrame) {
  for (size_t n : {size_t{0}, size_t{125}, size_t{126}, size_t{65535}, size_t{65536}}) {
    const std::string payload(n, 'z');
    EXPECT_EQ(EncodeFrame(kOpText, payload), ServerBytes(kOpText, payload)) << n;
  }
}

// A client's frame read back the way a server reads it: the head's fields, then the payload
// unmasked; every strict prefix of the head is incomplete.
TEST(WsWireTest, ParseFrameHeadAndUnmaskReadAClientFrame) {
  const std::string mask("\x11\x22\x33\x44", 4);
  for (size_t n : {size_t{5}, size_t{126}, size_t{70000}}) {
    const std::string payload(n, 'q');
    const std::string f = EncodeFrame(kOpBinary, payload, mask);
    const size_t head_size = (n < 126 ? 2 : n <= 0xFFFF ? 4 : 10) + 4;
    for (size_t k = 0; k < head_size; ++k) {
      EXPECT_FALSE(ParseFrameHead(std::string_view(f).substr(0, k)).has_value()) << n << " " << k;
    }
    auto h = ParseFrameHead(f);
    ASSERT_TRUE(h.has_value()) << n;
    EXPECT_TRUE(h->fin);
    EXPECT_EQ(h->opcode, kOpBinary);
    EXPECT_TRUE(h->masked);
    EXPECT_EQ(h->length, n);
    EXPECT_EQ(h->size, head_size);
    EXPECT_EQ(std::string(h->mask.begin(), h->mask.end()), mask);
    std::string body = f.substr(h->size);
    ASSERT_EQ(body.size(), n);
    Unmask(*h, body);
    EXPECT_EQ(body, payload);
  }
  // FIN clear (the first fragment of a message), unmasked: the head says so, Unmask is a no-op.
  const std::string fragment("\x01\x02hi", 4);
  auto h = ParseFrameHead(fragment);
  ASSERT_TRUE(h.has_value());
  EXPECT_FALSE(h->fin);
  EXPECT_EQ(h->opcode, kOpText);
  EXPECT_FALSE(h->masked);
  EXPECT_EQ(h->size, 2u);
  std::string body = "hi";
  Unmask(*h, body);
  EXPECT_EQ(body, "hi");
}

TEST(WsWireTest, UpgradeRequestAndHeaderValue) {
  const std::string req = UpgradeRequest("::1", 9000, "a2V5", "node-1", "sedna-lc doctor");
  EXPECT_EQ(req,
            "GET / HTTP/1.1\r\nHost: [::1]:9000\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\nNode-Name: node-1\r\n"
            "User-Agent: sedna-lc doctor\r\n\r\n");
  const std::string head =
      "HTTP/1.1 101 Switching Protocols\r\nsec-websocket-accept:  abc= \t\r\nX: 1\r\n";
  EXPECT_EQ(HeaderValue(head, "Sec-WebSocket-Accept"), "abc=");
  EXPECT_EQ(HeaderValue(head, "X"), "1");
  EXPECT_EQ(HeaderValue(head, "Missing"), "");
}

}  // namespace
}  // namespace sedna::gm
