// Start-up with a bad database or configuration: a clear message naming the cause and exit code 2,
// never a crash or a half-started daemon.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "lc_process.h"

namespace sedna::testing {
namespace {

struct Case {
  const char* name;
  std::string setup;  // what to put at the db path: "garbage", "locked", "dir-is-file"
  std::vector<std::string> extra_args;
  std::map<std::string, std::string> env;
  const char* message;
};

TEST(StartupErrorsTest, EachCauseIsNamedWithExitCode2) {
  const std::vector<Case> cases = {
      {"corrupt database", "garbage", {}, {}, "is not a SQLite database"},
      {"database directory is a file", "dir-is-file", {}, {}, "database"},
      {"bad BIND_PORT", "", {}, {{"BIND_PORT", "70000"}}, "BIND_PORT"},
      {"GM_ADDRESS with a scheme", "", {}, {{"GM_ADDRESS", "ws://gm:9000"}}, "GM_ADDRESS"},
      {"bad log level", "", {"--log-level", "loud"}, {}, "--log-level"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string tmp = MakeTempDir("sedna-start-");
    std::string db = tmp + "/db/database.db";
    std::filesystem::create_directories(tmp + "/db");
    if (c.setup == "garbage") WriteFile(db, std::string(4096, 'x'));
    if (c.setup == "dir-is-file") {
      WriteFile(tmp + "/file", "x");
      db = tmp + "/file/database.db";
    }
    std::vector<std::string> args = {
        "--db", db, "--status-port", "0", "--bind-port", std::to_string(FreePort())};
    args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
    std::map<std::string, std::string> env = c.env;
    env["NODENAME"] = "edge";
    LcProcess lc(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", env, args, tmp + "/lc.log");
    EXPECT_EQ(lc.Wait(), 2);
    const std::string log = ReadFile(tmp + "/lc.log");
    EXPECT_NE(log.find(c.message), std::string::npos) << log;
    std::filesystem::remove_all(tmp);
  }
}

}  // namespace
}  // namespace sedna::testing
