// sedna-lc: cluster mode (Sedna's environment contract) and the subcommands of commands.h.
#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include "adapters/log/log.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "adapters/log/logging.h"
#include "app/cli/commands.h"
#include "app/cli/db_location.h"
#include "app/cli/doctor.h"
#include "app/cli/gm_diagnosis.h"
#include "app/cli/load_config.h"
#include "app/cli/rollback_cmd.h"
#include "app/cli/rootfs_access.h"
#include "app/cli/status_cmd.h"
#include "app/cli/version.h"
#include "app/cluster/controller.h"
#include "app/standalone/local_gm.h"

extern char** environ;

namespace {

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = std::string(eq + 1);
  }
  return env;
}

// The signals of a daemon (cluster and standalone mode; docs/security.md): SIGTERM, SIGINT,
// SIGQUIT and SIGHUP stop it cleanly (one log line naming the signal, then `stop`, which stops
// the workers and commits the state; exit status 0); SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
// SIGPROF, SIGIO, SIGPWR, SIGSTKFLT and the real-time signals, which would kill it silently by
// default and mean nothing to it, are logged and ignored. SIGPIPE is ignored (a write to a closed
// socket or pipe is an EPIPE error for the writer; workers start with default dispositions).
// Installed before the daemon starts, so a signal during start-up is taken when the loop runs.
class DaemonSignals {
 public:
  DaemonSignals(boost::asio::io_context& io, std::function<void()> stop)
      : stop_signals_(io, SIGTERM, SIGINT, SIGQUIT),
        ignored_(io, SIGUSR1, SIGUSR2, SIGALRM),
        stop_(std::move(stop)) {
    ::signal(SIGPIPE, SIG_IGN);
    stop_signals_.add(SIGHUP);
    // Best effort: a signal the environment keeps for itself (valgrind takes the last real-time
    // one; sigaction says EINVAL) stays as it is, and the daemon runs on.
    boost::system::error_code ec;
    auto ignore = [&](int sig) {
      if (ignored_.add(sig, ec); ec) {
        spdlog::debug("signal {} is not ignored: {}", sig, ec.message());
      }
    };
    for (int sig : {SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT}) ignore(sig);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) ignore(sig);
    WaitStop();
    WaitIgnored();
  }

 private:
  void WaitStop() {
    stop_signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (stopping_) {
        spdlog::info("signal {}: already shutting down", SignalName(sig));
        return WaitStop();
      }
      stopping_ = true;
      spdlog::info("signal {}: shutting down", SignalName(sig));
      stop_();
    });
  }
  void WaitIgnored() {
    ignored_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      spdlog::warn("signal {} ignored (SIGTERM, SIGINT, SIGQUIT or SIGHUP stop sedna-lc)",
                   SignalName(sig));
      WaitIgnored();
    });
  }
  static std::string SignalName(int sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    std::string name = abbrev ? std::string("SIG") + abbrev : "unknown";
    if (!abbrev && sig >= SIGRTMIN && sig <= SIGRTMAX) {
      name = "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
    }
    return name + " (" + std::to_string(sig) + ")";
  }

  boost::asio::signal_set stop_signals_;
  boost::asio::signal_set ignored_;
  std::function<void()> stop_;
  bool stopping_ = false;
};

int RunDaemon(const sedna::app::Config& cfg) {
  if (sedna::Status s = sedna::app::CheckRootfsAccess(cfg.rootfs); !s.ok()) {
    spdlog::critical("cannot start: {}", s.message());
    return 2;
  }
  // The database defaulted onto the host (the rootfs is mounted): adopt the old one first.
  auto adopted = sedna::app::AdoptOldDatabase(cfg);
  if (!adopted.ok()) {
    spdlog::critical("cannot start: {}", adopted.message());
    return 2;
  }
  if (!adopted->empty()) spdlog::warn("{}", *adopted);
  boost::asio::io_context io(1);
  sedna::app::Controller controller(io, cfg);
  DaemonSignals signals(io, [&] {
    controller.Stop();
    io.stop();
  });
  controller.SetGmDiagnosis([address = cfg.gm_address, node = cfg.node_name] {
    return sedna::app::DiagnoseGmForLog(address, node, std::chrono::seconds(2));
  });
  if (sedna::Status s = controller.Start(); !s.ok()) {
    spdlog::critical("cannot start: {}", s.message());
    controller.Stop();
    return 2;
  }
  io.run();
  return 0;
}

struct StandaloneFlags {
  std::string manifests;
  int64_t worker_timeout_s = 0;
};

// Takes -f/--filename and --worker-timeout out of args.
sedna::Result<StandaloneFlags> TakeStandaloneFlags(std::vector<std::string>& args) {
  StandaloneFlags f;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name) -> std::optional<std::string> {
      if (a == name && i + 1 < args.size()) return args[++i];
      if (a.rfind(name + "=", 0) == 0) return a.substr(name.size() + 1);
      return std::nullopt;
    };
    if (auto v = value("-f")) {
      f.manifests = *v;
    } else if (auto v2 = value("--filename")) {
      f.manifests = *v2;
    } else if (auto v3 = value("--worker-timeout")) {
      char* end = nullptr;
      f.worker_timeout_s = std::strtoll(v3->c_str(), &end, 10);
      if (v3->empty() || *end != '\0' || f.worker_timeout_s < 0) {
        return sedna::Result<StandaloneFlags>::Error("--worker-timeout: \"" + *v3 +
                                                     "\" is not a number of seconds");
      }
    } else {
      rest.push_back(a);
    }
  }
  if (f.manifests.empty()) {
    return sedna::Result<StandaloneFlags>::Error(
        "standalone: -f <manifest file or directory> is required");
  }
  args = std::move(rest);
  return f;
}

int RunStandalone(const sedna::app::Config& cfg, const StandaloneFlags& flags) {
  boost::asio::io_context io(1);
  sedna::app::Controller controller(io, cfg);
  sedna::app::LocalGmOptions o;
  o.manifest_path = flags.manifests;
  o.db_path = cfg.db_path;
  auto slash = cfg.db_path.rfind('/');
  const std::string data_dir =
      slash == std::string::npos ? std::string(".") : cfg.db_path.substr(0, slash);
  o.log_dir = data_dir + "/workers";
  o.worker_timeout = std::chrono::seconds(flags.worker_timeout_s);
  o.report_grace = std::chrono::milliseconds(5000 + cfg.report_batch_ms);
  o.gm_protocol = cfg.gm_protocol;
  // The GM's /var/lib/sedna/model-hot-update: standalone has no rootfs, and the LC writes there.
  o.hot_update_dir = cfg.hot_update_dir;
  sedna::app::LocalGm local(io, controller, o);
  DaemonSignals signals(io, [&] {
    spdlog::info("stopping workers and shutting down");
    local.Stop();
    controller.Stop();
    io.stop();
  });
  controller.SetUpstreamSink(&local);
  controller.SetReportGate(
      [&local](const sedna::core::WorkerReport& r) { return local.MayReport(r); });
  controller.SetWorkersSource([&local] { return local.Workers(); });
  if (sedna::Status s = controller.Start(); !s.ok()) {
    spdlog::critical("cannot start: {}", s.message());
    controller.Stop();
    return 2;
  }
  // Workers reach the LC on loopback; the port is known once the controller started.
  local.SetLcServer("http://127.0.0.1:" + std::to_string(controller.worker_port()));
  if (sedna::Status s = local.Start(); !s.ok()) {
    spdlog::critical("cannot start: {}", s.message());
    local.Stop();
    controller.Stop();
    return 2;
  }
  spdlog::info("standalone: manifests {}, worker logs in {}", flags.manifests, o.log_dir);
  controller.PumpOutbox();
  io.run();
  return 0;
}

// The program; main() only keeps an exception (there should be none: errors are values) from
// ending it without a word.
int Run(int argc, char** argv) {
  using sedna::app::Command;
  // A write past a file-size limit fails with EFBIG (an error the LC reports) instead of killing
  // the process.
  ::signal(SIGXFSZ, SIG_IGN);
  const auto inv = sedna::app::ParseInvocation(std::vector<std::string>(argv + 1, argv + argc));
  if (inv.help) {
    std::cout << sedna::app::HelpText(inv.command);
    return 0;
  }
  if (inv.command == Command::kVersion) {
    std::cout << sedna::app::VersionText();
    return 0;
  }
  std::vector<std::string> args = inv.args;
  auto env = Environment();
  StandaloneFlags sflags;
  bool bind_flag = false, report_delay_flag = false;
  if (inv.command == Command::kStandalone) {
    auto f = TakeStandaloneFlags(args);
    if (!f.ok()) {
      std::cerr << "sedna-lc: " << f.message() << " (sedna-lc standalone --help)\n";
      return 2;
    }
    sflags = *f;
    // Standalone defaults: host paths are real paths, state beside the working directory.
    env.erase("GM_ADDRESS");
    if (!env.count("ROOTFS_MOUNT_DIR")) env["ROOTFS_MOUNT_DIR"] = "";
    bool db_flag = false;
    for (const auto& a : args) {
      db_flag |= a == "--db" || a.rfind("--db=", 0) == 0;
      bind_flag |= a == "--bind-address" || a.rfind("--bind-address=", 0) == 0;
      report_delay_flag |=
          a == "--deploy-report-delay" || a.rfind("--deploy-report-delay=", 0) == 0;
    }
    if (!db_flag && !env.count("SEDNA_DB_PATH")) {
      char cwd[4096];
      env["SEDNA_DB_PATH"] =
          std::string(::getcwd(cwd, sizeof cwd) ? cwd : ".") + "/.sedna-lc/database.db";
    }
  }
  sedna::app::RollbackArgs rollback;
  if (inv.command == Command::kRollbackModel) {
    auto r = sedna::app::TakeRollbackArgs(args);
    if (!r.ok()) {
      std::cerr << "sedna-lc: " << r.message() << " (sedna-lc rollback-model --help)\n";
      return 2;
    }
    rollback = *r;
  }
  sedna::app::StatusArgs status;
  if (inv.command == Command::kStatus) {
    auto s = sedna::app::TakeStatusArgs(args);
    if (!s.ok()) {
      std::cerr << "sedna-lc status: " << s.message() << " (sedna-lc status --help)\n";
      return 2;
    }
    status = *s;
    status.clear_screen = ::isatty(STDOUT_FILENO) == 1;
  }
  sedna::app::DoctorArgs doctor;
  if (inv.command == Command::kDoctor) {
    auto d = sedna::app::TakeDoctorArgs(env, args);
    if (!d.ok()) {
      std::cerr << "sedna-lc doctor: " << d.message() << " (sedna-lc doctor --help)\n";
      return 2;
    }
    doctor = *d;
    // The doctor reports a bad GM address or time zone as a failed check, not a usage error.
    env.erase("GM_ADDRESS");
    env.erase("TZ");
  }
  auto cfg = sedna::app::LoadConfig(env, args);
  // Standalone mode's workers are local processes: the worker API listens on loopback only,
  // unless --bind-address says otherwise (docs/security.md).
  if (cfg.ok() && inv.command == Command::kStandalone && !bind_flag) {
    cfg->bind_address = "127.0.0.1";
  }
  // The g1 deploy-report delay keeps a report out of the GM's stale-cache write (the race of
  // docs/protocol.md §H2.0); the local GM applies every message to one state, so it has none.
  if (cfg.ok() && inv.command == Command::kStandalone && !report_delay_flag) {
    cfg->deploy_report_delay_ms = 0;
  }
  // Standalone's model hot update lives beside its database (the local GM's hostPath root).
  if (cfg.ok() && inv.command == Command::kStandalone) {
    cfg->hot_update_dir = sedna::app::StandaloneHotUpdateDir(cfg->db_path);
  }
  if (!cfg.ok()) {
    std::cerr << "sedna-lc: " << cfg.message() << "\n";
    return 2;
  }
  switch (inv.command) {
    case Command::kStatus:
      return sedna::app::RunStatusCommand(*cfg, status, std::cout, std::cerr);
    case Command::kRollbackModel:
      return sedna::app::RunRollbackCommand(*cfg, rollback, std::cout, std::cerr);
    case Command::kDoctor:
      return sedna::app::RunDoctorCommand(
          *cfg, doctor, env.count("TZDIR") ? env["TZDIR"] : "/usr/share/zoneinfo", std::cout);
    default:
      break;
  }
  sedna::app::SetupLogging(cfg->log_json, cfg->log_level);
  if (inv.command == Command::kStandalone) return RunStandalone(*cfg, sflags);
  return RunDaemon(*cfg);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sedna-lc: fatal: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "sedna-lc: fatal: an unknown exception\n");
  }
  return 70;  // EX_SOFTWARE
}
