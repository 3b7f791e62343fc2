// The websocket handshake's key check (RFC 6455 §4.2.2): Sec-WebSocket-Accept is
// base64(SHA-1(key + the RFC's GUID)). Self-contained (no OpenSSL: sedna-lc dlopens libcrypto only
// for S3, and its loader offers no SHA-1).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sedna::gm {

// SHA-1 (FIPS 180-4) of `data`.
std::array<uint8_t, 20> Sha1(std::string_view data);
// Standard base64 with padding (RFC 4648 §4).
std::string Base64(std::string_view bytes);
// The Sec-WebSocket-Accept value a server must answer to `key`.
std::string WebSocketAccept(std::string_view key);

}  // namespace sedna::gm
