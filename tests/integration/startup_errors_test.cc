// Start-up with a bad database or configuration: a clear message naming the cause and exit code 2,
// never a crash or a half-started daemon.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

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

// The intake journal's applied mark (lc_state intake/applied) is read at start; a value that is not
// a number stops start-up with a message naming it, before any report could be applied twice.
TEST(StartupErrorsTest, UnreadableIntakeMarkIsNamed) {
  const std::string tmp = MakeTempDir("sedna-start-");
  const std::string db = tmp + "/database.db";
  const std::string bin = std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
  const uint16_t status = FreePort();
  {
    LcProcess first(bin, {{"NODENAME", "edge"}},
                    {"--db", db, "--status-port", std::to_string(status), "--bind-port",
                     std::to_string(FreePort())},
                    tmp + "/first.log");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (HttpRequest(status, "GET", "/healthz", "", {}).status != 200) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << ReadFile(tmp + "/first.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling another process
    }
    ASSERT_EQ(first.Stop(), 0);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "INSERT OR REPLACE INTO lc_state (scope, key, value, updated_at) "
                         "VALUES ('intake', 'applied', '12x', '')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  LcProcess second(bin, {{"NODENAME", "edge"}},
                   {"--db", db, "--status-port", "0", "--bind-port", std::to_string(FreePort())},
                   tmp + "/second.log");
  EXPECT_EQ(second.Wait(), 2);
  EXPECT_NE(ReadFile(tmp + "/second.log").find("lc_state intake/applied is not a number: \"12x\""),
            std::string::npos)
      << ReadFile(tmp + "/second.log");
  std::filesystem::remove_all(tmp);
}

// One daemon per database: a second sedna-lc on the same --db is refused (exit 2, the message
// names the database and says it is in use) and the first one is not disturbed.
TEST(StartupErrorsTest, SecondDaemonOnTheSameDatabaseIsRefused) {
  const std::string tmp = MakeTempDir("sedna-start-");
  const std::string db = tmp + "/db/database.db";
  const std::string bin = std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
  const uint16_t status1 = FreePort();
  LcProcess first(bin, {{"NODENAME", "edge"}},
                  {"--db", db, "--status-port", std::to_string(status1), "--bind-port",
                   std::to_string(FreePort())},
                  tmp + "/first.log");
  // The status server answers once the first daemon holds the database.
  HttpResult h = HttpRequest(status1, "GET", "/healthz", "", {}, 20000);
  ASSERT_EQ(h.status, 200) << h.raw << ReadFile(tmp + "/first.log");

  LcProcess second(bin, {{"NODENAME", "edge"}},
                   {"--db", db, "--status-port", std::to_string(FreePort()), "--bind-port",
                    std::to_string(FreePort())},
                   tmp + "/second.log");
  EXPECT_EQ(second.Wait(), 2);
  const std::string log = ReadFile(tmp + "/second.log");
  EXPECT_NE(log.find("database " + db + " is in use by another sedna-lc"), std::string::npos)
      << log;

  // The first daemon still runs and answers.
  int st = 0;
  EXPECT_EQ(::waitpid(first.pid(), &st, WNOHANG), 0) << "the first sedna-lc exited";
  h = HttpRequest(status1, "GET", "/healthz", "", {});
  EXPECT_EQ(h.status, 200) << h.raw;
  EXPECT_EQ(h.body, "ok\n");
  EXPECT_EQ(HttpRequest(status1, "GET", "/status", "", {}).status, 200);
  EXPECT_EQ(first.Stop(), 0) << ReadFile(tmp + "/first.log");
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace sedna::testing
