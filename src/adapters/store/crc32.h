// CRC-32 (ISO-HDLC: the polynomial 0xEDB88320 reflected, as zlib uses it) and CRC-32C
// (Castagnoli: 0x82F63B78 reflected, as iSCSI, ext4 and leveldb's log records use it), each the
// same value as its byte-wise algorithm. Crc32 runs eight bytes at a time (slicing-by-8). Crc32c
// uses the CPU's CRC-32C instruction when it has one (x86-64 SSE4.2, arm64's CRC extension),
// checked once at run time, else slicing-by-8 (Crc32cPortable).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sedna::store {

// The CRC of `n` bytes at `p` continued from `crc` (0 to start): Crc32(Crc32(0, a), b) is the CRC
// of a followed by b. Likewise Crc32c.
uint32_t Crc32(uint32_t crc, const char* p, size_t n);
uint32_t Crc32c(uint32_t crc, const char* p, size_t n);
// Crc32c without the CPU instruction (what Crc32c uses on a CPU without one).
uint32_t Crc32cPortable(uint32_t crc, const char* p, size_t n);
// Whether Crc32c uses the CPU's instruction here.
bool Crc32cInHardware();

}  // namespace sedna::store
