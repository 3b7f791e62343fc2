// The websocket wire format for a byte-level client (ws_wire.h).
#include "adapters/gm/ws_wire.h"

#include <strings.h>

#include <algorithm>
#include <sstream>

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
