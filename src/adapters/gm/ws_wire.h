// The websocket wire format (RFC 6455) for code that handles the bytes itself: the upgrade
// request, reading its answer, and frames both ways. It serves the GM link (gm_link.h), which
// writes a batch of frames in one send and answers the GM's pings in its own write queue,
// `sedna-lc doctor`'s probe of the GM (app/cli/gm_diagnosis.h), which must see each step's bytes
// to say where a connect fails, and the tests' GM emulator (tests/support/ws_test_server.h),
// which must be able to stop reading. Pure: no sockets, no randomness (the caller passes the key
// and masks).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sedna::gm {

// Frame opcodes (RFC 6455 §5.2).
inline constexpr uint8_t kOpText = 0x1;
inline constexpr uint8_t kOpBinary = 0x2;
inline constexpr uint8_t kOpClose = 0x8;
inline constexpr uint8_t kOpPing = 0x9;
inline constexpr uint8_t kOpPong = 0xA;

// `GET / HTTP/1.1` asking to upgrade to websocket version 13 with `key` (base64 of 16 bytes),
// for `host` (an IPv6 address gets brackets) and `port`, with the LC's `Node-Name` header and
// `user_agent`.
std::string UpgradeRequest(const std::string& host, uint16_t port, const std::string& key,
                           const std::string& node_name, const std::string& user_agent);

// The value of the first header field `name` (case-insensitive) in an HTTP head (lines ending
// "\r\n" or "\n"), without surrounding spaces and tabs; "" when absent.
std::string HeaderValue(const std::string& head, const std::string& name);

inline constexpr uint8_t kOpContinuation = 0x0;

// A frame with FIN set: masked with `mask`'s 4 bytes, as a client sends it, or unmasked, as a
// server does, when `mask` is empty.
std::string EncodeFrame(uint8_t opcode, std::string_view payload, std::string_view mask = {});

// A masked (client-to-server) frame with FIN set; `mask` is its 4 masking bytes.
inline std::string ClientFrame(uint8_t opcode, std::string_view payload, std::string_view mask) {
  return EncodeFrame(opcode, payload, mask.substr(0, 4));
}

// Appends to `out` a client frame with FIN set, masked with `mask` (its 4 bytes in memory order):
// the bytes ClientFrame(opcode, payload, <those 4 bytes>) returns, without a temporary.
void AppendMaskedFrame(std::string& out, uint8_t opcode, std::string_view payload, uint32_t mask);

// Whether the answer to an upgrade request with `key` accepts it (RFC 6455 §4.1): `head` is the
// response through its blank line. "" when it does; otherwise what is wrong, e.g.
// "declined (HTTP 403)" or "no Sec-WebSocket-Accept for the key".
std::string CheckUpgradeResponse(const std::string& head, std::string_view key);

// Bits of a frame's first byte.
inline constexpr uint8_t kFinBit = 0x80;
inline constexpr uint8_t kReservedBits = 0x70;  // RSV1-3: no extension is negotiated

// What a frame's first bytes say.
struct FrameHead {
  bool fin = false;
  uint8_t opcode = 0;
  bool masked = false;
  std::array<uint8_t, 4> mask{};
  uint64_t length = 0;  // of the payload
  size_t size = 0;      // of the head: 2 to 14 bytes, the mask included
};

// The head of the frame at the front of `buf`; nullopt when more bytes are needed.
std::optional<FrameHead> ParseFrameHead(std::string_view buf);

// XORs `payload` (a masked frame's, from its start) with the head's mask.
void Unmask(const FrameHead& head, std::string& payload);

// Reads what a server sends (RFC 6455 §5), the client's side of a connection: data messages
// (their fragments joined, text checked for UTF-8), control frames, and what the protocol
// forbids. Pure: the caller reads the bytes and keeps them until they are consumed.
class MessageReader {
 public:
  struct Event {
    enum Kind {
      kNeedMore,  // `need`: at least this many more bytes before the next event
      kMessage,   // a whole data message: `payload`, `text` or binary
      kPing,      // `payload`: to answer with a pong
      kPong,
      kClose,    // `code` (1005 when the frame had none), `payload` its reason
      kRefused,  // a frame the protocol forbids: `payload` says what, `code` is the close code to
                 // answer with (1002 protocol error, 1007 not UTF-8, 1009 too big)
    };
    Kind kind = kNeedMore;
    std::string payload;
    bool text = false;
    uint16_t code = 0;
    size_t need = 0;
  };

  // Messages longer than `max_message_bytes` (fragments together) are refused at the head of the
  // frame that would take them over it, before its payload is read.
  explicit MessageReader(size_t max_message_bytes) : max_(max_message_bytes) {}

  // The next event at the front of `buf`; `consumed` is set to how many of its bytes it used,
  // which the caller drops before the next call. After kRefused the connection must end.
  Event Next(std::string_view buf, size_t& consumed);

 private:
  size_t max_;
  std::string message_;  // the fragments of a data message read so far
  bool in_message_ = false;
  bool text_ = false;
};

struct ServerFrame {
  uint8_t opcode = 0;
  std::string payload;  // left masked if the server masked it; empty if over 1 MiB
};

// Takes one complete frame off the front of `buf`; nullopt when more bytes are needed. A frame
// whose payload is over 1 MiB is returned at once without its payload: the bytes of it already
// in `buf` are dropped and `skip` is set to how many more are still to come, for the caller to
// discard before taking the next frame.
std::optional<ServerFrame> TakeFrame(std::string& buf, uint64_t& skip);

}  // namespace sedna::gm
