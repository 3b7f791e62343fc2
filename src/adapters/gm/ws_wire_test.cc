// The byte-level websocket format of ws_wire.h: frames both ways and the upgrade's text.
#include "adapters/gm/ws_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

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

TEST(WsWireTest, AppendMaskedFrameIsClientFrameAtEveryLengthFormAndOffset) {
  const uint32_t mask = 0x9A3C5EF1;
  char m[4];
  std::memcpy(m, &mask, 4);
  for (size_t n : {0, 1, 7, 8, 9, 125, 126, 127, 1000, 65535, 65536, 70001}) {
    std::string payload(n, '\0');
    for (size_t i = 0; i < n; ++i) payload[i] = static_cast<char>(i * 131 + 7);
    for (size_t before : {0, 3}) {
      std::string out(before, '#');
      AppendMaskedFrame(out, kOpText, payload, mask);
      EXPECT_EQ(out, std::string(before, '#') + ClientFrame(kOpText, payload, std::string(m, 4)))
          << n << " " << before;
    }
  }
}

TEST(WsWireTest, CheckUpgradeResponseAcceptsOnlyTheAnswerToItsKey) {
  const std::string key = "dGhlIHNhbXBsZSBub25jZQ==";  // RFC 6455 §1.3's example
  const std::string ok =
      "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\nConnection: keep-alive, "
      "Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
  EXPECT_EQ(CheckUpgradeResponse(ok, key), "");
  struct Case {
    std::string head, why;
  };
  const std::vector<Case> cases = {
      {"HTTP/1.1 403 Forbidden\r\n\r\n", "declined (HTTP 403)"},
      {"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.1 response"},
      {"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
       "no \"Upgrade: websocket\""},
      {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgraded\r\n"
       "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
       "no \"Connection: Upgrade\""},
      {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Accept: AAAPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
       "no Sec-WebSocket-Accept for the key"},
      {ok.substr(0, ok.size() - 2) + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
       "an extension not offered"},
      {ok.substr(0, ok.size() - 2) + "Sec-WebSocket-Protocol: chat\r\n\r\n",
       "a subprotocol not offered"},
  };
  for (const auto& c : cases) EXPECT_EQ(CheckUpgradeResponse(c.head, key), c.why) << c.head;
}

// MessageReader fed one byte at a time gives the same events as fed everything at once.
TEST(WsWireTest, MessageReaderGivesTheSameEventsWhateverTheBytesArriveIn) {
  std::string close_body =
      "\x03\xE9"
      "bye";  // 1001
  const std::string stream = ServerBytes(kOpText, "one") + std::string("\x01\x02he", 4) +
                             ServerBytes(kOpPing, "p") + std::string("\x80\x03llo", 5) +
                             ServerBytes(kOpBinary, std::string(300, 'b')) +
                             ServerBytes(kOpPong, "") + ServerBytes(kOpClose, close_body);
  auto events = [&](size_t step) {
    MessageReader r(1000);
    std::vector<std::string> out;
    std::string buf;
    size_t fed = 0;
    for (;;) {
      size_t used = 0;
      auto ev = r.Next(buf, used);
      buf.erase(0, used);
      if (ev.kind == MessageReader::Event::kNeedMore) {
        EXPECT_GE(ev.need, 1u);
        if (fed == stream.size()) break;
        buf += stream.substr(fed, step);
        fed = std::min(stream.size(), fed + step);
        continue;
      }
      out.push_back(std::to_string(ev.kind) + (ev.text ? "t:" : ":") + ev.payload + ":" +
                    std::to_string(ev.code));
    }
    EXPECT_TRUE(buf.empty());
    return out;
  };
  const std::vector<std::string> want = {
      "1t:one:0", "2:p:0", "1t:hello:0", "1:" + std::string(300, 'b') + ":0", "3::0", "4:bye:1001"};
  EXPECT_EQ(events(stream.size()), want);
  EXPECT_EQ(events(1), want);
  EXPECT_EQ(events(7), want);
}

TEST(WsWireTest, MessageReaderRefusesAMessageOverItsLimitAtTheHeadOfTheFrame) {
  MessageReader r(10);
  size_t used = 0;
  EXPECT_EQ(r.Next(std::string("\x01\x06"
                               "123456",
                               8),
                   used)
                .kind,
            MessageReader::Event::kNeedMore);  // 6 bytes kept, non-final
  EXPECT_EQ(used, 8u);
  // Another 5 would make 11: refused from its two head bytes alone, its payload never read.
  auto ev = r.Next(std::string("\x80\x05", 2), used);
  EXPECT_EQ(ev.kind, MessageReader::Event::kRefused);
  EXPECT_EQ(ev.code, 1009);
  EXPECT_EQ(ev.payload, "frame over the 10-byte limit");
  MessageReader exact(10);
  auto ok = exact.Next(ServerBytes(kOpText, std::string(10, 'x')), used);
  EXPECT_EQ(ok.kind, MessageReader::Event::kMessage);
}

}  // namespace
}  // namespace sedna::gm
