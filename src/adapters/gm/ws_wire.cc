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

std::string ClientFrame(uint8_t opcode, std::string_view payload, std::string_view mask) {
  std::string f;
  f.push_back(static_cast<char>(0x80 | opcode));
  const uint64_t n = payload.size();
  if (n < 126) {
    f.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xFFFF) {
    f.push_back(static_cast<char>(0x80 | 126));
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xFF));
  } else {
    f.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8)
      f.push_back(static_cast<char>((n >> shift) & 0xFF));
  }
  f += mask.substr(0, 4);
  for (size_t i = 0; i < payload.size(); ++i) f.push_back(payload[i] ^ mask[i % 4]);
  return f;
}

std::optional<ServerFrame> TakeFrame(std::string& buf, uint64_t& skip) {
  if (buf.size() < 2) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
  uint64_t len = p[1] & 0x7F;
  size_t off = 2;
  if (len == 126) {
    if (buf.size() < 4) return std::nullopt;
    len = (uint64_t{p[2]} << 8) | p[3];
    off = 4;
  } else if (len == 127) {
    if (buf.size() < 10) return std::nullopt;
    len = 0;
    for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
    off = 10;
  }
  if (p[1] & 0x80) off += 4;  // a masked server frame: tolerated, payload left masked
  if (len > (1u << 20)) {
    // Too big to keep: report it as received and discard its bytes as they come.
    ServerFrame f{static_cast<uint8_t>(p[0] & 0x0F), {}};
    if (buf.size() < off) return std::nullopt;
    const uint64_t have = buf.size() - off;
    skip = len > have ? len - have : 0;
    buf.erase(0, off + std::min<uint64_t>(len, have));
    return f;
  }
  if (buf.size() < off + len) return std::nullopt;
  ServerFrame f{static_cast<uint8_t>(p[0] & 0x0F), buf.substr(off, len)};
  buf.erase(0, off + len);
  return f;
}

}  // namespace sedna::gm
