#include "adapters/json/base64.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace sedna::json {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeReverse() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kReverse = MakeReverse();

std::string DescribeByte(unsigned char c) {
  char buf[32];
  if (c >= 0x21 && c < 0x7f) {
    std::snprintf(buf, sizeof buf, "'%c'", c);
  } else {
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  }
  return buf;
}

// The two characters of every 12-bit value: a 3-byte group is two lookups.
struct PairTable {
  char pairs[4096][2];
};
constexpr PairTable MakePairs() {
  PairTable t{};
  for (int v = 0; v < 4096; ++v) {
    t.pairs[v][0] = kAlphabet[v >> 6];
    t.pairs[v][1] = kAlphabet[v & 63];
  }
  return t;
}
constexpr PairTable kPairs = MakePairs();

}  // namespace

void Base64Append(std::string& out, std::string_view bytes) {
  const size_t start = out.size();
  out.resize(start + (bytes.size() + 2) / 3 * 4);
  char* d = out.data() + start;
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  // Two groups a step, from one 8-byte load (of which 6 bytes are used), eight characters stored
  // at once.
  for (; i + 8 <= bytes.size(); i += 6) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) w = __builtin_bswap64(w);
    const auto a = static_cast<uint32_t>(w >> 40);
    const auto b = static_cast<uint32_t>(w >> 16) & 0xffffff;
    char chars[8];
    std::memcpy(chars, kPairs.pairs[a >> 12], 2);
    std::memcpy(chars + 2, kPairs.pairs[a & 4095], 2);
    std::memcpy(chars + 4, kPairs.pairs[b >> 12], 2);
    std::memcpy(chars + 6, kPairs.pairs[b & 4095], 2);
    std::memcpy(d, chars, 8);
    d += 8;
  }
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{s[i]} << 16) | (uint32_t{s[i + 1]} << 8) | s[i + 2];
    std::memcpy(d, kPairs.pairs[v >> 12], 2);
    std::memcpy(d + 2, kPairs.pairs[v & 4095], 2);
    d += 4;
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t v = uint32_t{s[i]} << 16;
    d[0] = kAlphabet[(v >> 18) & 63];
    d[1] = kAlphabet[(v >> 12) & 63];
    d[2] = '=';
    d[3] = '=';
  } else if (rest == 2) {
    const uint32_t v = (uint32_t{s[i]} << 16) | (uint32_t{s[i + 1]} << 8);
    d[0] = kAlphabet[(v >> 18) & 63];
    d[1] = kAlphabet[(v >> 12) & 63];
    d[2] = kAlphabet[(v >> 6) & 63];
    d[3] = '=';
  }
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  Base64Append(out, bytes);
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  // Decoded in place: at most 3 bytes per 4 characters, line breaks included.
  std::string out(text.size() / 4 * 3, '\0');
  size_t w = 0;     // bytes written to out
  int values[4];    // the current quantum, '=' counted as 0
  int n = 0;        // characters collected in the current quantum
  int padding = 0;  // '=' seen in the current quantum
  size_t pos = 0;
  for (; pos < text.size(); ++pos) {
    if (n == 0) {
      // Whole quanta of alphabet characters, the common case, 4 at a time.
      for (; pos + 4 <= text.size(); pos += 4) {
        const int8_t a = kReverse[static_cast<unsigned char>(text[pos])];
        const int8_t b = kReverse[static_cast<unsigned char>(text[pos + 1])];
        const int8_t c = kReverse[static_cast<unsigned char>(text[pos + 2])];
        const int8_t d = kReverse[static_cast<unsigned char>(text[pos + 3])];
        if ((a | b | c | d) < 0) break;  // '=', a line break or an error: one at a time
        const uint32_t v =
            (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
        out[w] = static_cast<char>((v >> 16) & 0xff);
        out[w + 1] = static_cast<char>((v >> 8) & 0xff);
        out[w + 2] = static_cast<char>(v & 0xff);
        w += 3;
      }
      if (pos == text.size()) break;
    }
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c == '\r' || c == '\n') continue;
    if (padding > 0 && c != '=') {
      return Result<std::string>::Error("unexpected " + DescribeByte(c) +
                                        " after padding at offset " + std::to_string(pos));
    }
    if (c == '=') {
      // Padding may only fill the last one or two positions of a quantum.
      if (n < 2) {
        return Result<std::string>::Error("unexpected padding '=' at offset " +
                                          std::to_string(pos));
      }
      values[n] = 0;
      ++n;
      ++padding;
    } else {
      int8_t v = kReverse[c];
      if (v < 0) {
        return Result<std::string>::Error("illegal character " + DescribeByte(c) + " at offset " +
                                          std::to_string(pos));
      }
      values[n] = static_cast<uint8_t>(v);  // 0..63: checked above
      ++n;
    }
    if (n == 4) {
      uint32_t v = (values[0] << 18) | (values[1] << 12) | (values[2] << 6) | values[3];
      out[w++] = static_cast<char>((v >> 16) & 0xff);
      if (padding < 2) out[w++] = static_cast<char>((v >> 8) & 0xff);
      if (padding < 1) out[w++] = static_cast<char>(v & 0xff);
      if (padding > 0) {
        // Anything but line breaks after the padded quantum is an error.
        for (size_t k = pos + 1; k < text.size(); ++k) {
          unsigned char t = static_cast<unsigned char>(text[k]);
          if (t == '\r' || t == '\n') continue;
          return Result<std::string>::Error("unexpected " + DescribeByte(t) +
                                            " after padding at offset " + std::to_string(k));
        }
        out.resize(w);
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
  out.resize(w);
  return out;
}

}  // namespace sedna::json
