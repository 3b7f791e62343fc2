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

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <pthread.h>

namespace sedna::process {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string ErrnoText(int e) { return std::system_category().message(e); }

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

// Closes an fd on scope exit unless released.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// The paths to hand to execve for `file`, following execvp's PATH search but with the child's
// PATH and working directory: the first executable one, or with `all` every one the LC may
// execute, in PATH order (a child with other credentials tries them in turn, as execvp does, since
// the LC's access check is not the child's). Errors are errno texts.
Result<std::vector<std::string>> ResolveExecutable(const std::string& file,
                                                   const std::map<std::string, std::string>& env,
                                                   const std::string& working_dir, bool all) {
  if (file.find('/') != std::string::npos) return std::vector<std::string>{file};
  std::vector<std::string> found;
  std::string path;
  if (auto it = env.find("PATH"); it != env.end()) {
    path = it->second;
  } else if (const char* lc_path = std::getenv("PATH")) {
    path = lc_path;
  } else {
    path = "/bin:/usr/bin";
  }
  bool denied = false;
  size_t begin = 0;
  for (;;) {
    const size_t end = std::min(path.find(':', begin), path.size());
    const std::string dir = end == begin ? "." : path.substr(begin, end - begin);
    const std::string candidate = dir + "/" + file;
    const std::string probe = candidate.front() != '/' && !working_dir.empty()
                                  ? working_dir + "/" + candidate
                                  : candidate;
    struct stat st {};
    if (::stat(probe.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(probe.c_str(), X_OK) == 0) {
        found.push_back(candidate);
        if (!all) return found;
      } else {
        denied = true;
      }
    }
    if (end == path.size()) break;
    begin = end + 1;
  }
  if (!found.empty()) return found;
  return Result<std::vector<std::string>>::Error(ErrnoText(denied ? EACCES : ENOENT));
}

// The log fd for the child's stdout/stderr: close-on-exec in the LC and never 0..2, so dup2 onto
// 1 and 2 yields inheritable copies.
Result<int> OpenLog(const std::string& log_path) {
  const char* path = log_path.empty() ? "/dev/null" : log_path.c_str();
  if (!log_path.empty()) {
    const std::filesystem::path parent = std::filesystem::path(log_path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) return Result<int>::Error("log file " + log_path + ": " + ec.message());
  }
  int fd;
  do {
    fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Result<int>::Error("log file " + log_path + ": " + ErrnoText(errno));
  if (fd <= 2) {
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    const int e = errno;
    ::close(fd);
    if (high < 0) return Result<int>::Error("log file " + log_path + ": " + ErrnoText(e));
    fd = high;
  }
  return fd;
}

struct Spawned {
  pid_t pid = -1;
  int pidfd = -1;  // -1: pidfd_open is unavailable or not wanted; watch through SIGCHLD
};

// Kills a child that was spawned but cannot be watched, and reaps it.
void KillAndReap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// What the child failed at before exec, sent to the parent through a close-on-exec pipe (the pipe
// reads EOF when exec succeeded).
enum class ChildStep : int {
  kSetpgid = 1,
  kChdir,
  kStdin,
  kStdio,
  kSetgroups,
  kSetgid,
  kSetuid,
  kNoNewPrivs,
  kExec
};
struct ChildError {
  ChildStep step;
  int error;
  size_t candidate;  // kExec: the executable whose error this is
};

std::string ChildStepText(const ChildError& failure, const ProcessSpec& spec,
                          const std::vector<std::string>& exes) {
  const ChildStep step = failure.step;
  switch (step) {
    case ChildStep::kSetpgid:
      return "setpgid: ";
    case ChildStep::kChdir:
      return "working directory " + spec.working_dir + ": ";
    case ChildStep::kStdin:
      return "stdin /dev/null: ";
    case ChildStep::kStdio:
      return "log file " + spec.log_path + ": ";
    case ChildStep::kSetgroups:
      return "setgroups: ";
    case ChildStep::kSetgid:
      return "setgid " + std::to_string(spec.gid.value_or(0)) + ": ";
    case ChildStep::kSetuid:
      return "setuid " + std::to_string(spec.uid.value_or(0)) + ": ";
    case ChildStep::kNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS): ";
    case ChildStep::kExec:
      break;
  }
  // Who could not execute what, when the process had other credentials than the LC.
  if (!spec.uid && !spec.gid) return "";
  std::string who = spec.uid ? "uid " + std::to_string(*spec.uid) : "";
  if (spec.gid) who += (who.empty() ? "gid " : " gid ") + std::to_string(*spec.gid);
  const std::string& exe = exes[std::min(failure.candidate, exes.size() - 1)];
  return "exec " + exe + " as " + who + ": ";
}

#if defined(SYS_setresuid32)  // 32-bit ABIs whose plain set*id calls take 16-bit ids
constexpr long kSysSetgroups = SYS_setgroups32, kSysSetresgid = SYS_setresgid32,
               kSysSetresuid = SYS_setresuid32;
#else
constexpr long kSysSetgroups = SYS_setgroups, kSysSetresgid = SYS_setresgid,
               kSysSetresuid = SYS_setresuid;
#endif

// Everything the child needs, prepared before fork: after fork only async-signal-safe calls are
// made (the LC has other threads; one of them may hold the allocator's lock).
struct ChildPlan {
  const char* const* exes = nullptr;  // tried in order
  size_t exe_count = 0;
  char** argv = nullptr;
  char** envp = nullptr;
  const char* working_dir = nullptr;  // null: the LC's
  int log_fd = -1;
  int error_fd = -1;  // the pipe's write end, > 2, close-on-exec
  bool set_ids = false;
  const gid_t* groups = nullptr;
  size_t group_count = 0;
  std::optional<gid_t> gid;
  std::optional<uid_t> uid;
  bool no_new_privs = false;
  int max_fd = 1024;  // for closing descriptors where close_range is missing
};

[[noreturn]] void ChildFail(const ChildPlan& plan, ChildStep step, size_t candidate = 0) {
  const ChildError e{step, errno, candidate};
  ssize_t ignored = ::write(plan.error_fd, &e, sizeof e);
  (void)ignored;
  ::_exit(127);
}

// In the forked child: process group, default signals, working directory, stdio, then the
// credentials (supplementary groups, gid, uid, in that order: a uid change first would leave no
// right to change the others), then exec. Never returns.
[[noreturn]] void RunChild(const ChildPlan& plan) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // some refuse: fine
  if (::setpgid(0, 0) != 0) ChildFail(plan, ChildStep::kSetpgid);
  if (plan.working_dir && ::chdir(plan.working_dir) != 0) ChildFail(plan, ChildStep::kChdir);
  const int in = ::open("/dev/null", O_RDONLY);
  if (in < 0) ChildFail(plan, ChildStep::kStdin);
  if (in != 0) {
    if (::dup2(in, 0) < 0) ChildFail(plan, ChildStep::kStdin);
    ::close(in);
  }
  if (::dup2(plan.log_fd, 1) < 0 || ::dup2(plan.log_fd, 2) < 0) {
    ChildFail(plan, ChildStep::kStdio);
  }
  if (plan.set_ids) {
    if (::syscall(kSysSetgroups, plan.group_count, plan.groups) != 0) {
      ChildFail(plan, ChildStep::kSetgroups);
    }
    if (plan.gid && ::syscall(kSysSetresgid, *plan.gid, *plan.gid, *plan.gid) != 0) {
      ChildFail(plan, ChildStep::kSetgid);
    }
    if (plan.uid && ::syscall(kSysSetresuid, *plan.uid, *plan.uid, *plan.uid) != 0) {
      ChildFail(plan, ChildStep::kSetuid);
    }
  }
  if (plan.no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ChildFail(plan, ChildStep::kNoNewPrivs);
  }
  // No descriptor above 2 but the error pipe (close-on-exec) survives.
  const auto keep = static_cast<unsigned>(plan.error_fd);  // > 2
  if ((keep > 3 && ::syscall(SYS_close_range, 3u, keep - 1, 0u) != 0) ||
      ::syscall(SYS_close_range, keep + 1, ~0u, 0u) != 0) {
    for (int fd = 3; fd < plan.max_fd; ++fd) {
      if (fd != plan.error_fd) ::close(fd);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // As execvp: an executable this user may not run, or that is gone, lets the next one be tried;
  // EACCES is reported if any had it.
  size_t denied = plan.exe_count;
  for (size_t i = 0; i < plan.exe_count; ++i) {
    ::execve(plan.exes[i], plan.argv, plan.envp);
    if (errno == EACCES) {
      if (denied == plan.exe_count) denied = i;
    } else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
      ChildFail(plan, ChildStep::kExec, i);
    }
  }
  if (denied < plan.exe_count) {
    errno = EACCES;
    ChildFail(plan, ChildStep::kExec, denied);
  }
  ChildFail(plan, ChildStep::kExec, plan.exe_count - 1);
}

// A close-on-exec descriptor numbered above 2 (so dup2 onto 0..2 cannot clobber it).
int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return high;
}

// Errors are complete ExitInfo texts ("spawn <argv0>: ...").
Result<Spawned> Spawn(const ProcessSpec& spec, bool use_pidfd) {
  const std::string what = "spawn " + spec.argv[0];
  if (!spec.working_dir.empty()) {
    struct stat st {};
    if (::stat(spec.working_dir.c_str(), &st) != 0) {
      return Result<Spawned>::Error(what + ": working directory " + spec.working_dir + ": " +
                                    ErrnoText(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
      return Result<Spawned>::Error(what + ": working directory " + spec.working_dir + ": " +
                                    ErrnoText(ENOTDIR));
    }
  }
  const bool set_ids = spec.uid.has_value() || spec.gid.has_value();
  Result<std::vector<std::string>> exe =
      ResolveExecutable(spec.argv[0], spec.env, spec.working_dir, set_ids);
  if (!exe.ok()) return Result<Spawned>::Error(what + ": " + exe.message());
  // Opened here, by the LC: a worker that runs as another user still gets its log.
  Result<int> log_fd = OpenLog(spec.log_path);
  if (!log_fd.ok()) return Result<Spawned>::Error(what + ": " + log_fd.message());
  FdGuard log{*log_fd};

  std::vector<std::string> env_strings;
  env_strings.reserve(spec.env.size());
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Result<Spawned>::Error(what + ": pipe: " + ErrnoText(errno));
  }
  FdGuard error_read{AboveStdio(pipe_fds[0])};
  FdGuard error_write{AboveStdio(pipe_fds[1])};
  if (error_read.fd < 0 || error_write.fd < 0) {
    return Result<Spawned>::Error(what + ": pipe: " + ErrnoText(errno));
  }

  ChildPlan plan;
  std::vector<const char*> exes;
  for (const std::string& e : *exe) exes.push_back(e.c_str());
  plan.exes = exes.data();
  plan.exe_count = exes.size();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.working_dir = spec.working_dir.empty() ? nullptr : spec.working_dir.c_str();
  plan.log_fd = log.fd;
  plan.error_fd = error_write.fd;
  plan.set_ids = set_ids;
  plan.groups = spec.groups.data();
  plan.group_count = spec.groups.size();
  plan.gid = spec.gid;
  plan.uid = spec.uid;
  plan.no_new_privs = spec.no_new_privs;
  if (const long open_max = ::sysconf(_SC_OPEN_MAX); open_max > 0) {
    plan.max_fd = static_cast<int>(std::min<long>(open_max, 1 << 20));
  }

  // Every signal blocked across fork, so no LC handler runs in the child before it resets them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(plan);
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::close(error_write.release());
  if (pid < 0) return Result<Spawned>::Error(what + ": fork: " + ErrnoText(fork_error));
  ::setpgid(pid, pid);  // also in the child; whichever comes first (EACCES after exec is fine)

  ChildError failure{};
  ssize_t n;
  do {
    n = ::read(error_read.fd, &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n != 0) {  // the child failed before or at exec (or the pipe broke: treat it the same)
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof failure)) {
      return Result<Spawned>::Error(what + ": lost the child's start-up report");
    }
    return Result<Spawned>::Error(what + ": " + ChildStepText(failure, spec, *exe) +
                                  ErrnoText(failure.error));
  }

  if (!use_pidfd) return Spawned{pid, -1};
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int pe = errno;
    // Not there (Linux < 5.3, valgrind) or refused (seccomp profiles answer EPERM).
    if (pe == ENOSYS || pe == EPERM) return Spawned{pid, -1};
    KillAndReap(pid);
    return Result<Spawned>::Error(what + ": pidfd_open: " + ErrnoText(pe));
  }
  return Spawned{pid, pidfd};
}

std::string Describe(const ExitInfo& info) {
  if (info.signal != 0) return "killed by " + SignalName(info.signal);
  return "exited with " + std::to_string(info.exit_code);
}

}  // namespace

struct ProcessRunner::Impl : std::enable_shared_from_this<Impl> {
  struct Child {
    pid_t pid = -1;
    std::string name;  // argv[0]
    std::function<void(const ExitInfo&)> on_exit;
    milliseconds timeout{0};
    milliseconds grace{0};
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd;  // null: watched by SIGCHLD
    std::unique_ptr<boost::asio::steady_timer> timeout_timer;
    std::unique_ptr<boost::asio::steady_timer> kill_timer;
    std::optional<Clock::time_point> kill_at;  // when SIGKILL is (or was) due
    bool timed_out = false;
    bool killed = false;  // SIGKILL sent
  };
  struct Failure {
    std::function<void(const ExitInfo&)> on_exit;
    ExitInfo info;
  };

  Impl(boost::asio::io_context& io_context, bool pidfds) : io(io_context), use_pidfd(pidfds) {}

  // The leader is not reaped yet, so pid (and with it the group id) cannot have been reused.
  static void Signal(const Child& c, int sig) {
    ::kill(-c.pid, sig);
    ::kill(c.pid, sig);  // in case it left its group
  }

  void Kill(Child& c) {
    if (c.killed) return;
    c.killed = true;
    Signal(c, SIGKILL);
  }

  void BeginTerminate(int64_t id, Child& c, milliseconds grace) {
    if (c.killed) return;
    Signal(c, SIGTERM);
    if (grace <= milliseconds(0)) {
      Kill(c);
      return;
    }
    const Clock::time_point at = Clock::now() + grace;
    if (c.kill_at && *c.kill_at <= at) return;
    c.kill_at = at;
    if (!c.kill_timer) c.kill_timer = std::make_unique<boost::asio::steady_timer>(io);
    c.kill_timer->expires_at(at);
    c.kill_timer->async_wait([weak = weak_from_this(), id](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed) return;
      if (Child* c = self->Find(id)) self->Kill(*c);
    });
  }

  Child* Find(int64_t id) {
    auto it = children.find(id);
    return it == children.end() ? nullptr : it->second.get();
  }

  void WatchExit(int64_t id, Child& c) {
    c.pidfd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                        [weak = weak_from_this(), id](const boost::system::error_code& ec) {
                          auto self = weak.lock();
                          if (ec || !self || self->closed) return;
                          self->OnReadable(id);
                        });
  }

  // Children without a pidfd are reaped on every SIGCHLD, and once right after each start (its
  // SIGCHLD may have come before the signal_set was there).
  void WatchBySignal() {
    if (!sigchld) {
      sigchld = std::make_unique<boost::asio::signal_set>(io, SIGCHLD);
      // Asio installs its handler without SA_RESTART: a worker's exit would then fail a write(2)
      // to a pipe on another thread (the log on stderr) with EINTR. Its handler only writes to a
      // pipe of its own, so restarting interrupted calls is safe.
      struct sigaction sa {};
      if (::sigaction(SIGCHLD, nullptr, &sa) == 0 && !(sa.sa_flags & SA_RESTART)) {
        sa.sa_flags |= SA_RESTART;
        ::sigaction(SIGCHLD, &sa, nullptr);
      }
      WaitSignal();
    }
    boost::asio::post(io, [weak = weak_from_this()] {
      auto self = weak.lock();
      if (self && !self->closed) self->ReapSignalled();
    });
  }

  void WaitSignal() {
    sigchld->async_wait([weak = weak_from_this()](const boost::system::error_code& ec, int) {
      auto self = weak.lock();
      if (ec || !self || self->closed) return;
      self->WaitSignal();
      self->ReapSignalled();
    });
  }

  void ReapSignalled() {
    auto keep_alive = shared_from_this();
    for (bool reaped = true; reaped && !closed;) {
      reaped = false;
      for (auto& [id, c] : children) {
        if (c->pidfd) continue;
        if (std::optional<ExitInfo> info = TryReap(*c)) {
          Finish(id, *info);  // may change `children`: rescan
          reaped = true;
          break;
        }
      }
    }
  }

  void ArmTimeout(int64_t id, Child& c) {
    c.timeout_timer = std::make_unique<boost::asio::steady_timer>(io, c.timeout);
    c.timeout_timer->async_wait([weak = weak_from_this(), id](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed) return;
      if (Child* c = self->Find(id)) {
        c->timed_out = true;
        self->BeginTerminate(id, *c, c->grace);
      }
    });
  }

  void OnReadable(int64_t id) {
    Child* c = Find(id);
    if (!c) return;
    std::optional<ExitInfo> info = TryReap(*c);
    if (!info) {
      WatchExit(id, *c);  // not reaped yet; the re-registration reports a ready pidfd again
      return;
    }
    Finish(id, *info);
  }

  // Once the leader has exited: SIGKILLs the rest of its group (while the zombie still holds the
  // group id) and reaps it. nullopt while it is still running.
  std::optional<ExitInfo> TryReap(Child& c) {
    siginfo_t si{};
    int r;
    do {
      r = ::waitid(P_PID, static_cast<id_t>(c.pid), &si, WEXITED | WNOHANG | WNOWAIT);
    } while (r < 0 && errno == EINTR);
    ExitInfo info;
    if (r < 0) {
      info.error = "exit status of " + c.name + " lost: " + ErrnoText(errno) +
                   " (reaped outside the process runner)";
      return info;
    }
    if (si.si_pid == 0) return std::nullopt;
    ::kill(-c.pid, SIGKILL);
    si = siginfo_t{};
    do {
      r = ::waitid(P_PID, static_cast<id_t>(c.pid), &si, WEXITED | WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r < 0 || si.si_pid == 0) {
      info.error = "exit status of " + c.name + " lost: " + ErrnoText(r < 0 ? errno : ECHILD);
      return info;
    }
    if (si.si_code == CLD_EXITED) {
      info.exit_code = si.si_status;
    } else {
      info.signal = si.si_status;
    }
    info.timed_out = c.timed_out;
    info.error = c.timed_out ? "timed out after " + std::to_string(c.timeout.count()) + " ms"
                             : Describe(info);
    if (si.si_code == CLD_DUMPED) info.error += " (core dumped)";
    return info;
  }

  // Unregisters the child, then calls on_exit (which may re-enter or destroy the runner).
  void Finish(int64_t id, const ExitInfo& info) {
    auto it = children.find(id);
    std::unique_ptr<Child> c = std::move(it->second);
    children.erase(it);
    boost::system::error_code ignored;
    if (c->timeout_timer) c->timeout_timer->cancel();
    if (c->kill_timer) c->kill_timer->cancel();
    if (c->pidfd) c->pidfd->close(ignored);
    auto keep_alive = shared_from_this();
    if (c->on_exit && !closed) c->on_exit(info);
  }

  void PostFailure(int64_t id, std::function<void(const ExitInfo&)> on_exit, std::string error) {
    ExitInfo info;
    info.spawn_failed = true;
    info.error = std::move(error);
    failures[id] = Failure{std::move(on_exit), std::move(info)};
    boost::asio::post(io, [weak = weak_from_this(), id] {
      auto self = weak.lock();
      if (self) self->DeliverFailure(id);
    });
  }

  void DeliverFailure(int64_t id) {
    auto it = failures.find(id);
    if (it == failures.end() || closed) return;
    Failure f = std::move(it->second);
    failures.erase(it);
    auto keep_alive = shared_from_this();
    if (f.on_exit) f.on_exit(f.info);
  }

  // Reaps children (polling their pidfds, not the io_context), sending SIGKILL as each kill_at
  // passes, until none is left or `deadline`. Delivers pending spawn failures unless closed.
  // terminate(id, child) is called for every child on each round.
  void ReapUntil(Clock::time_point deadline,
                 const std::function<void(int64_t, Child&)>& terminate) {
    auto keep_alive = shared_from_this();
    for (;;) {
      while (!failures.empty() && !closed) DeliverFailure(failures.begin()->first);
      for (auto& [id, c] : children) terminate(id, *c);
      bool reaped = false;
      for (auto& [id, c] : children) {
        if (std::optional<ExitInfo> info = TryReap(*c)) {
          Finish(id, *info);  // may change `children`: rescan
          reaped = true;
          break;
        }
      }
      if (reaped) continue;
      if (children.empty()) {
        if (failures.empty() || closed) return;
        continue;
      }
      const Clock::time_point now = Clock::now();
      if (now >= deadline) return;
      Clock::time_point wake = deadline;
      std::vector<pollfd> fds;
      for (auto& [id, c] : children) {
        if (!c->killed && c->kill_at) {
          if (*c->kill_at <= now) {
            Kill(*c);
          } else {
            wake = std::min(wake, *c->kill_at);
          }
        }
        if (c->pidfd) {
          fds.push_back(pollfd{c->pidfd->native_handle(), POLLIN, 0});
        } else {
          wake = std::min(wake, now + milliseconds(10));  // no pidfd to wait on: check again soon
        }
      }
      const auto wait = std::chrono::ceil<milliseconds>(wake - now);
      ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait.count(), 0)));
    }
  }

  boost::asio::io_context& io;
  const bool use_pidfd;
  std::unique_ptr<boost::asio::signal_set> sigchld;  // once a child has no pidfd
  bool closed = false;                               // set by ~ProcessRunner: no more callbacks
  int64_t next_id = 1;
  std::map<int64_t, std::unique_ptr<Child>> children;
  std::map<int64_t, Failure> failures;  // spawn failures posted but not yet delivered
};

ProcessRunner::ProcessRunner(boost::asio::io_context& io, bool use_pidfd)
    : impl_(std::make_shared<Impl>(io, use_pidfd)) {}

// bugprone-exception-escape: only std::bad_alloc (the kill timers, the reap loop's bookkeeping)
// can escape; a destructor that cannot allocate has nothing better to do than terminate.
// NOLINTNEXTLINE(bugprone-exception-escape)
ProcessRunner::~ProcessRunner() {
  Impl& m = *impl_;
  m.closed = true;
  m.failures.clear();
  Clock::time_point latest = Clock::now();
  for (auto& [id, c] : m.children) {
    m.BeginTerminate(id, *c, c->grace);
    if (c->kill_at) latest = std::max(latest, *c->kill_at);
  }
  m.ReapUntil(latest + std::chrono::seconds(1), [](int64_t, Impl::Child&) {});
  boost::system::error_code ignored;
  for (auto& [id, c] : m.children) {
    if (c->timeout_timer) c->timeout_timer->cancel();
    if (c->kill_timer) c->kill_timer->cancel();
    if (c->pidfd) c->pidfd->close(ignored);
  }
  m.children.clear();
  if (m.sigchld) m.sigchld->cancel(ignored);
}

Result<int64_t> ProcessRunner::Start(const ProcessSpec& spec,
                                     std::function<void(const ExitInfo&)> on_exit) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return Result<int64_t>::Error("process spec: empty command");
  }
  for (const std::string& arg : spec.argv) {
    if (HasNul(arg)) return Result<int64_t>::Error("process spec: NUL byte in argument");
  }
  for (const auto& [k, v] : spec.env) {
    if (k.empty() || k.find('=') != std::string::npos || HasNul(k) || HasNul(v)) {
      return Result<int64_t>::Error("process spec: invalid environment variable \"" + k + "\"");
    }
  }
  if (HasNul(spec.working_dir) || HasNul(spec.log_path)) {
    return Result<int64_t>::Error("process spec: NUL byte in path");
  }
  Impl& m = *impl_;
  const int64_t id = m.next_id++;
  Result<Spawned> spawned = Spawn(spec, m.use_pidfd);
  if (!spawned.ok()) {
    m.PostFailure(id, std::move(on_exit), spawned.message());
    return id;
  }
  auto c = std::make_unique<Impl::Child>();
  c->pid = spawned->pid;
  c->name = spec.argv[0];
  c->on_exit = std::move(on_exit);
  c->timeout = spec.timeout;
  c->grace = spec.grace;
  if (spawned->pidfd >= 0) {
    c->pidfd = std::make_unique<boost::asio::posix::stream_descriptor>(m.io);
    boost::system::error_code ec;
    c->pidfd->assign(spawned->pidfd, ec);
    if (ec) {
      ::close(spawned->pidfd);
      KillAndReap(spawned->pid);
      m.PostFailure(id, std::move(c->on_exit),
                    "spawn " + spec.argv[0] + ": watching the process: " + ec.message());
      return id;
    }
  }
  Impl::Child& child = *c;
  m.children.emplace(id, std::move(c));
  if (child.pidfd) {
    m.WatchExit(id, child);
  } else {
    m.WatchBySignal();
  }
  if (spec.timeout > milliseconds(0)) m.ArmTimeout(id, child);
  return id;
}

void ProcessRunner::Terminate(int64_t id, std::chrono::milliseconds grace) {
  if (Impl::Child* c = impl_->Find(id)) impl_->BeginTerminate(id, *c, grace);
}

void ProcessRunner::TerminateAllAndWait(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  const Clock::time_point deadline = Clock::now() + grace + std::chrono::seconds(1);
  std::set<int64_t> terminated;
  m.ReapUntil(deadline, [&](int64_t id, Impl::Child& c) {
    // Children started by an on_exit during the wait are terminated too.
    if (terminated.insert(id).second) m.BeginTerminate(id, c, grace);
  });
}

size_t ProcessRunner::running() const { return impl_->children.size(); }

std::optional<pid_t> ProcessRunner::pid(int64_t id) const {
  auto it = impl_->children.find(id);
  if (it == impl_->children.end()) return std::nullopt;
  return it->second->pid;
}

}  // namespace sedna::process
