// Signals to a cluster-mode sedna-lc ([D:I21.8]b; standalone mode, with its workers, is
// StandaloneTest.StopSignalsStopTheWorkersAndTheOthersAreIgnored): SIGTERM, SIGINT, SIGQUIT and
// SIGHUP stop it cleanly, with a log line naming the signal and exit status 0; the default-fatal
// signals that are no error (a real-time one among them) are logged and ignored (SIGPIPE
// silently), and it keeps answering.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "cluster_fixture.h"

namespace sedna::testing {
namespace {

class SignalsTest : public ClusterFixture {
 protected:
  // The log written since `from` (bytes).
  std::string LogSince(size_t from) const {
    const std::string log = ReadFile(tmp + "/lc.log");
    return from < log.size() ? log.substr(from) : "";
  }
  // Polls the daemon's log (another process's output) until it holds `needle` `n` times.
  bool WaitForLog(size_t from, const std::string& needle, int n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      const std::string log = LogSince(from);
      int count = 0;
      for (size_t p = log.find(needle); p != std::string::npos; p = log.find(needle, p + 1)) {
        ++count;
      }
      if (count >= n) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  bool Alive() const {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(lc->pid()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == 0;
  }
};

TEST_F(SignalsTest, StopSignalsStopCleanlyAndTheOthersAreIgnored) {
  MakeWorld("sedna-signals-");
  const uint16_t status_port = FreePort();
  const std::pair<int, const char*> kStop[] = {
      {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGHUP, "SIGHUP"}};
  const std::pair<int, const char*> kIgnored[] = {
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGALRM, "SIGALRM"}, {SIGVTALRM, "SIGVTALRM"},
      {SIGPROF, "SIGPROF"}, {SIGPOLL, "SIGPOLL"}, {SIGPWR, "SIGPWR"}};
  for (const auto& [sig, name] : kStop) {
    SCOPED_TRACE(name);
    const size_t from = ReadFile(tmp + "/lc.log").size();
    ASSERT_NO_FATAL_FAILURE(StartLc(status_port));
    if (sig == SIGTERM) {
      for (const auto& [ignored, ignored_name] : kIgnored) ASSERT_EQ(::kill(lc->pid(), ignored), 0);
      ASSERT_EQ(::kill(lc->pid(), SIGRTMIN + 1), 0);
      ASSERT_EQ(::kill(lc->pid(), SIGPIPE), 0);  // ignored without a line
      ASSERT_TRUE(WaitForLog(from, " ignored (SIGTERM, SIGINT, SIGQUIT or SIGHUP stop",
                             static_cast<int>(std::size(kIgnored)) + 1))
          << LogSince(from);
      for (const auto& [ignored, ignored_name] : kIgnored) {
        EXPECT_NE(LogSince(from).find(std::string("signal ") + ignored_name + " (" +
                                      std::to_string(ignored) + ") ignored"),
                  std::string::npos)
            << ignored_name;
      }
      EXPECT_TRUE(Alive());
      EXPECT_EQ(HttpRequest(status_port, "GET", "/healthz", "", {}).status, 200);
    }
    ASSERT_EQ(::kill(lc->pid(), sig), 0);
    EXPECT_EQ(lc->Wait(), 0) << LogSince(from);
    EXPECT_NE(LogSince(from).find(std::string("signal ") + name + " (" + std::to_string(sig) +
                                  "): shutting down"),
              std::string::npos)
        << LogSince(from);
  }
}

}  // namespace
}  // namespace sedna::testing
