// Which subcommand argv names, that -h/--help reaches that subcommand's own help (its flags, not
// the daemon's), and the flag parsing of status and doctor.
#include "app/cli/commands.h"

#include <gtest/gtest.h>

#include "app/cli/doctor.h"
#include "app/cli/status_cmd.h"

namespace sedna::app {
namespace {

using Args = std::vector<std::string>;

TEST(ParseInvocation, RoutesSubcommandsHelpAndVersion) {
  struct Case {
    Args argv;
    Command command;
    bool help;
    Args rest;
  };
  const Case cases[] = {
      {{}, Command::kDaemon, false, {}},
      {{"--gm-address", "gm:9000"}, Command::kDaemon, false, {"--gm-address", "gm:9000"}},
      {{"--help"}, Command::kDaemon, true, {"--help"}},
      {{"-h"}, Command::kDaemon, true, {"-h"}},
      {{"--version"}, Command::kVersion, false, {"--version"}},
      {{"-V"}, Command::kVersion, false, {"-V"}},
      {{"version"}, Command::kVersion, false, {}},
      {{"standalone", "-f", "m/"}, Command::kStandalone, false, {"-f", "m/"}},
      {{"standalone", "--help"}, Command::kStandalone, true, {"--help"}},
      {{"status"}, Command::kStatus, false, {}},
      {{"jobs", "-h"}, Command::kStatus, true, {"-h"}},
      {{"status", "-o", "json", "--help"}, Command::kStatus, true, {"-o", "json", "--help"}},
      {{"rollback-model", "/m", "--version", "2"},
       Command::kRollbackModel,
       false,
       {"/m", "--version", "2"}},
      {{"rollback-model", "-h"}, Command::kRollbackModel, true, {"-h"}},
      {{"doctor", "--timeout", "1"}, Command::kDoctor, false, {"--timeout", "1"}},
      {{"doctor", "--help"}, Command::kDoctor, true, {"--help"}},
      {{"doctor", "--", "--help"}, Command::kDoctor, false, {"--", "--help"}},
  };
  for (const auto& c : cases) {
    std::string name;
    for (const auto& a : c.argv) name += a + " ";
    const auto inv = ParseInvocation(c.argv);
    EXPECT_EQ(inv.command, c.command) << name;
    EXPECT_EQ(inv.help, c.help) << name;
    EXPECT_EQ(inv.args, c.rest) << name;
  }
}

bool Has(const std::string& text, const std::string& s) {
  return text.find(s) != std::string::npos;
}

TEST(HelpText, EachSubcommandDescribesItsOwnFlagsNotTheDaemons) {
  struct Case {
    Command command;
    const char* usage;
    std::vector<const char*> flags;
  };
  const Case cases[] = {
      {Command::kStandalone, "sedna-lc standalone", {"--filename", "--worker-timeout", "--db"}},
      {Command::kStatus,
       "sedna-lc status",
       {"--output", "wide", "json", "--watch", "--interval", "--count", "--status-port"}},
      {Command::kRollbackModel, "sedna-lc rollback-model", {"--list", "--version", "--rootfs"}},
      {Command::kDoctor,
       "sedna-lc doctor",
       {"--gm-address", "--timeout", "--rootfs", "--db", "--bind-port", "--timezone"}},
      {Command::kVersion, "sedna-lc version", {}},
  };
  // Flags only the daemon has: a subcommand's help listing them is the daemon's help.
  const char* daemon_only[] = {"--ping-interval-ms", "--outbox-max-bytes", "--report-batch-ms",
                               "--s3-retries"};
  for (const auto& c : cases) {
    const std::string h = HelpText(c.command);
    EXPECT_TRUE(Has(h, std::string("Usage: ") + c.usage)) << h;
    for (const char* f : c.flags) EXPECT_TRUE(Has(h, f)) << c.usage << " lacks " << f << "\n" << h;
    for (const char* f : daemon_only) EXPECT_FALSE(Has(h, f)) << c.usage << " has " << f;
    if (c.command != Command::kVersion) {
      EXPECT_TRUE(Has(h, "--help")) << h;
    }
  }
}

TEST(HelpText, TopLevelListsSubcommandsDaemonFlagsAndEnvironment) {
  const std::string h = HelpText(Command::kDaemon);
  for (const char* s : {"standalone ", "status ", "rollback-model ", "doctor ", "version "}) {
    EXPECT_TRUE(Has(h, std::string("\n  ") + s)) << s << "\n" << h;
  }
  for (const char* f : {"--gm-address", "--ping-interval-ms", "--report-batch-ms", "--version"}) {
    EXPECT_TRUE(Has(h, f)) << f;
  }
  for (const char* e :
       {"GM_ADDRESS", "NODENAME", "BIND_PORT", "ROOTFS_MOUNT_DIR", "SEDNA_DB_PATH", "TZ "}) {
    EXPECT_TRUE(Has(h, e)) << e;
  }
  EXPECT_FALSE(Has(h, "Usage: [OPTIONS]"));  // CLI11's nameless usage line is not shown
}

TEST(TakeStatusArgs, GoodAndBad) {
  {
    Args a = {"-o", "json", "--db", "/x.db", "--watch", "--interval=0.5", "--count", "3"};
    auto s = TakeStatusArgs(a);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(s->output, "json");
    EXPECT_TRUE(s->watch);
    EXPECT_EQ(s->interval.count(), 500);
    EXPECT_EQ(s->count, 3);
    EXPECT_EQ(a, (Args{"--db", "/x.db"}));  // left for LoadConfig
  }
  {
    Args a = {"--output=wide", "-w"};
    auto s = TakeStatusArgs(a);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->output, "wide");
    EXPECT_EQ(s->interval.count(), 2000);
  }
  {
    Args a = {"--history", "default/digits-il", "-o", "json"};
    auto s = TakeStatusArgs(a);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(s->history, "default/digits-il");
    EXPECT_TRUE(a.empty());
  }
  const std::pair<Args, const char*> bad[] = {
      {{"-o", "yaml"}, "-o: \"yaml\""},
      {{"-o"}, "-o: a value is required"},
      {{"--watch", "--interval", "0"}, "--interval"},
      {{"--watch", "--interval", "x"}, "--interval"},
      {{"--watch", "--count", "0"}, "--count"},
      {{"--count", "2"}, "--count: only with --watch"},
      {{"--history"}, "--history: a value is required"},
      {{"--history", ""}, "--history: \"\" is not a job name"},
      {{"--history", "a b"}, "--history: \"a b\" is not a job name"},
      {{"--history", "x&job=y"}, "is not a job name"},
  };
  for (const auto& [args, want] : bad) {
    Args a = args;
    auto s = TakeStatusArgs(a);
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_TRUE(Has(s.message(), want)) << s.message();
  }
}

TEST(TakeDoctorArgs, FlagsWinOverEnvironmentAndTheRestIsLeft) {
  Args a = {"--db", "/x.db", "--gm-address=gm:1", "--timeout", "0.25", "--timezone", "CET"};
  auto d = TakeDoctorArgs({{"GM_ADDRESS", "env:9000"}, {"TZ", "UTC"}}, a);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->gm_address, "gm:1");
  EXPECT_EQ(d->timezone, "CET");
  EXPECT_EQ(d->timeout.count(), 250);
  EXPECT_EQ(a, (Args{"--db", "/x.db"}));

  Args b = {};
  d = TakeDoctorArgs({{"GM_ADDRESS", "not a valid address"}}, b);
  ASSERT_TRUE(d.ok());  // the doctor checks it, as its first step
  EXPECT_EQ(d->gm_address, "not a valid address");
  EXPECT_EQ(d->timeout.count(), 3000);

  for (Args bad : {Args{"--timeout", "0"}, Args{"--timeout", "soon"}, Args{"--gm-address"}}) {
    EXPECT_FALSE(TakeDoctorArgs({}, bad).ok()) << bad[0];
  }
}

}  // namespace
}  // namespace sedna::app
