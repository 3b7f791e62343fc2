// Local worker processes for standalone mode: train/eval/inference workers launched with
// fork + execve (so a root LC can drop the worker's privileges), each in its own process group,
// their exits watched on the caller's io_context through pidfds, or through SIGCHLD where
// pidfd_open is unavailable (Linux < 5.3, seccomp profiles that refuse it, valgrind 3.19). A worker
// is treated like a pod: when its main process ends, or is terminated, its whole process group is
// killed, so no grandchild outlives it (processes that leave the group with setsid/setpgid are out
// of reach).
#pragma once

#include <utility>  // before any Asio header (Boost 1.74 with g++ 12)

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace sedna::process {

struct ProcessSpec {
  // argv[0] without a '/' is looked up in the PATH of `env` (or the LC's PATH when `env` has
  // none, "/bin:/usr/bin" when neither has one); relative PATH entries and an argv[0] with a '/'
  // are relative to working_dir. The child sees argv[0] as given.
  std::vector<std::string> argv;
  // The complete environment of the child: nothing is inherited from the LC.
  std::map<std::string, std::string> env;
  // "" = the LC's working directory.
  std::string working_dir;
  // stdout and stderr are appended here; missing parent directories are created. "" = discarded.
  std::string log_path;
  // 0 = none. When it expires the process group gets SIGTERM, then SIGKILL after `grace`.
  std::chrono::milliseconds timeout{0};
  // Time between SIGTERM and SIGKILL on timeout and in ~ProcessRunner.
  std::chrono::milliseconds grace{5000};
  // The child's credentials, set after its process group, working directory and stdio (the log
  // is opened by the LC, so a worker of another user still writes it) and before exec:
  // supplementary groups, then gid, then uid (real, effective and saved). When `uid` or `gid` is
  // set the supplementary groups become exactly `groups`; this needs the LC to be root (or hold
  // CAP_SETUID/CAP_SETGID), else the start is a spawn failure naming the call. Unset: the LC's.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  std::vector<gid_t> groups;
  // PR_SET_NO_NEW_PRIVS before exec: set-user-ID and file capabilities grant nothing
  // (securityContext.allowPrivilegeEscalation: false).
  bool no_new_privs = false;
};

struct ExitInfo {
  int exit_code = -1;  // the exit status when the process exited normally, else -1
  int signal = 0;      // the signal that killed it, else 0
  bool timed_out = false;
  bool spawn_failed = false;  // the process never ran; `error` says why
  // How it ended, for logs and conditions; never empty. E.g. "exited with 3", "killed by SIGKILL",
  // "timed out after 30000 ms", "spawn python3: No such file or directory".
  std::string error;
};

// Not thread-safe: construct, call and destroy it on the thread that runs the io_context (or while
// the io_context is not running). The io_context must outlive the runner. Children are reaped with
// waitid(P_PID) only, so other waits for any child (waitpid(-1), SIGCHLD set to SIG_IGN) in the
// same process break exit reporting (reported as exit_code -1 with an explanatory error).
class ProcessRunner {
 public:
  // use_pidfd = false watches every exit through SIGCHLD, as on kernels without pidfd_open.
  explicit ProcessRunner(boost::asio::io_context& io, bool use_pidfd = true);
  // Sends SIGTERM to every running child's group, SIGKILL after that child's spec.grace, and reaps
  // them; blocks for at most the longest grace + 1 s (a child stuck in uninterruptible sleep may
  // outlive it). No on_exit is called from here on, neither for these children nor for pending
  // spawn failures.
  ~ProcessRunner();  // NOLINT(bugprone-exception-escape): see the definition
  ProcessRunner(const ProcessRunner&) = delete;
  ProcessRunner& operator=(const ProcessRunner&) = delete;

  // Starts spec.argv in a new process group with stdin from /dev/null, default signal
  // dispositions, an empty signal mask and no file descriptors above 2. on_exit runs exactly once,
  // on the io thread and never inline, after the process has been reaped and the rest of its group
  // has been sent SIGKILL; it may call any method and may destroy the runner. Everything that keeps
  // the process from running (command not found, log file or working directory unusable, exec
  // failure) is reported through on_exit with spawn_failed = true. An error is returned only for a
  // malformed spec (empty argv or argv[0], NUL bytes, env names that are empty or contain '='),
  // and then on_exit is never called.
  Result<int64_t> Start(const ProcessSpec& spec, std::function<void(const ExitInfo&)> on_exit);

  // Sends SIGTERM to the process group now and SIGKILL after `grace` if the process is still
  // alive (an earlier pending SIGKILL is kept). on_exit still fires. Unknown or finished ids are
  // ignored.
  void Terminate(int64_t id, std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

  // Terminates every child as Terminate(id, grace) does and blocks, reaping without running the
  // io_context, until all are gone or grace + 1 s has passed. on_exit is called inline (on the
  // calling thread, which must be the io thread or the io_context must be stopped) for each child
  // reaped and for pending spawn failures. Children still alive at the deadline stay registered.
  void TerminateAllAndWait(std::chrono::milliseconds grace);

  // Children started and not yet reaped.
  size_t running() const;
  // The process id (= process group id) of a child that has not been reaped yet.
  std::optional<pid_t> pid(int64_t id) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sedna::process
