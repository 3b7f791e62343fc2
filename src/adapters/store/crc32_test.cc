// CRC-32 and CRC-32C against their check values and against the byte-wise algorithm, at every
// length and alignment up to 64 bytes and across a split (the continuation the journal relies
// on); CRC-32C both with the CPU's instruction (where the machine has it) and without.
#include "adapters/store/crc32.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace sedna::store {
namespace {

uint32_t ByteWise(const std::string& s, uint32_t poly = 0xEDB88320u) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? poly ^ (c >> 1) : c >> 1;
  }
  return ~c;
}
constexpr uint32_t kCastagnoli = 0x82F63B78u;

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

TEST(Crc32c, CheckValues) {
  std::printf("Crc32c uses the CPU's instruction here: %s\n", Crc32cInHardware() ? "yes" : "no");
  for (auto* crc : {&Crc32c, &Crc32cPortable}) {
    EXPECT_EQ(crc(0, "", 0), 0u);
    EXPECT_EQ(crc(0, "123456789", 9), 0xE3069283u);  // the CRC-32C check value
    // RFC 3720, B.4: 32 bytes of zeros, of ones, ascending, descending.
    std::string zeros(32, '\0'), ones(32, '\xff'), up, down;
    for (int i = 0; i < 32; ++i) {
      up.push_back(static_cast<char>(i));
      down.push_back(static_cast<char>(31 - i));
    }
    EXPECT_EQ(crc(0, zeros.data(), 32), 0x8A9136AAu);
    EXPECT_EQ(crc(0, ones.data(), 32), 0x62A8AB43u);
    EXPECT_EQ(crc(0, up.data(), 32), 0x46DD794Eu);
    EXPECT_EQ(crc(0, down.data(), 32), 0x113FDB5Cu);
  }
}

TEST(Crc32c, EqualsTheByteWiseAlgorithmAtEveryLengthOffsetAndSplit) {
  std::string data;
  for (int i = 0; i < 80; ++i) data.push_back(static_cast<char>(i * 53 + 7));
  for (size_t off = 0; off < 8; ++off) {
    for (size_t len = 0; off + len <= 72; ++len) {
      const std::string s = data.substr(off, len);
      ASSERT_EQ(Crc32c(0, data.data() + off, len), ByteWise(s, kCastagnoli)) << off << " " << len;
      ASSERT_EQ(Crc32cPortable(0, data.data() + off, len), ByteWise(s, kCastagnoli))
          << off << " " << len;
    }
  }
  const std::string s = "a report body of some length, split anywhere";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Crc32c(Crc32c(0, s.data(), cut), s.data() + cut, s.size() - cut),
              ByteWise(s, kCastagnoli));
  }
}

}  // namespace
}  // namespace sedna::store
