#include "adapters/json/base64.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

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

// RFC 4648 one character at a time, appended to what `out` holds.
std::string ReferenceAppend(std::string out, std::string_view bytes) {
  static const char* const kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = 0;
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    for (size_t k = 0; k < 3; ++k) {
      v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0);
    }
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

TEST(Base64, EncodesLikeTheReferenceAtEveryLengthAndAfterEveryPrefix) {
  std::mt19937 rng(7);
  for (size_t len = 0; len < 80; ++len) {
    std::string bytes(len, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng() & 0xff);
    for (const std::string prefix : {"", "x", "{\"content\":\""}) {
      std::string out = prefix;
      Base64Append(out, bytes);
      EXPECT_EQ(out, ReferenceAppend(prefix, bytes)) << len;
    }
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

// Base64Decode as it was before its fast path: one character at a time (error texts shortened
// to what the comparison needs: the same text as the real one).
Result<std::string> ReferenceDecode(std::string_view text) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto describe = [](unsigned char c) {
    char buf[32];
    if (c >= 0x21 && c < 0x7f) {
      std::snprintf(buf, sizeof buf, "'%c'", c);
    } else {
      std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    }
    return std::string(buf);
  };
  std::string out;
  int values[4];
  int n = 0;
  int padding = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c == '\r' || c == '\n') continue;
    if (padding > 0 && c != '=') {
      return Result<std::string>::Error("unexpected " + describe(c) + " after padding at offset " +
                                        std::to_string(pos));
    }
    if (c == '=') {
      if (n < 2) {
        return Result<std::string>::Error("unexpected padding '=' at offset " +
                                          std::to_string(pos));
      }
      values[n++] = 0;
      ++padding;
    } else {
      size_t v = kAlphabet.find(static_cast<char>(c));
      if (v == std::string::npos || c == 0) {
        return Result<std::string>::Error("illegal character " + describe(c) + " at offset " +
                                          std::to_string(pos));
      }
      values[n++] = static_cast<int>(v);
    }
    if (n == 4) {
      uint32_t v = (values[0] << 18) | (values[1] << 12) | (values[2] << 6) | values[3];
      out += static_cast<char>((v >> 16) & 0xff);
      if (padding < 2) out += static_cast<char>((v >> 8) & 0xff);
      if (padding < 1) out += static_cast<char>(v & 0xff);
      if (padding > 0) {
        for (size_t k = pos + 1; k < text.size(); ++k) {
          unsigned char t = static_cast<unsigned char>(text[k]);
          if (t == '\r' || t == '\n') continue;
          return Result<std::string>::Error("unexpected " + describe(t) +
                                            " after padding at offset " + std::to_string(k));
        }
        return out;
      }
      n = 0;
    }
  }
  if (n != 0) {
    return Result<std::string>::Error("truncated input: " + std::to_string(n) +
                                      " trailing character(s) without '=' padding at offset " +
                                      std::to_string(text.size()));
  }
  return out;
}

TEST(Base64, DecodeMatchesTheCharacterAtATimeReference) {
  std::mt19937 rng(4648);
  const std::string kNoise("=\r\n!-_ \x00\xff", 9);
  size_t ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    std::string text = Base64Encode(bytes);
    const int edits = static_cast<int>(rng() % 4);  // 0: valid as encoded
    for (int e = 0; e < edits; ++e) {
      const size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
      const char c = kNoise[rng() % kNoise.size()];
      if (rng() % 2 == 0 || at == text.size()) {
        text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
      } else {
        text[at] = c;
      }
    }
    auto got = Base64Decode(text);
    auto want = ReferenceDecode(text);
    ASSERT_EQ(got.ok(), want.ok()) << text << " " << got.message() << " / " << want.message();
    if (got.ok()) {
      ++ok;
      EXPECT_EQ(*got, *want) << text;
      if (edits == 0) {
        EXPECT_EQ(*got, bytes);
      }
    } else {
      EXPECT_EQ(got.message(), want.message()) << text;
    }
  }
  EXPECT_GT(ok, 5000u);  // the unedited quarter, and edits that are line breaks
}

}  // namespace
}  // namespace sedna::json
