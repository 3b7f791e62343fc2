#include "core/utf8.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace sedna::core {
namespace {

TEST(Utf8Test, IsValidUtf8FollowsRfc3629) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"", true},
      {"plain ascii, longer than a word", true},
      {"caf\xC3\xA9", true},
      {"\xE2\x82\xAC euro", true},
      {"\xF0\x9F\x98\x80", true},  // U+1F600
      {"\xF4\x8F\xBF\xBF", true},  // U+10FFFF
      {"\xED\x9F\xBF", true},      // U+D7FF
      {std::string("nul\0inside", 10), true},
      {"\xC3", false},              // cut
      {"12345678\xC3", false},      // cut after a word
      {"\xC0\xAF", false},          // overlong '/'
      {"\xE0\x80\xAF", false},      // overlong
      {"\xF0\x80\x80\xAF", false},  // overlong
      {"\xED\xA0\x80", false},      // U+D800, a surrogate
      {"\xF4\x90\x80\x80", false},  // above U+10FFFF
      {"\xF5\x80\x80\x80", false},
      {"\x80", false},          // a lone continuation byte
      {"\xE2\x28\xA1", false},  // a bad second byte
      {"\xE2\x82\x28", false},  // a bad third byte
      {"\xFF", false},
  };
  for (const auto& [text, valid] : cases) {
    EXPECT_EQ(IsValidUtf8(text), valid) << testing::PrintToString(text);
    EXPECT_EQ(IsValidUtf8("prefix:" + text + ":suffix"), valid) << testing::PrintToString(text);
  }
}

}  // namespace
}  // namespace sedna::core
