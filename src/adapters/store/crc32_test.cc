// CRC-32 against its check value and against the byte-wise algorithm, at every length and
// alignment up to 64 bytes and across a split (the continuation the journal relies on).
#include "adapters/store/crc32.h"

#include <gtest/gtest.h>

#include <string>

namespace sedna::store {
namespace {

uint32_t ByteWise(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

TEST(Crc32, CheckValues) {
  EXPECT_EQ(Crc32(0, "", 0), 0u);
  EXPECT_EQ(Crc32(0, "123456789", 9), 0xCBF43926u);  // the CRC-32/ISO-HDLC check value
  EXPECT_EQ(Crc32(0, "The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
}

TEST(Crc32, EqualsTheByteWiseAlgorithmAtEveryLengthAndOffset) {
  std::string data;
  for (int i = 0; i < 80; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  for (size_t off = 0; off < 8; ++off) {
    for (size_t len = 0; off + len <= 72; ++len) {
      const std::string s = data.substr(off, len);
      ASSERT_EQ(Crc32(0, data.data() + off, len), ByteWise(s))
          << "offset " << off << " len " << len;
    }
  }
}

TEST(Crc32, ContinuesAcrossASplit) {
  const std::string s = "a report body of some length, split anywhere";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Crc32(Crc32(0, s.data(), cut), s.data() + cut, s.size() - cut), ByteWise(s));
  }
}

}  // namespace
}  // namespace sedna::store
