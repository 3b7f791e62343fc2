#include "adapters/json/json_writer.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "adapters/json/go_json_internal.h"

namespace sedna::json {
namespace {

constexpr char kLowerHex[] = "0123456789abcdef";

// Bytes dump() copies verbatim without a closer look: printable ASCII except '"' and '\\'.
constexpr std::array<bool, 256> kPlainByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
  return t;
}();

// An integer in decimal, as dump() writes it.
template <typename T>
void AppendInteger(std::string& out, T v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

}  // namespace

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ == 0) return;
  const uint64_t bit = uint64_t{1} << (depth_ - 1);
  if (has_element_ & bit) out_ += ',';
  has_element_ |= bit;
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  out_ += bracket;
  ++depth_;
  has_element_ &= ~(uint64_t{1} << (depth_ - 1));
}

void JsonWriter::Close(char bracket) {
  --depth_;
  out_ += bracket;
}

JsonWriter& JsonWriter::BeginObject() {
  Open('{');
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  Close('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Open('[');
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  Close(']');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendEscaped(key);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  BeforeValue();
  AppendInteger(out_, v);
  return *this;
}

JsonWriter& JsonWriter::UInt(uint64_t v) {
  BeforeValue();
  AppendInteger(out_, v);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  BeforeValue();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[64];  // nlohmann's own number buffer is 64 bytes
  const char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, static_cast<size_t>(end - buf));
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view v) {
  BeforeValue();
  AppendEscaped(v);
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

void JsonWriter::AppendEscaped(std::string_view s) {
  out_.reserve(out_.size() + s.size() + 2);
  out_ += '"';
  size_t start = 0;  // first byte not yet copied
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (kPlainByte[c]) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const auto [rune, size] = internal::DecodeRune(s, i);
      if (rune >= 0) {
        i += static_cast<size_t>(size);
        continue;
      }
      out_.append(s.data() + start, i - start);
      out_ += "\xEF\xBF\xBD";  // U+FFFD
      start = ++i;
      continue;
    }
    out_.append(s.data() + start, i - start);
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\b':
        out_ += "\\b";
        break;
      case '\f':
        out_ += "\\f";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        out_ += "\\u00";
        out_ += kLowerHex[c >> 4];
        out_ += kLowerHex[c & 0xf];
    }
    start = ++i;
  }
  out_.append(s.data() + start, s.size() - start);
  out_ += '"';
}

}  // namespace sedna::json
