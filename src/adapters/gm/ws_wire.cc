// The websocket wire format for a byte-level client (ws_wire.h).
#include "adapters/gm/ws_wire.h"

#include <strings.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "adapters/gm/ws_accept.h"
#include "core/ascii.h"
#include "core/utf8.h"

namespace sedna::gm {

std::string UpgradeRequest(const std::string& host, uint16_t port, const std::string& key,
                           const std::string& node_name, const std::string& user_agent) {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "GET / HTTP/1.1\r\nHost: " + h + ":" + std::to_string(port) +
         "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
         "\r\nSec-WebSocket-Version: 13\r\nNode-Name: " + node_name +
         "\r\nUser-Agent: " + user_agent + "\r\n\r\n";
}

std::string HeaderValue(const std::string& head, const std::string& name) {
  std::istringstream in(head);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon != name.size()) continue;
    if (strncasecmp(line.c_str(), name.c_str(), name.size()) != 0) continue;
    std::string v = line.substr(colon + 1);
    const auto b = v.find_first_not_of(" \t");
    const auto e = v.find_last_not_of(" \t");
    return b == std::string::npos ? "" : v.substr(b, e - b + 1);
  }
  return "";
}

std::string EncodeFrame(uint8_t opcode, std::string_view payload, std::string_view mask) {
  const bool masked = mask.size() == 4;
  const uint8_t mask_bit = masked ? 0x80 : 0;
  std::string f;
  f.reserve(payload.size() + 14);
  f.push_back(static_cast<char>(0x80 | opcode));
  const uint64_t n = payload.size();
  if (n < 126) {
    f.push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    f.push_back(static_cast<char>(mask_bit | 126));
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xFF));
  } else {
    f.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8)
      f.push_back(static_cast<char>((n >> shift) & 0xFF));
  }
  if (!masked) return f.append(payload);
  f += mask;
  for (size_t i = 0; i < payload.size(); ++i) f.push_back(payload[i] ^ mask[i % 4]);
  return f;
}

void AppendMaskedFrame(std::string& out, uint8_t opcode, std::string_view payload, uint32_t mask) {
  const uint64_t n = payload.size();
  char head[14];
  size_t h = 0;
  head[h++] = static_cast<char>(kFinBit | opcode);
  if (n < 126) {
    head[h++] = static_cast<char>(0x80 | n);
  } else if (n <= 0xFFFF) {
    head[h++] = static_cast<char>(0x80 | 126);
    head[h++] = static_cast<char>(n >> 8);
    head[h++] = static_cast<char>(n & 0xFF);
  } else {
    head[h++] = static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) head[h++] = static_cast<char>((n >> shift) & 0xFF);
  }
  std::memcpy(head + h, &mask, 4);
  h += 4;
  const size_t at = out.size() + h;
  out.resize(at + n);
  char* dst = out.data();
  std::memcpy(dst + at - h, head, h);
  // The mask repeats every 4 bytes from the payload's start: 8 bytes at a time, then the tail.
  const uint64_t mask8 = uint64_t{mask} | (uint64_t{mask} << 32);
  const char* src = payload.data();
  dst += at;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, src + i, 8);
    w ^= mask8;
    std::memcpy(dst + i, &w, 8);
  }
  const char* m = head + h - 4;
  for (; i < n; ++i) dst[i] = static_cast<char>(src[i] ^ m[i % 4]);
}

std::string CheckUpgradeResponse(const std::string& head, std::string_view key) {
  const std::string status = head.substr(0, head.find_first_of("\r\n"));
  if (status.rfind("HTTP/1.1 ", 0) != 0 || status.size() < 12) {
    return "not an HTTP/1.1 response";
  }
  if (status.compare(9, 3, "101") != 0) return "declined (HTTP " + status.substr(9, 3) + ")";
  const auto lower = [](const std::string& v) { return core::AsciiLowered(v); };
  if (lower(HeaderValue(head, "Upgrade")) != "websocket") return "no \"Upgrade: websocket\"";
  // Connection is a comma-separated token list: one of them must be "upgrade".
  bool upgrade = false;
  std::string tokens = lower(HeaderValue(head, "Connection")) + ",";
  for (size_t b = 0, e; (e = tokens.find(',', b)) != std::string::npos; b = e + 1) {
    std::string t = tokens.substr(b, e - b);
    const auto f = t.find_first_not_of(" \t");
    const auto l = t.find_last_not_of(" \t");
    if (f != std::string::npos && t.substr(f, l - f + 1) == "upgrade") upgrade = true;
  }
  if (!upgrade) return "no \"Connection: Upgrade\"";
  if (HeaderValue(head, "Sec-WebSocket-Accept") != WebSocketAccept(key)) {
    return "no Sec-WebSocket-Accept for the key";
  }
  // Nothing was offered: an extension or subprotocol in the answer is not one we can speak.
  if (!HeaderValue(head, "Sec-WebSocket-Extensions").empty()) return "an extension not offered";
  if (!HeaderValue(head, "Sec-WebSocket-Protocol").empty()) return "a subprotocol not offered";
  return "";
}

MessageReader::Event MessageReader::Next(std::string_view buf, size_t& consumed) {
  consumed = 0;
  Event ev;
  const auto refuse = [&ev](uint16_t code, std::string what) {
    ev.kind = Event::kRefused;
    ev.code = code;
    ev.payload = std::move(what);
    return ev;
  };
  for (;;) {
    const std::string_view rest = buf.substr(consumed);
    const auto h = ParseFrameHead(rest);
    if (!h) {
      ev.need = rest.size() < 2 ? 2 - rest.size() : 1;
      return ev;
    }
    if ((static_cast<uint8_t>(rest[0]) & kReservedBits) != 0) {
      return refuse(1002, "a frame with reserved bits set");
    }
    if (h->masked) return refuse(1002, "a masked frame from the server");
    const bool control = (h->opcode & 0x8) != 0;
    const bool continuation = h->opcode == kOpContinuation;
    if (control) {
      if (!h->fin || h->length > 125) return refuse(1002, "a fragmented or long control frame");
      if (h->opcode != kOpPing && h->opcode != kOpPong && h->opcode != kOpClose) {
        return refuse(1002, "an unknown control frame (opcode " + std::to_string(h->opcode) + ")");
      }
    } else if (continuation != in_message_ ||
               (!continuation && h->opcode != kOpText && h->opcode != kOpBinary)) {
      return refuse(1002, "an unexpected frame (opcode " + std::to_string(h->opcode) + ")");
    } else if (h->length > max_ - message_.size()) {
      return refuse(1009, "frame over the " + std::to_string(max_) + "-byte limit");
    }
    if (rest.size() - h->size < h->length) {
      ev.need = static_cast<size_t>(h->length - (rest.size() - h->size));
      return ev;
    }
    const std::string_view payload = rest.substr(h->size, static_cast<size_t>(h->length));
    consumed += h->size + payload.size();
    if (control) {
      if (h->opcode == kOpClose) {
        const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
        ev.kind = Event::kClose;
        ev.code = payload.size() >= 2 ? static_cast<uint16_t>((p[0] << 8) | p[1]) : 1005;
        ev.payload.assign(payload.substr(std::min<size_t>(2, payload.size())));
      } else {
        ev.kind = h->opcode == kOpPing ? Event::kPing : Event::kPong;
        ev.payload.assign(payload);
      }
      return ev;
    }
    if (!continuation) text_ = h->opcode == kOpText;
    if (!h->fin) {
      message_.append(payload);
      in_message_ = true;
      continue;
    }
    if (in_message_) {
      message_.append(payload);
      ev.payload.swap(message_);
      in_message_ = false;
    } else {
      ev.payload.assign(payload);
    }
    if (text_ && !core::IsValidUtf8(ev.payload)) {
      return refuse(1007, "a text message that is not UTF-8");
    }
    ev.kind = Event::kMessage;
    ev.text = text_;
    return ev;
  }
}

std::optional<FrameHead> ParseFrameHead(std::string_view buf) {
  if (buf.size() < 2) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
  FrameHead h;
  h.fin = (p[0] & 0x80) != 0;
  h.opcode = p[0] & 0x0F;
  h.masked = (p[1] & 0x80) != 0;
  h.length = p[1] & 0x7F;
  h.size = 2;
  if (h.length == 126) {
    if (buf.size() < 4) return std::nullopt;
    h.length = (uint64_t{p[2]} << 8) | p[3];
    h.size = 4;
  } else if (h.length == 127) {
    if (buf.size() < 10) return std::nullopt;
    h.length = 0;
    for (int i = 0; i < 8; ++i) h.length = (h.length << 8) | p[2 + i];
    h.size = 10;
  }
  if (h.masked) {
    if (buf.size() < h.size + 4) return std::nullopt;
    for (size_t i = 0; i < 4; ++i) h.mask[i] = p[h.size + i];
    h.size += 4;
  }
  return h;
}

void Unmask(const FrameHead& head, std::string& payload) {
  if (!head.masked) return;
  for (size_t i = 0; i < payload.size(); ++i) payload[i] ^= static_cast<char>(head.mask[i % 4]);
}

std::optional<ServerFrame> TakeFrame(std::string& buf, uint64_t& skip) {
  const auto h = ParseFrameHead(buf);
  if (!h) return std::nullopt;
  // A masked server frame is tolerated: its payload is left masked.
  if (h->length > (1u << 20)) {
    // Too big to keep: report it as received and discard its bytes as they come.
    ServerFrame f{h->opcode, {}};
    const uint64_t have = buf.size() - h->size;
    skip = h->length > have ? h->length - have : 0;
    buf.erase(0, h->size + std::min<uint64_t>(h->length, have));
    return f;
  }
  if (buf.size() - h->size < h->length) return std::nullopt;
  ServerFrame f{h->opcode, buf.substr(h->size, h->length)};
  buf.erase(0, h->size + h->length);
  return f;
}

}  // namespace sedna::gm
