// ASCII case folding for the protocol's case-insensitive names (worker kinds and statuses, media
// types, index formats): only 'A'-'Z' fold, so no locale and no other byte changes meaning.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sedna::core {

inline char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// `s` with 'A'-'Z' folded to lower case.
inline std::string AsciiLowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

// Whether `a` and `b` are equal once both are folded to lower case.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

}  // namespace sedna::core
