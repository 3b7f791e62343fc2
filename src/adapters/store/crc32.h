// CRC-32 (ISO-HDLC: the polynomial 0xEDB88320 reflected, as zlib and the intake journal's entries
// use it), computed eight bytes at a time (slicing-by-8); the same value as the byte-wise
// algorithm.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sedna::store {

// The CRC of `n` bytes at `p` continued from `crc` (0 to start): Crc32(Crc32(0, a), b) is the CRC
// of a followed by b.
uint32_t Crc32(uint32_t crc, const char* p, size_t n);

}  // namespace sedna::store
