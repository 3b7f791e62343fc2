#include "adapters/json/base64.h"

#include <gtest/gtest.h>

#include <random>

namespace sedna::json {
namespace {

struct Vector {
  std::string plain;
  std::string encoded;
};

TEST(Base64, Rfc4648Vectors) {
  const Vector kVectors[] = {{"", ""},
                             {"f", "Zg=="},
                             {"fo", "Zm8="},
                             {"foo", "Zm9v"},
                             {"foob", "Zm9vYg=="},
                             {"fooba", "Zm9vYmE="},
                             {"foobar", "Zm9vYmFy"}};
  for (const auto& v : kVectors) {
    EXPECT_EQ(Base64Encode(v.plain), v.encoded) << v.plain;
    auto d = Base64Decode(v.encoded);
    ASSERT_TRUE(d.ok()) << v.encoded << ": " << d.message();
    EXPECT_EQ(*d, v.plain);
  }
}

TEST(Base64, UsesStandardAlphabetAndPadding) {
  EXPECT_EQ(Base64Encode(std::string("\xfb\xff\xbf", 3)), "+/+/");
  EXPECT_EQ(Base64Encode(std::string("\x00", 1)), "AA==");
  auto d = Base64Decode("+/+/");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, std::string("\xfb\xff\xbf", 3));
}

TEST(Base64, RoundTripsArbitraryBytes) {
  std::mt19937 rng(42);
  for (size_t len = 0; len < 300; ++len) {
    std::string bytes(len, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng() & 0xff);
    auto d = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(d.ok()) << len;
    EXPECT_EQ(*d, bytes);
  }
}

TEST(Base64, IgnoresLineBreaksLikeGo) {
  auto d = Base64Decode("Zm9v\r\nYmFy");
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(*d, "foobar");
  d = Base64Decode("\nZ\rm\n8\r=\n");
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(*d, "fo");
  d = Base64Decode("\r\n");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "");
}

TEST(Base64, AcceptsNonZeroTrailingBitsLikeGoStdEncoding) {
  // Go's StdEncoding is not Strict(): "Zh==" decodes like "Zg==".
  auto d = Base64Decode("Zh==");
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(*d, "f");
}

struct BadCase {
  std::string input;
  std::string error;  // expected substring
};

TEST(Base64, RejectsMalformedInputNamingTheOffset) {
  const BadCase kCases[] = {
      {"Zg", "truncated input: 2 trailing character(s) without '=' padding at offset 2"},
      {"Zm9vY", "truncated input: 1 trailing character(s)"},
      {"Zg=", "truncated input: 3 trailing character(s)"},
      {"Zm9v!", "illegal character '!' at offset 4"},
      {"Zm9-", "illegal character '-' at offset 3"},  // URL alphabet
      {"Zm9_", "illegal character '_' at offset 3"},
      {" Zg==", "illegal character byte 0x20 at offset 0"},
      {"Zg==\t", "unexpected byte 0x09 after padding at offset 4"},
      {"Zg==Zg==", "unexpected 'Z' after padding at offset 4"},
      {"Zg=A", "unexpected 'A' after padding at offset 3"},
      {"Z===", "unexpected padding '=' at offset 1"},
      {"====", "unexpected padding '=' at offset 0"},
      {"Zm9v=", "unexpected padding '=' at offset 4"},
      {"Zm9=\n=", "unexpected '=' after padding at offset 5"},
      {std::string("Zm\x00v", 4), "illegal character byte 0x00 at offset 2"},
      {"Zm\xc3\xa9v", "illegal character byte 0xc3 at offset 2"},
  };
  for (const auto& c : kCases) {
    auto d = Base64Decode(c.input);
    ASSERT_FALSE(d.ok()) << c.input;
    EXPECT_NE(d.message().find(c.error), std::string::npos)
        << "input " << c.input << " -> " << d.message();
  }
}

}  // namespace
}  // namespace sedna::json
