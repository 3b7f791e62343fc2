#include "app/cluster/observation/shell_quote.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace sedna::app {
namespace {

struct Case {
  std::string word;
  std::string quoted;
};

TEST(ShellQuote, QuotesOnlyWhenNeeded) {
  const Case kCases[] = {
      {"/models/deploy/model.pb", "/models/deploy/model.pb"},
      {"sedna-lc", "sedna-lc"},
      {"--version", "--version"},
      {"3", "3"},
      {"a_b@c%d+e=f:g,h.i/j-k", "a_b@c%d+e=f:g,h.i/j-k"},
      {"", "''"},
      {"/models/a;touch${IFS}x;#/deploy.pb", "'/models/a;touch${IFS}x;#/deploy.pb'"},
      {"/models/my model.pb", "'/models/my model.pb'"},
      {"it's", "'it'\\''s'"},
      {"'", "''\\'''"},
      {"$(reboot)", "'$(reboot)'"},
      {"`id`", "'`id`'"},
      {"a\nb", "'a\nb'"},
      {"~root", "'~root'"},
      {"*.pb", "'*.pb'"},
      {"a\\b", "'a\\b'"},
      {"a\"b", "'a\"b'"},
      {"caf\xc3\xa9", "'caf\xc3\xa9'"},
      {"x&y|z<w>v", "'x&y|z<w>v'"},
      {"!1", "'!1'"},
  };
  for (const Case& c : kCases) EXPECT_EQ(ShellQuote(c.word), c.quoted) << c.word;
}

TEST(ShellQuote, CommandJoinsQuotedWords) {
  EXPECT_EQ(ShellCommand({"sedna-lc", "rollback-model", "/models/a b.pb", "--version", "2"}),
            "sedna-lc rollback-model '/models/a b.pb' --version 2");
  EXPECT_EQ(ShellCommand({}), "");
}

// What a POSIX shell makes of the quoted word: exactly the word, one argument, nothing run.
TEST(ShellQuote, AShellReadsBackTheWord) {
  const std::string kWords[] = {
      "/models/a;touch${IFS}x;#/deploy.pb", "it's a 'test'", "$(id)", "a\\b\"c", "", "tab\there"};
  for (const std::string& w : kWords) {
    const std::string cmd = "printf '%s|' " + ShellQuote(w);
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[256];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    EXPECT_EQ(WEXITSTATUS(::pclose(p)), 0) << cmd;
    EXPECT_EQ(out, w + "|") << cmd;
  }
}

}  // namespace
}  // namespace sedna::app
