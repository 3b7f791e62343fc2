#include "adapters/process/process_runner.h"

#include <utility>  // before any Asio header (Boost 1.74 with g++ 12)

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

namespace sedna::process {
namespace {

namespace stdfs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

// True once `pid` has exited, waiting on a pidfd for at most `cap`. Orphaned grandchildren are
// reparented to this process (a child subreaper, see SetUp) and are reaped here the way init
// would, so that kill(pid, 0) then fails with ESRCH.
bool WaitGone(pid_t pid, std::chrono::milliseconds cap = 5s) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  // The runner's SIGCHLD handler (Sigchld mode) interrupts poll(2) even with SA_RESTART.
  int r;
  do {
    r = ::poll(&p, 1, static_cast<int>(cap.count()));
  } while (r < 0 && errno == EINTR);
  ::close(fd);
  if (r != 1) return false;
  ::waitpid(pid, nullptr, WNOHANG);
  return ::kill(pid, 0) == -1 && errno == ESRCH;
}

bool Gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// Parameter: watch exits through pidfds (true) or through SIGCHLD (false, as on Linux < 5.3).
class ProcessRunnerTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0) << std::strerror(errno);
    std::string tmpl = (stdfs::temp_directory_path() / "process_runner_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    runner_ = std::make_unique<ProcessRunner>(io_, GetParam());
  }
  void TearDown() override {
    runner_.reset();
    for (int fd : fifo_fds_) ::close(fd);
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  // Runs the io_context until pred() holds; false after `cap`.
  bool RunUntil(const std::function<bool()>& pred, std::chrono::milliseconds cap = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + cap;
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io_.restart();
      io_.run_one_for(50ms);
    }
    return true;
  }

  ProcessSpec Sh(const std::string& script) {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.log_path = dir_ + "/log.txt";
    return spec;
  }

  // Starts spec; its ExitInfo lands in exits_[id] (on_exit never runs inside Start).
  int64_t StartOk(const ProcessSpec& spec) {
    auto slot = std::make_shared<int64_t>(-1);
    Result<int64_t> id = runner_->Start(spec, [this, slot](const ExitInfo& info) {
      ++calls_[*slot];
      exits_[*slot] = info;
    });
    EXPECT_TRUE(id.ok()) << id.message();
    *slot = id.ok() ? *id : -1;
    return *slot;
  }
  ExitInfo RunToExit(const ProcessSpec& spec) {
    const int64_t id = StartOk(spec);
    EXPECT_TRUE(RunUntil([&] { return calls_.count(id) > 0; })) << "no exit for " << spec.argv[0];
    return exits_[id];
  }

  // A FIFO the test reads from; a child writes a line to it once it has reached a point.
  std::string MakeFifo(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    // Non-blocking reader: the child's `echo > fifo` does not block on open; poll() waits for data.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    fifo_fds_.push_back(fd);
    fifos_[path] = fd;
    return path;
  }
  // The first line written to the FIFO; "" after `cap`.
  std::string ReadLine(const std::string& fifo, std::chrono::milliseconds cap = 10s) {
    const int fd = fifos_[fifo];
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + cap;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return "";
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r < 0 && errno == EINTR) continue;  // the runner's SIGCHLD handler (Sigchld mode)
      if (r != 1) return "";
      char buf[64];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) continue;
      line.append(buf, static_cast<size_t>(n));
      if (auto nl = line.find('\n'); nl != std::string::npos) return line.substr(0, nl);
    }
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  boost::asio::io_context io_;
  std::string dir_;
  std::unique_ptr<ProcessRunner> runner_;
  std::map<int64_t, int> calls_;
  std::map<int64_t, ExitInfo> exits_;
  std::vector<int> fifo_fds_;
  std::map<std::string, int> fifos_;
};

TEST_P(ProcessRunnerTest, ReportsExitCodes) {
  ExitInfo ok = RunToExit(Sh("exit 0"));
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.signal, 0);
  EXPECT_FALSE(ok.timed_out);
  EXPECT_FALSE(ok.spawn_failed);
  EXPECT_EQ(ok.error, "exited with 0");

  ExitInfo three = RunToExit(Sh("exit 3"));
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.error, "exited with 3");
  EXPECT_EQ(runner_->running(), 0u);
  for (const auto& [id, n] : calls_) EXPECT_EQ(n, 1);
}

TEST_P(ProcessRunnerTest, StdoutAndStderrAreAppendedToTheLogInNewDirectories) {
  ProcessSpec spec = Sh("echo to-stdout; echo to-stderr >&2");
  spec.log_path = dir_ + "/a/b/worker.log";
  ASSERT_EQ(RunToExit(spec).exit_code, 0);
  ASSERT_EQ(RunToExit(spec).exit_code, 0);
  EXPECT_EQ(ReadFile(spec.log_path), "to-stdout\nto-stderr\nto-stdout\nto-stderr\n");
}

TEST_P(ProcessRunnerTest, EnvironmentIsExactlyTheSpec) {
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.env = {{"A", "1"}, {"B", "two words"}, {"EMPTY", ""}};
  spec.log_path = dir_ + "/env.log";
  ASSERT_EQ(RunToExit(spec).exit_code, 0);
  EXPECT_EQ(ReadFile(spec.log_path), "A=1\nB=two words\nEMPTY=\n");
}

TEST_P(ProcessRunnerTest, CommandIsResolvedThroughTheSpecsPathThenTheLcsPath) {
  ProcessSpec spec;
  spec.argv = {"env"};
  spec.env = {{"PATH", dir_ + "/nothing-here:/usr/bin:/bin"}};
  spec.log_path = dir_ + "/path.log";
  ASSERT_EQ(RunToExit(spec).exit_code, 0);
  EXPECT_EQ(ReadFile(spec.log_path), "PATH=" + dir_ + "/nothing-here:/usr/bin:/bin\n");

  spec.env = {{"X", "y"}};  // no PATH: the LC's PATH finds env, and the child gets no PATH
  stdfs::remove(spec.log_path);
  ASSERT_EQ(RunToExit(spec).exit_code, 0);
  EXPECT_EQ(ReadFile(spec.log_path), "X=y\n");

  spec.env = {{"PATH", dir_}};
  ExitInfo missing = RunToExit(spec);
  EXPECT_TRUE(missing.spawn_failed);
  EXPECT_EQ(missing.error, "spawn env: No such file or directory");
}

TEST_P(ProcessRunnerTest, WorkingDirectoryIsHonoured) {
  ProcessSpec spec;
  spec.argv = {"/bin/pwd"};
  spec.working_dir = dir_;
  spec.log_path = dir_ + "/pwd.log";
  ASSERT_EQ(RunToExit(spec).exit_code, 0);
  EXPECT_EQ(ReadFile(spec.log_path), stdfs::canonical(dir_).string() + "\n");

  spec.working_dir = dir_ + "/missing";
  ExitInfo info = RunToExit(spec);
  EXPECT_TRUE(info.spawn_failed);
  EXPECT_THAT(info.error, HasSubstr("working directory " + dir_ + "/missing"));
}

TEST_P(ProcessRunnerTest, StdinIsDevNullAndNoDescriptorLeaks) {
  const int leaked = ::open("/dev/null", O_RDONLY);  // deliberately not close-on-exec
  ASSERT_GE(leaked, 3);
  ProcessSpec spec = Sh("readlink /proc/self/fd/0; test -e /proc/self/fd/" +
                        std::to_string(leaked) + " && echo leaked || echo closed; cat");
  ExitInfo info = RunToExit(spec);
  ::close(leaked);
  EXPECT_EQ(info.exit_code, 0);
  EXPECT_EQ(ReadFile(spec.log_path), "/dev/null\nclosed\n");
}

TEST_P(ProcessRunnerTest, MissingCommandIsReportedAsSpawnFailureLater) {
  ProcessSpec spec;
  spec.argv = {"no-such-command-xyz", "--flag"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  bool called = false;
  ExitInfo got;
  Result<int64_t> id = runner_->Start(spec, [&](const ExitInfo& info) {
    EXPECT_FALSE(called);
    called = true;
    got = info;
  });
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_FALSE(called);  // posted, not inline
  EXPECT_EQ(runner_->running(), 0u);
  EXPECT_FALSE(runner_->pid(*id).has_value());
  ASSERT_TRUE(RunUntil([&] { return called; }));
  EXPECT_TRUE(got.spawn_failed);
  EXPECT_EQ(got.exit_code, -1);
  EXPECT_EQ(got.error, "spawn no-such-command-xyz: No such file or directory");

  spec.argv = {dir_ + "/missing.sh"};
  EXPECT_EQ(RunToExit(spec).error, "spawn " + dir_ + "/missing.sh: No such file or directory");
}

TEST_P(ProcessRunnerTest, UnusableLogFileIsASpawnFailure) {
  ProcessSpec spec = Sh("exit 0");
  spec.log_path = dir_;  // a directory
  ExitInfo info = RunToExit(spec);
  EXPECT_TRUE(info.spawn_failed);
  EXPECT_THAT(info.error, HasSubstr("log file " + dir_));
}

TEST_P(ProcessRunnerTest, MalformedSpecIsAnError) {
  auto never = [](const ExitInfo&) { ADD_FAILURE() << "on_exit called"; };
  EXPECT_FALSE(runner_->Start(ProcessSpec{}, never).ok());
  ProcessSpec spec = Sh("exit 0");
  spec.env["A=B"] = "x";
  EXPECT_FALSE(runner_->Start(spec, never).ok());
  spec = Sh(std::string("exit\0 0", 7));
  EXPECT_FALSE(runner_->Start(spec, never).ok());
  io_.poll();
}

TEST_P(ProcessRunnerTest, ChildLeadsItsOwnProcessGroup) {
  const int64_t id = StartOk(Sh("sleep 100"));
  const std::optional<pid_t> pid = runner_->pid(id);
  ASSERT_TRUE(pid.has_value());
  EXPECT_EQ(::getpgid(*pid), *pid);
  EXPECT_NE(::getpgid(*pid), ::getpgrp());
  runner_->Terminate(id);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }));
  EXPECT_FALSE(runner_->pid(id).has_value());
}

TEST_P(ProcessRunnerTest, TimeoutKillsTheGroupIncludingGrandchildren) {
  const std::string fifo = MakeFifo("gc");
  ProcessSpec spec = Sh("sleep 100 & echo $! > " + fifo + "; sleep 100");
  spec.timeout = 300ms;
  const int64_t id = StartOk(spec);
  const pid_t pid = *runner_->pid(id);
  const pid_t grandchild = static_cast<pid_t>(std::stol(ReadLine(fifo)));
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }));
  const ExitInfo& info = exits_[id];
  EXPECT_TRUE(info.timed_out);
  EXPECT_EQ(info.signal, SIGTERM);
  EXPECT_EQ(info.error, "timed out after 300 ms");
  EXPECT_TRUE(Gone(pid));
  EXPECT_TRUE(WaitGone(grandchild));
}

TEST_P(ProcessRunnerTest, GroupMembersLeftBehindByANormalExitAreKilled) {
  const std::string fifo = MakeFifo("gc");
  const int64_t id = StartOk(Sh("sleep 100 & echo $! > " + fifo + "; exit 0"));
  const pid_t grandchild = static_cast<pid_t>(std::stol(ReadLine(fifo)));
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }));
  EXPECT_EQ(exits_[id].exit_code, 0);
  EXPECT_TRUE(WaitGone(grandchild));
}

TEST_P(ProcessRunnerTest, TerminateSendsSigterm) {
  const int64_t id = StartOk(Sh("exec sleep 100"));
  runner_->Terminate(id);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }));
  EXPECT_EQ(exits_[id].signal, SIGTERM);
  EXPECT_EQ(exits_[id].exit_code, -1);
  EXPECT_FALSE(exits_[id].timed_out);
  EXPECT_EQ(exits_[id].error, "killed by SIGTERM");
  runner_->Terminate(id);  // finished: ignored
  io_.poll();
  EXPECT_EQ(calls_[id], 1);
}

TEST_P(ProcessRunnerTest, TerminateSignalsTheWholeGroupSoGrandchildrenCanShutDownCleanly) {
  const std::string ready = MakeFifo("ready");
  const std::string got = MakeFifo("got");
  // The leader outlives the grandchild (it waits for it on SIGTERM), so only a group-wide SIGTERM
  // lets the grandchild's trap run before the group is SIGKILLed.
  const int64_t id =
      StartOk(Sh("trap 'wait; exit 0' TERM; (trap 'echo got-term > " + got + "; exit 0' TERM; " +
                 "echo ready > " + ready + "; while :; do sleep 0.05; done) & wait"));
  ASSERT_EQ(ReadLine(ready), "ready");
  runner_->Terminate(id, 10s);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }, 5s));
  EXPECT_EQ(exits_[id].exit_code, 0);
  EXPECT_EQ(ReadLine(got, 1s), "got-term");
}

TEST_P(ProcessRunnerTest, ChildGetsDefaultSignalsEvenWhenTheLcBlocksOrIgnoresThem) {
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &old_mask), 0);
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGTERM, &ignore, &old_action), 0);
  const int64_t id = StartOk(Sh("exec sleep 100"));
  ::sigaction(SIGTERM, &old_action, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  runner_->Terminate(id, 10s);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }, 5s));
  EXPECT_EQ(exits_[id].signal, SIGTERM);
}

TEST_P(ProcessRunnerTest, ChildIgnoringSigtermIsKilledAfterGrace) {
  const std::string fifo = MakeFifo("ready");
  const int64_t id = StartOk(Sh("trap '' TERM; echo ready > " + fifo + "; sleep 100"));
  ASSERT_EQ(ReadLine(fifo), "ready");
  const auto start = std::chrono::steady_clock::now();
  runner_->Terminate(id, 300ms);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(exits_[id].signal, SIGKILL);
  EXPECT_EQ(exits_[id].error, "killed by SIGKILL");
}

TEST_P(ProcessRunnerTest, DestructorLeavesNoProcessAlive) {
  const std::string gc_fifo = MakeFifo("gc");
  const std::string ready_fifo = MakeFifo("ready");
  ProcessSpec stubborn = Sh("trap '' TERM; echo ready > " + ready_fifo + "; sleep 100");
  stubborn.grace = 200ms;
  std::vector<int64_t> ids = {StartOk(Sh("exec sleep 100")),
                              StartOk(Sh("sleep 100 & echo $! > " + gc_fifo + "; wait")),
                              StartOk(stubborn)};
  std::vector<pid_t> pids;
  for (int64_t id : ids) pids.push_back(*runner_->pid(id));
  const pid_t grandchild = static_cast<pid_t>(std::stol(ReadLine(gc_fifo)));
  ASSERT_EQ(ReadLine(ready_fifo), "ready");
  ASSERT_EQ(runner_->running(), 3u);

  const auto start = std::chrono::steady_clock::now();
  runner_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1200ms);
  for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << pid;
  EXPECT_TRUE(WaitGone(grandchild));
  io_.restart();
  io_.poll();
  EXPECT_TRUE(calls_.empty());
}

TEST_P(ProcessRunnerTest, TerminateAllAndWaitReapsWithoutTheIoContext) {
  const std::string fifo = MakeFifo("ready");
  const int64_t plain = StartOk(Sh("exec sleep 100"));
  const int64_t stubborn = StartOk(Sh("trap '' TERM; echo ready > " + fifo + "; sleep 100"));
  ProcessSpec missing;
  missing.argv = {"no-such-command-xyz"};
  const int64_t failed = StartOk(missing);
  ASSERT_EQ(ReadLine(fifo), "ready");

  const auto start = std::chrono::steady_clock::now();
  runner_->TerminateAllAndWait(200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1200ms);
  EXPECT_EQ(runner_->running(), 0u);
  EXPECT_EQ(exits_[plain].signal, SIGTERM);
  EXPECT_EQ(exits_[stubborn].signal, SIGKILL);
  EXPECT_TRUE(exits_[failed].spawn_failed);
  io_.restart();
  io_.poll();
  EXPECT_EQ(calls_.size(), 3u);
  for (const auto& [id, n] : calls_) EXPECT_EQ(n, 1) << id;
}

TEST_P(ProcessRunnerTest, OnExitMayDestroyTheRunner) {
  bool called = false;
  ASSERT_TRUE(runner_
                  ->Start(Sh("exit 0"),
                          [&](const ExitInfo&) {
                            called = true;
                            runner_.reset();
                          })
                  .ok());
  ASSERT_TRUE(RunUntil([&] { return called; }));
  EXPECT_EQ(runner_, nullptr);
}

TEST_P(ProcessRunnerTest, FiftyParallelProcessesAreEachReportedOnce) {
  std::map<int64_t, int> expected;
  for (int i = 0; i < 50; ++i) expected[StartOk(Sh("exit " + std::to_string(i % 7)))] = i % 7;
  ASSERT_EQ(expected.size(), 50u);
  ASSERT_TRUE(RunUntil([&] { return calls_.size() == 50; }, 30s));
  io_.restart();
  io_.poll();
  for (const auto& [id, code] : expected) {
    EXPECT_EQ(calls_[id], 1) << id;
    EXPECT_EQ(exits_[id].exit_code, code) << id;
  }
  EXPECT_EQ(runner_->running(), 0u);
}

// The mode is real: a running child holds a pidfd only when pidfds are asked for.
TEST_P(ProcessRunnerTest, ExitsAreWatchedTheWayAsked) {
  auto pidfds = [] {
    int n = 0;
    for (const auto& e : stdfs::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      if (stdfs::read_symlink(e.path(), ec).string() == "anon_inode:[pidfd]") ++n;
    }
    return n;
  };
  const int before = pidfds();
  const int64_t id = StartOk(Sh("sleep 30"));
  EXPECT_EQ(pidfds() - before, GetParam() ? 1 : 0);
  runner_->Terminate(id, 5s);
  ASSERT_TRUE(RunUntil([&] { return calls_.count(id) > 0; }));
  EXPECT_EQ(exits_[id].signal, SIGTERM) << exits_[id].error;
  EXPECT_EQ(pidfds(), before);
}

// Credentials (securityContext.runAsUser/runAsGroup in standalone mode): set in the child, in the
// order setgroups, setgid, setuid, with the log opened by the LC in a directory only root may
// enter. Needs root (CI runs as root).
TEST_P(ProcessRunnerTest, CredentialsAreAppliedInTheChild) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change the child's uid/gid";
  const std::string private_dir = dir_ + "/private";
  ASSERT_TRUE(stdfs::create_directory(private_dir));
  ASSERT_EQ(::chmod(private_dir.c_str(), 0700), 0);
  ProcessSpec spec = Sh(
      "echo \"$(id -u) $(id -g) $(id -G)\"; grep NoNewPrivs /proc/self/status; echo \"cwd $PWD\"");
  spec.log_path = private_dir + "/log.txt";
  // Entered before the uid changes: the worker starts there even if it may not list it.
  spec.working_dir = private_dir;
  spec.uid = 65534;
  spec.gid = 65533;
  spec.groups = {4242, 4343};
  spec.no_new_privs = true;
  const ExitInfo info = RunToExit(spec);
  EXPECT_EQ(info.exit_code, 0) << info.error;
  const std::string log = ReadFile(spec.log_path);
  EXPECT_THAT(log, HasSubstr("65534 65533 65533 4242 4343\n"));
  EXPECT_THAT(log, ::testing::ContainsRegex("NoNewPrivs:[ \t]*1"));
  EXPECT_THAT(log, HasSubstr("cwd " + private_dir + "\n"));
}

TEST_P(ProcessRunnerTest, WithoutCredentialsTheChildKeepsTheLcs) {
  ProcessSpec spec = Sh("echo \"$(id -u) $(id -g)\"; grep NoNewPrivs /proc/self/status");
  const ExitInfo info = RunToExit(spec);
  EXPECT_EQ(info.exit_code, 0) << info.error;
  const std::string log = ReadFile(spec.log_path);
  EXPECT_THAT(log, HasSubstr(std::to_string(::geteuid()) + " " + std::to_string(::getegid())));
  EXPECT_THAT(log, ::testing::ContainsRegex("NoNewPrivs:[ \t]*0"));
}

// A command the new user may not execute is a spawn failure, reported through on_exit.
TEST_P(ProcessRunnerTest, ExecRefusedToTheNewUserIsASpawnFailure) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change the child's uid/gid";
  const std::string script = dir_ + "/root-only.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho ran\n";
  }
  ASSERT_EQ(::chmod(script.c_str(), 0700), 0);
  ProcessSpec spec;
  spec.argv = {script};
  spec.log_path = dir_ + "/log.txt";
  spec.uid = 65534;
  spec.gid = 65534;
  const ExitInfo info = RunToExit(spec);
  EXPECT_TRUE(info.spawn_failed) << info.error;
  EXPECT_EQ(info.error,
            "spawn " + script + ": exec " + script + " as uid 65534 gid 65534: Permission denied");
  EXPECT_EQ(ReadFile(spec.log_path).find("ran"), std::string::npos);
}

// Dropping to a user as a non-root LC cannot work: the start fails naming the call.
TEST_P(ProcessRunnerTest, CredentialChangeWithoutTheRightIsASpawnFailure) {
  if (::geteuid() == 0) GTEST_SKIP() << "runs as root: setgroups would succeed";
  ProcessSpec spec = Sh("echo ran");
  spec.uid = ::geteuid() + 1;
  const ExitInfo info = RunToExit(spec);
  EXPECT_TRUE(info.spawn_failed) << info.error;
  EXPECT_EQ(info.error, "spawn /bin/sh: setgroups: Operation not permitted");
}

// A PATH entry the new user may not enter (e.g. a shim under /root) does not hide a later one:
// the child searches as execvp would, under its own credentials.
TEST_P(ProcessRunnerTest, PathSearchUnderOtherCredentialsSkipsWhatTheUserCannotRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change the child's uid/gid";
  const std::string private_bin = dir_ + "/private-bin";
  ASSERT_TRUE(stdfs::create_directory(private_bin));
  {
    std::ofstream f(private_bin + "/sh");
    f << "#!/bin/sh\necho shim\n";
  }
  ASSERT_EQ(::chmod((private_bin + "/sh").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(private_bin.c_str(), 0700), 0);
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo \"real $(id -u)\""};
  spec.env = {{"PATH", private_bin + ":/usr/bin:/bin"}};
  spec.log_path = dir_ + "/log.txt";
  spec.uid = 65534;
  spec.gid = 65534;
  const ExitInfo info = RunToExit(spec);
  EXPECT_EQ(info.exit_code, 0) << info.error;
  EXPECT_EQ(ReadFile(spec.log_path), "real 65534\n");
  // Nothing the user may run: the EACCES is named with the executable that had it.
  spec.env = {{"PATH", private_bin}};
  const ExitInfo denied = RunToExit(spec);
  EXPECT_TRUE(denied.spawn_failed) << denied.error;
  EXPECT_EQ(denied.error,
            "spawn sh: exec " + private_bin + "/sh as uid 65534 gid 65534: Permission denied");
}

INSTANTIATE_TEST_SUITE_P(ExitWatch, ProcessRunnerTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Pidfd" : "Sigchld";
                         });

}  // namespace
}  // namespace sedna::process
