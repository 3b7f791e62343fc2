#include "core/ascii.h"

#include <gtest/gtest.h>

#include <string>

namespace sedna::core {
namespace {

TEST(Ascii, FoldsOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower('A'), 'a');
  EXPECT_EQ(AsciiLower('Z'), 'z');
  EXPECT_EQ(AsciiLower('@'), '@');  // 'A' - 1
  EXPECT_EQ(AsciiLower('['), '[');  // 'Z' + 1
  EXPECT_EQ(AsciiLower('\xc3'), '\xc3');
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const bool upper = c >= 'A' && c <= 'Z';
    EXPECT_EQ(AsciiLower(ch), upper ? static_cast<char>(c + 32) : ch) << c;
  }
}

TEST(Ascii, EqualsIgnoreCaseComparesFoldedBytes) {
  EXPECT_TRUE(EqualsIgnoreCase("Completed", "completed"));
  EXPECT_TRUE(EqualsIgnoreCase("EVAL", "eval"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("eval", "evals"));
  EXPECT_FALSE(EqualsIgnoreCase("eval", "eva"));
  EXPECT_FALSE(EqualsIgnoreCase("tr@in", "train"));              // '@' is not a folded 'A'..
  EXPECT_FALSE(EqualsIgnoreCase("\xc3\x89val", "\xc3\xa9val"));  // ..nor is a non-ASCII letter
  EXPECT_FALSE(EqualsIgnoreCase(std::string("a\0b", 3), "a"));
}

TEST(Ascii, AsciiLoweredFoldsOnlyTheLettersAToZ) {
  EXPECT_EQ(AsciiLowered("IncrementalLearningJob"), "incrementallearningjob");
  EXPECT_EQ(AsciiLowered("Content-TYPE: A@Z[`"), "content-type: a@z[`");  // '@' '[' '`' stay
  EXPECT_EQ(AsciiLowered("\xc3\x89VAL"), "\xc3\x89val");  // a non-ASCII letter stays as it is
  EXPECT_EQ(AsciiLowered(std::string("A\0B", 3)), std::string("a\0b", 3));
  EXPECT_EQ(AsciiLowered(""), "");
}

}  // namespace
}  // namespace sedna::core
