#include "adapters/store/crc32.h"

#include <array>
#include <cstring>

namespace sedna::store {
namespace {

using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

// t[0] is the byte-wise table; t[k][i] is the CRC of byte i followed by k zero bytes.
constexpr CrcTables MakeCrcTables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}
constexpr CrcTables kCrcTables = MakeCrcTables();

}  // namespace

uint32_t Crc32(uint32_t crc, const char* p, size_t n) {
  const auto& t = kCrcTables;
  crc = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo, hi;  // little-endian words, as the byte order of the table expects
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) {
      lo = __builtin_bswap32(lo);
      hi = __builtin_bswap32(hi);
    }
    lo ^= crc;
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ static_cast<unsigned char>(*p)) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

}  // namespace sedna::store
