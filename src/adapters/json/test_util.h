// Test-only helpers for the sedna_json tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace sedna::json::testing {

// The content of testdata/<name> (one trailing newline, if any, removed).
inline std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(SEDNA_SOURCE_DIR) + "/src/adapters/json/testdata/" + name,
                   std::ios::binary);
  if (!in) return "<missing testdata " + name + ">";
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// `text` with the first occurrence of `from` replaced by `to`; "" when `from` does not occur.
inline std::string ReplaceOnce(const std::string& text, const std::string& from,
                               const std::string& to) {
  size_t pos = text.find(from);
  if (pos == std::string::npos) return "";
  std::string out = text;
  out.replace(pos, from.size(), to);
  return out;
}

// `depth` nested arrays around `inner`.
inline std::string NestedArrays(size_t depth, const std::string& inner = "") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

}  // namespace sedna::json::testing
