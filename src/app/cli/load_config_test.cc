// LoadConfig: Sedna's environment contract (docs/protocol.md §P9.1) plus our flags; flags win over
// the environment and every bad value is an error that names the variable or flag.
#include "app/cli/load_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace sedna::app {
namespace {

using Env = std::map<std::string, std::string>;
using Args = std::vector<std::string>;

std::string HostName() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

struct GoodCase {
  const char* name;
  Env env;
  Args args;
  std::function<void(const Config&)> check;
};

TEST(LoadConfig, GoodValues) {
  const GoodCase cases[] = {
      {"defaults",
       {},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.gm_address, "");
         EXPECT_EQ(c.bind_port, 9100);
         EXPECT_EQ(c.rootfs, "/rootfs");
         EXPECT_EQ(c.db_path, "/var/lib/sedna/database.db");
         EXPECT_EQ(c.spool_dir, "/var/lib/sedna/spool");
         EXPECT_EQ(c.status_port, 9101);
         EXPECT_TRUE(c.status_allowed_hosts.empty());
         EXPECT_EQ(c.log_level, "info");
         EXPECT_FALSE(c.log_json);
         EXPECT_EQ(c.node_name, HostName());
         EXPECT_EQ(c.report_batch_ms, 2);
       }},
      {"early reports: defaults",
       {},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.early_reports_per_job, 16);
         EXPECT_EQ(c.early_reports_max, 256);
         EXPECT_EQ(c.early_reports_max_bytes, 16 << 20);
         EXPECT_EQ(c.early_report_ttl_ms, 300000);
       }},
      {"early reports: flags",
       {},
       {"--early-reports-per-job", "2", "--early-reports-max", "3", "--early-reports-max-bytes",
        "4096", "--early-report-ttl", "1.5"},
       [](const Config& c) {
         EXPECT_EQ(c.early_reports_per_job, 2);
         EXPECT_EQ(c.early_reports_max, 3);
         EXPECT_EQ(c.early_reports_max_bytes, 4096);
         EXPECT_EQ(c.early_report_ttl_ms, 1500);
       }},
      {"--report-batch-ms 0",
       {},
       {"--report-batch-ms", "0"},
       [](const Config& c) { EXPECT_EQ(c.report_batch_ms, 0); }},
      {"ROOTFS_MOUNT_DIR set",
       {{"ROOTFS_MOUNT_DIR", "/host"}},
       {},
       [](const Config& c) { EXPECT_EQ(c.rootfs, "/host"); }},
      {"ROOTFS_MOUNT_DIR empty is kept",
       {{"ROOTFS_MOUNT_DIR", ""}},
       {},
       [](const Config& c) { EXPECT_EQ(c.rootfs, ""); }},
      {"NODENAME",
       {{"NODENAME", "edge-1"}, {"HOSTNAME", "pod-x"}},
       {},
       [](const Config& c) { EXPECT_EQ(c.node_name, "edge-1"); }},
      {"NODENAME falls back to HOSTNAME",
       {{"HOSTNAME", "pod-x"}},
       {},
       [](const Config& c) { EXPECT_EQ(c.node_name, "pod-x"); }},
      {"NODENAME empty falls back to HOSTNAME",
       {{"NODENAME", ""}, {"HOSTNAME", "pod-x"}},
       {},
       [](const Config& c) { EXPECT_EQ(c.node_name, "pod-x"); }},
      {"environment",
       {{"GM_ADDRESS", "10.0.0.1:9000"},
        {"BIND_PORT", "9200"},
        {"SEDNA_DB_PATH", "/data/lc.db"},
        {"TZ", "Asia/Shanghai"}},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.gm_address, "10.0.0.1:9000");
         EXPECT_EQ(c.bind_port, 9200);
         EXPECT_EQ(c.db_path, "/data/lc.db");
         EXPECT_EQ(c.spool_dir, "/data/spool");
         EXPECT_EQ(c.timezone, "Asia/Shanghai");
       }},
      {"BIND_PORT bounds",
       {{"BIND_PORT", "65535"}},
       {},
       [](const Config& c) { EXPECT_EQ(c.bind_port, 65535); }},
      {"flags win over the environment",
       {{"GM_ADDRESS", "env-gm:9000"},
        {"NODENAME", "env-node"},
        {"BIND_PORT", "9200"},
        {"ROOTFS_MOUNT_DIR", "/env-rootfs"},
        {"SEDNA_DB_PATH", "/env/db.db"},
        {"TZ", "UTC"}},
       {"--gm-address", "flag-gm:9001", "--node-name", "flag-node", "--bind-port", "9300",
        "--rootfs", "/flag-rootfs", "--db", "/flag/db.db", "--timezone", "Europe/Paris"},
       [](const Config& c) {
         EXPECT_EQ(c.gm_address, "flag-gm:9001");
         EXPECT_EQ(c.node_name, "flag-node");
         EXPECT_EQ(c.bind_port, 9300);
         EXPECT_EQ(c.rootfs, "/flag-rootfs");
         EXPECT_EQ(c.db_path, "/flag/db.db");
         EXPECT_EQ(c.spool_dir, "/flag/spool");
         EXPECT_EQ(c.timezone, "Europe/Paris");
       }},
      {"--bind-port 0 wins over BIND_PORT",
       {{"BIND_PORT", "9200"}},
       {"--bind-port", "0"},
       [](const Config& c) { EXPECT_EQ(c.bind_port, 0); }},
      {"flag=value form and other flags",
       {},
       {"--status-port=0", "--log-level=debug", "--log-json", "--spool-dir", "/s"},
       [](const Config& c) {
         EXPECT_EQ(c.status_port, 0);
         EXPECT_EQ(c.log_level, "debug");
         EXPECT_TRUE(c.log_json);
         EXPECT_EQ(c.spool_dir, "/s");
       }},
      {"--status-allowed-hosts, comma-separated",
       {},
       {"--status-allowed-hosts", "lc.example,10.0.0.7", "--status-address", "::1"},
       [](const Config& c) {
         EXPECT_EQ(c.status_allowed_hosts, (std::vector<std::string>{"lc.example", "10.0.0.7"}));
         EXPECT_EQ(c.status_address, "::1");
       }},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto c = LoadConfig(tc.env, tc.args);
    ASSERT_TRUE(c.ok()) << c.message();
    tc.check(*c);
  }
}

struct BadCase {
  const char* name;
  Env env;
  Args args;
  std::vector<std::string> error_has;  // substrings of the error
};

TEST(LoadConfig, BadValuesAreErrorsNamingThem) {
  const BadCase cases[] = {
      {"BIND_PORT not a number", {{"BIND_PORT", "abc"}}, {}, {"BIND_PORT", "abc"}},
      {"BIND_PORT too large", {{"BIND_PORT", "70000"}}, {}, {"BIND_PORT", "70000"}},
      {"BIND_PORT negative", {{"BIND_PORT", "-1"}}, {}, {"BIND_PORT"}},
      {"BIND_PORT trailing junk", {{"BIND_PORT", "9100x"}}, {}, {"BIND_PORT"}},
      {"--bind-port", {}, {"--bind-port", "70000"}, {"--bind-port", "70000"}},
      {"--status-port", {}, {"--status-port", "x"}, {"--status-port"}},
      {"GM_ADDRESS with a scheme", {{"GM_ADDRESS", "ws://gm:9000"}}, {}, {"GM_ADDRESS", "ws://"}},
      {"GM_ADDRESS with a path", {{"GM_ADDRESS", "gm:9000/x"}}, {}, {"GM_ADDRESS"}},
      {"GM_ADDRESS without a port", {{"GM_ADDRESS", "gm"}}, {}, {"GM_ADDRESS"}},
      {"GM_ADDRESS with a bad port", {{"GM_ADDRESS", "gm:99999"}}, {}, {"GM_ADDRESS"}},
      {"--gm-address with a scheme",
       {},
       {"--gm-address", "http://gm:9000"},
       {"GM_ADDRESS", "http://gm:9000"}},
      {"--log-level bogus", {}, {"--log-level", "bogus"}, {"--log-level", "bogus"}},
      {"unknown flag", {}, {"--no-such-flag"}, {"--no-such-flag"}},
      {"unknown flag with a value", {}, {"--no-such-flag=1"}, {"--no-such-flag"}},
      {"stray argument", {}, {"extra"}, {"extra"}},
      {"flag without its value", {}, {"--db"}, {"--db"}},
      {"empty --db", {}, {"--db", ""}, {"--db"}},
      {"zero ping interval", {}, {"--ping-interval-ms", "0"}, {"--ping-interval-ms"}},
      {"negative report batch", {}, {"--report-batch-ms", "-1"}, {"--report-batch-ms", "0 to"}},
      {"report batch over a minute",
       {},
       {"--report-batch-ms", "60001"},
       {"--report-batch-ms", "60000"}},
      {"--gm-protocol unknown", {}, {"--gm-protocol", "g3"}, {"--gm-protocol", "\"g3\""}},
      {"SEDNA_GM_PROTOCOL unknown",
       {{"SEDNA_GM_PROTOCOL", "new"}},
       {},
       {"SEDNA_GM_PROTOCOL", "\"new\"", "auto, g1 or g2"}},
      {"--deploy-report-delay negative",
       {},
       {"--deploy-report-delay", "-1"},
       {"--deploy-report-delay", "0 to 86400"}},
      {"--deploy-report-delay not a number",
       {},
       {"--deploy-report-delay", "soon"},
       {"--deploy-report-delay"}},
      {"no history rounds", {}, {"--history-rounds", "0"}, {"--history-rounds", "1 to 10000"}},
      {"negative early reports per job",
       {},
       {"--early-reports-per-job", "-1"},
       {"--early-reports-per-job"}},
      {"early reports over 1 GiB", {}, {"--early-reports-max-bytes", "1073741825"}, {"1073741824"}},
      {"early report ttl 0", {}, {"--early-report-ttl", "0"}, {"--early-report-ttl", "86400"}},
      {"too many history rounds", {}, {"--history-rounds", "10001"}, {"--history-rounds"}},
      {"TZ misspelled", {{"TZ", "Europe/Berln"}}, {}, {"TZ", "\"Europe/Berln\"", "tzdata"}},
      {"--timezone not a zone", {}, {"--timezone", "12:00"}, {"--timezone", "\"12:00\""}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto c = LoadConfig(tc.env, tc.args);
    ASSERT_FALSE(c.ok());
    for (const auto& s : tc.error_has) {
      EXPECT_NE(c.message().find(s), std::string::npos)
          << "\"" << s << "\" not in: " << c.message();
    }
  }
}

TEST(LoadConfig, GmProtocolAndDeployReportDelay) {
  const GoodCase cases[] = {
      {"defaults",
       {},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.gm_protocol, "auto");
         EXPECT_EQ(c.deploy_report_delay_ms, 10000);
       }},
      {"environment",
       {{"SEDNA_GM_PROTOCOL", "g1"}},
       {},
       [](const Config& c) { EXPECT_EQ(c.gm_protocol, "g1"); }},
      {"the flag wins",
       {{"SEDNA_GM_PROTOCOL", "g1"}},
       {"--gm-protocol", "g2"},
       [](const Config& c) { EXPECT_EQ(c.gm_protocol, "g2"); }},
      {"the contract's spelling v1, any case",
       {},
       {"--gm-protocol=V1"},
       [](const Config& c) { EXPECT_EQ(c.gm_protocol, "g1"); }},
      {"--deploy-report-delay in seconds",
       {},
       {"--deploy-report-delay", "2.5"},
       [](const Config& c) { EXPECT_EQ(c.deploy_report_delay_ms, 2500); }},
      {"--deploy-report-delay 0",
       {},
       {"--deploy-report-delay=0"},
       [](const Config& c) { EXPECT_EQ(c.deploy_report_delay_ms, 0); }},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto c = LoadConfig(tc.env, tc.args);
    ASSERT_TRUE(c.ok()) << c.message();
    tc.check(*c);
  }
}

// docs/protocol.md §H1.8: with the host's root mounted, the database is on the host unless
// --db or SEDNA_DB_PATH say otherwise; the old default is named for adoption.
TEST(LoadConfig, DatabaseOnTheHostWhenTheRootfsIsMounted) {
  const std::string rootfs =
      (std::filesystem::path(::testing::TempDir()) / "config_test_rootfs").string();
  std::filesystem::create_directories(rootfs);
  const std::string host_db = rootfs + "/var/lib/sedna/sedna-lc/database.db";
  const GoodCase cases[] = {
      {"rootfs mounted",
       {{"ROOTFS_MOUNT_DIR", rootfs}},
       {},
       [&](const Config& c) {
         EXPECT_EQ(c.db_path, host_db);
         EXPECT_EQ(c.spool_dir, rootfs + "/var/lib/sedna/sedna-lc/spool");
         EXPECT_EQ(c.db_adopt_from, "/var/lib/sedna/database.db");
         EXPECT_EQ(c.spool_adopt_from, "/var/lib/sedna/spool");
       }},
      {"--rootfs mounted, with a trailing slash",
       {},
       {"--rootfs", rootfs + "/"},
       [&](const Config& c) {
         EXPECT_EQ(c.db_path, host_db);
         EXPECT_EQ(c.db_adopt_from, "/var/lib/sedna/database.db");
       }},
      {"--spool-dir given: no spool to adopt",
       {{"ROOTFS_MOUNT_DIR", rootfs}},
       {"--spool-dir", "/s"},
       [&](const Config& c) {
         EXPECT_EQ(c.db_path, host_db);
         EXPECT_EQ(c.spool_dir, "/s");
         EXPECT_EQ(c.db_adopt_from, "/var/lib/sedna/database.db");
         EXPECT_EQ(c.spool_adopt_from, "");
       }},
      {"SEDNA_DB_PATH wins",
       {{"ROOTFS_MOUNT_DIR", rootfs}, {"SEDNA_DB_PATH", "/data/lc.db"}},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.db_path, "/data/lc.db");
         EXPECT_EQ(c.spool_dir, "/data/spool");
         EXPECT_EQ(c.db_adopt_from, "");
         EXPECT_EQ(c.spool_adopt_from, "");
       }},
      {"--db wins, even naming the old default",
       {{"ROOTFS_MOUNT_DIR", rootfs}},
       {"--db", "/var/lib/sedna/database.db"},
       [](const Config& c) {
         EXPECT_EQ(c.db_path, "/var/lib/sedna/database.db");
         EXPECT_EQ(c.db_adopt_from, "");
       }},
      {"on the host itself (ROOTFS_MOUNT_DIR=/): beside the Go LC's database, not over it",
       {{"ROOTFS_MOUNT_DIR", "/"}},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.db_path, "/var/lib/sedna/sedna-lc/database.db");
         EXPECT_EQ(c.db_adopt_from, "/var/lib/sedna/database.db");
       }},
      {"rootfs not mounted: the old default",
       {{"ROOTFS_MOUNT_DIR", rootfs + "/no-such-dir"}},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.db_path, "/var/lib/sedna/database.db");
         EXPECT_EQ(c.spool_dir, "/var/lib/sedna/spool");
         EXPECT_EQ(c.db_adopt_from, "");
       }},
      {"no rootfs (standalone's empty ROOTFS_MOUNT_DIR)",
       {{"ROOTFS_MOUNT_DIR", ""}},
       {},
       [](const Config& c) {
         EXPECT_EQ(c.db_path, "/var/lib/sedna/database.db");
         EXPECT_EQ(c.db_adopt_from, "");
       }},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto c = LoadConfig(tc.env, tc.args);
    ASSERT_TRUE(c.ok()) << c.message();
    tc.check(*c);
  }
}

TEST(ValidateTimezone, NamesFilesPosixStringsAndNothingElse) {
  const std::string dir = ::testing::TempDir() + "/config_test_zoneinfo";
  std::filesystem::create_directories(dir + "/Test");
  std::ofstream(dir + "/Test/Zone") << "TZif2 and the rest of a zone file";
  std::ofstream(dir + "/zone.tab") << "# tzdb timezone descriptions\n";  // a file, not a zone
  for (const char* good : {"", "UTC", "GMT", ":UTC", "Test/Zone", ":Test/Zone", "Test/../Test/Zone",
                           "CST-8", ":CST-8", "UTC0", "EST5EDT", "<+0330>-3:30", "<-03>3",
                           "CET-1CEST,M3.5.0,M10.5.0/3", "NZST-12NZDT-13,M9.5.0,M4.1.0/3"}) {
    EXPECT_TRUE(ValidateTimezone(good, dir).ok())
        << good << ": " << ValidateTimezone(good, dir).message();
  }
  const std::string absolute = dir + "/Test/Zone";
  EXPECT_TRUE(ValidateTimezone(absolute, "/nonexistent").ok());
  for (const char* bad : {"Test/Zon", "Europe/Paris", "CST", "CST+", "C8", "12:00", "zone.tab",
                          ":zone.tab", "<+0>-3", "CST-8 ", "/no/such/file"}) {
    Status s = ValidateTimezone(bad, dir);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find(std::string("\"") + bad + "\""), std::string::npos) << s.message();
  }
}

TEST(ParsePort, NamesWhatItParses) {
  EXPECT_EQ(*ParsePort("X", "0"), 0);
  EXPECT_EQ(*ParsePort("X", "65535"), 65535);
  for (const char* bad : {"", "65536", "+1", " 1", "1 ", "0x10", "1.0"}) {
    auto p = ParsePort("MY_PORT", bad);
    ASSERT_FALSE(p.ok()) << "\"" << bad << "\"";
    EXPECT_NE(p.message().find("MY_PORT"), std::string::npos) << p.message();
  }
}

}  // namespace
}  // namespace sedna::app
