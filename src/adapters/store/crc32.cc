#include "adapters/store/crc32.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

namespace sedna::store {
namespace {

using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

// t[0] is the byte-wise table of the reflected `poly`; t[k][i] is the CRC of byte i followed by k
// zero bytes.
constexpr CrcTables MakeCrcTables(uint32_t poly) {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? poly ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}
constexpr CrcTables kCrcTables = MakeCrcTables(0xEDB88320u);
constexpr CrcTables kCrc32cTables = MakeCrcTables(0x82F63B78u);

uint32_t Sliced(const CrcTables& t, uint32_t crc, const char* p, size_t n) {
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

#if defined(__x86_64__)
bool CpuHasCrc32c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_SSE4_2) != 0;
}
__attribute__((target("sse4.2"))) uint32_t Hardware(uint32_t crc, const char* p, size_t n) {
  uint64_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p));
  return ~c32;
}
#elif defined(__aarch64__)
bool CpuHasCrc32c() { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
__attribute__((target("+crc"))) uint32_t Hardware(uint32_t crc, const char* p, size_t n) {
  uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = __crc32cd(c, w);
  }
  for (; n > 0; --n, ++p) c = __crc32cb(c, static_cast<unsigned char>(*p));
  return ~c;
}
#else
bool CpuHasCrc32c() { return false; }
uint32_t Hardware(uint32_t crc, const char* p, size_t n) { return Crc32cPortable(crc, p, n); }
#endif

// Read once, at the first Crc32c (a static's initialization is thread-safe).
bool UseHardware() {
  static const bool use = CpuHasCrc32c();
  return use;
}

}  // namespace

uint32_t Crc32(uint32_t crc, const char* p, size_t n) { return Sliced(kCrcTables, crc, p, n); }

uint32_t Crc32cPortable(uint32_t crc, const char* p, size_t n) {
  return Sliced(kCrc32cTables, crc, p, n);
}

uint32_t Crc32c(uint32_t crc, const char* p, size_t n) {
  return UseHardware() ? Hardware(crc, p, n) : Crc32cPortable(crc, p, n);
}

bool Crc32cInHardware() { return UseHardware(); }

}  // namespace sedna::store
