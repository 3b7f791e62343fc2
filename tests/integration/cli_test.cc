// The sedna-lc binary as people first meet it: every subcommand's --help exits 0 and describes
// that subcommand, --version names the version and commit, and `status` prints json, wide and
// watch output. $SEDNA_LC overrides the binary (e.g. to check an older build).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "adapters/store/store.h"
#include "lc_process.h"

namespace sedna::testing {
namespace {

std::string Binary() {
  const char* e = std::getenv("SEDNA_LC");
  return e && *e ? e : std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::filesystem::temp_directory_path() /
           ("cli_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(tmp_);
    std::filesystem::create_directories(tmp_);
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  // Runs sedna-lc with `args`; the exit code, stdout+stderr in *out.
  int Run(const std::vector<std::string>& args, std::string* out) {
    const std::string log = (tmp_ / ("run" + std::to_string(++runs_) + ".log")).string();
    const int rc = LcProcess(Binary(), {{"NODENAME", "edge"}}, args, log).Wait();
    std::ifstream in(log);
    *out = std::string(std::istreambuf_iterator<char>(in), {});
    return rc;
  }

  std::filesystem::path tmp_;
  int runs_ = 0;
};

TEST_F(CliTest, EverySubcommandHasItsOwnHelp) {
  struct Case {
    std::vector<std::string> args;
    std::vector<const char*> mentions;
  };
  const Case cases[] = {
      {{"--help"}, {"Commands:", "doctor", "rollback-model", "--ping-interval-ms", "GM_ADDRESS"}},
      {{"-h"}, {"Commands:"}},
      {{"standalone", "--help"}, {"Usage: sedna-lc standalone", "--worker-timeout", "-f"}},
      {{"standalone", "-h"}, {"Usage: sedna-lc standalone"}},
      {{"status", "--help"}, {"Usage: sedna-lc status", "--watch", "--output"}},
      {{"jobs", "--help"}, {"Usage: sedna-lc status"}},
      {{"rollback-model", "--help"}, {"Usage: sedna-lc rollback-model", "--list", "--version"}},
      {{"doctor", "--help"}, {"Usage: sedna-lc doctor", "--gm-address", "--timeout"}},
      {{"version", "--help"}, {"Usage: sedna-lc version"}},
  };
  for (const auto& c : cases) {
    std::string out;
    EXPECT_EQ(Run(c.args, &out), 0) << c.args[0] << "\n" << out;
    for (const char* m : c.mentions) {
      EXPECT_NE(out.find(m), std::string::npos) << c.args[0] << " lacks " << m << "\n" << out;
    }
    if (c.args[0] != "--help" && c.args[0] != "-h") {  // not the daemon's flags
      EXPECT_EQ(out.find("--ping-interval-ms"), std::string::npos) << c.args[0] << "\n" << out;
    }
  }
}

TEST_F(CliTest, VersionPrintsVersionAndCommit) {
  for (const auto& args : {std::vector<std::string>{"--version"}, {"version"}}) {
    std::string out;
    ASSERT_EQ(Run(args, &out), 0) << out;
    EXPECT_TRUE(std::regex_search(
        out,
        std::regex(
            R"(^sedna-lc [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{4,}|[^ ]+-g[0-9a-f]+|unknown)(-dirty)?\)\n$)")))
        << out;
  }
}

TEST_F(CliTest, UsageErrorsPointAtTheSubcommandsHelp) {
  std::string out;
  EXPECT_EQ(Run({"standalone"}, &out), 2);
  EXPECT_NE(out.find("sedna-lc standalone --help"), std::string::npos) << out;
  EXPECT_EQ(Run({"status", "-o", "yaml"}, &out), 2);
  EXPECT_NE(out.find("sedna-lc status --help"), std::string::npos) << out;
}

TEST_F(CliTest, StatusJsonWideAndWatch) {
  const std::string db = (tmp_ / "database.db").string();
  ASSERT_TRUE(store::Store::Open(db).ok());  // an empty, migrated database
  const std::vector<std::string> base = {"status", "--db", db, "--status-port", "0"};
  auto with = [&](std::vector<std::string> more) {
    auto a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  std::string out;
  ASSERT_EQ(Run(with({"-o", "json"}), &out), 0) << out;
  EXPECT_NE(out.find("\"jobs\": []"), std::string::npos) << out;
  EXPECT_EQ(out.find("job(s), from"), std::string::npos) << out;  // json only

  ASSERT_EQ(Run(with({"-o", "wide"}), &out), 0) << out;
  EXPECT_NE(out.find("DECIDED ROUND"), std::string::npos) << out;
  EXPECT_NE(out.find("(0 job(s), from database"), std::string::npos) << out;

  ASSERT_EQ(Run(with({"--watch", "--interval", "0.1", "--count", "3"}), &out), 0) << out;
  size_t draws = 0;
  for (size_t p = 0; (p = out.find("Every 0.1 s: sedna-lc status", p)) != std::string::npos; ++p) {
    ++draws;
  }
  EXPECT_EQ(draws, 3u) << out;
}

}  // namespace
}  // namespace sedna::testing
