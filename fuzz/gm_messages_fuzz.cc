// What the GM's side of the websocket sends the link, after the upgrade: gm::MessageReader on
// arbitrary bytes, fed in slices.
//
// Byte 0 picks the slice size (1 + b % 64) and byte 1 the message limit (16 << (b % 8) bytes);
// the rest is the stream. The same stream is also read whole.
//
// Invariants: each event consumes no more than it was given, and kNeedMore asks for at least one
// byte; a message never exceeds the limit; a text message is UTF-8 by a decoder of the harness's
// own; a close code comes with at most 123 bytes of reason, and a ping or pong at most 125 bytes;
// nothing follows a refusal; read in slices or whole, the events are the same.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/gm/ws_wire.h"
#include "fuzz_check.h"

namespace {

using sedna::gm::MessageReader;
using Event = MessageReader::Event;

// UTF-8 by decoding each code point: no overlong form, no surrogate, nothing above U+10FFFF.
bool Utf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = c;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

std::vector<std::string> Read(std::string_view stream, size_t slice, size_t limit) {
  MessageReader reader(limit);
  std::vector<std::string> events;
  std::string buf;
  size_t fed = 0;
  for (;;) {
    size_t used = 0;
    Event ev = reader.Next(buf, used);
    FUZZ_CHECK(used <= buf.size(), "consumed more than given");
    buf.erase(0, used);
    if (ev.kind == Event::kNeedMore) {
      FUZZ_CHECK(ev.need >= 1, "asked for nothing");
      if (fed == stream.size()) break;
      const size_t n = std::min(slice, stream.size() - fed);
      buf.append(stream.substr(fed, n));
      fed += n;
      continue;
    }
    switch (ev.kind) {
      case Event::kMessage:
        FUZZ_CHECK(ev.payload.size() <= limit, "message over the limit");
        if (ev.text) FUZZ_CHECK(Utf8(ev.payload), "text message not UTF-8");
        break;
      case Event::kPing:
      case Event::kPong:
        FUZZ_CHECK(ev.payload.size() <= 125, "long control payload");
        break;
      case Event::kClose:
        FUZZ_CHECK(ev.payload.size() <= 123, "long close reason");
        break;
      default:
        break;
    }
    events.push_back(std::to_string(ev.kind) + (ev.text ? "t" : "b") + std::to_string(ev.code) +
                     ":" + ev.payload);
    if (ev.kind == Event::kRefused) break;  // the connection ends: nothing is read after it
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t slice = 1 + data[0] % 64;
  const size_t limit = size_t{16} << (data[1] % 8);
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);
  const auto sliced = Read(stream, slice, limit);
  const auto whole = Read(stream, stream.size() + 1, limit);
  FUZZ_CHECK(sliced == whole, "slices and whole disagree");
  return 0;
}
