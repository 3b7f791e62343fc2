// Text helpers the HTTP server's parts share: ASCII case folding and matching, optional
// whitespace, line-break checks, decimal numbers and "address:port". Locale-free and pure.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/ascii.h"

namespace sedna::http {

using core::AsciiLower;
using core::EqualsIgnoreCase;

inline bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    if (EqualsIgnoreCase(haystack.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

// `s` without leading and trailing spaces and tabs (RFC 9110 OWS).
inline std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline bool HasLineBreak(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

inline void AppendNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// "address:port", an IPv6 address in brackets ("[::1]:9100").
inline std::string EndpointText(const std::string& address, uint16_t port) {
  std::string s = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  s += ':';
  AppendNumber(s, port);
  return s;
}

}  // namespace sedna::http
