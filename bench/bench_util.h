// Shared helpers for the end-to-end benchmarks: the real sedna-lc binary (a child process) against
// the GM emulator of tests/integration, plus /proc readers, object builders and statistics.
// Benchmarks print figures; nothing here asserts a target.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gm_emulator.h"
#include "lc_process.h"

namespace sedna::bench {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// --name=value flags; Get falls back to `def`.
class Args {
 public:
  Args(int argc, char** argv);
  std::string Get(const std::string& name, const std::string& def) const;
  int64_t GetInt(const std::string& name, int64_t def) const;
  double GetDouble(const std::string& name, double def) const;
  bool Has(const std::string& name) const { return values_.count(name) > 0; }

 private:
  std::map<std::string, std::string> values_;
};

// The sedna-lc binary: --lc=<path>, else $SEDNA_LC, else <build dir>/sedna-lc.
std::string LcBinary(const Args& args);

// Where each run's temp dir goes: --tmp-root=<dir>, else $TMPDIR, else /tmp.
std::string TmpRoot(const Args& args);

// One upstream frame the LC sent, as seen by the GM emulator's server thread.
struct Seen {
  Clock::time_point at;
  std::string kind;  // header.resourceKind
  std::string name;  // header.resourceName
  Json body;         // parsed content
};

// A temp rootfs + database, the GM emulator and one sedna-lc process connected to it.
// Upstream frames are tapped on the emulator's server thread (timestamped there) and the
// emulator's own frame queue is drained by a background thread so it does not grow.
class Cluster {
 public:
  struct Options {
    std::string lc_binary;
    std::string log_level = "info";
    bool connect_gm = true;  // false: no GM_ADDRESS (upstream frames stay in the outbox)
    // Non-empty: GM_ADDRESS is this instead of the emulator's (e.g. "127.0.0.1:1", a port that
    // refuses: the GM unreachable), and no connection is awaited.
    std::string gm_address;
    bool decode_frames = true;  // false: only count upstream frames (cheap tap)
    std::string tmp_prefix = "sedna-bench-";
    std::string tmp_root = "/tmp";  // where the rootfs, database and spools go (its filesystem
                                    // decides what fsync costs)
  };
  explicit Cluster(Options o);
  ~Cluster();

  // rootfs path of a host path ("/data/x.txt" -> "<tmp>/rootfs/data/x.txt").
  std::string Host(const std::string& path) const { return rootfs_ + path; }
  pid_t pid() const { return lc_->pid(); }
  uint16_t worker_port() const { return worker_port_; }
  uint16_t status_port() const { return status_port_; }
  testing::GmEmulator& gm() { return *gm_; }
  const std::string& tmp() const { return tmp_; }
  std::string Log() const { return lc_->Log(); }

  void Send(const std::string& op, const Json& obj) { gm_->Send(op, obj); }

  // Waits for a tapped frame matching `pred` (frames seen before the call count too, oldest
  // first); the matching frame is removed. nullopt on timeout.
  std::optional<Seen> WaitFrame(const std::function<bool(const Seen&)>& pred,
                                std::chrono::milliseconds timeout);
  // Drops every tapped frame kept so far.
  void ClearFrames();
  int64_t frames_seen() const { return frames_seen_.load(); }

  // GET /status -> the "jobs" array; GET /metrics -> {name: value}.
  Json StatusJobs();
  std::map<std::string, double> Metrics();
  // Polls /status every `poll` until pred(jobs) holds; false on timeout.
  bool WaitStatus(const std::function<bool(const Json&)>& pred, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds poll = std::chrono::milliseconds(1));

  int Stop() { return lc_->Stop(); }

 private:
  void StartLc();
  void OnFrame(const std::string& text);

  Options opt_;
  std::string tmp_, rootfs_;
  uint16_t worker_port_ = 0, status_port_ = 0;
  std::unique_ptr<testing::GmEmulator> gm_;
  std::unique_ptr<testing::LcProcess> lc_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Seen> seen_;
  std::atomic<int64_t> frames_seen_{0};
  std::atomic<bool> stop_drain_{false};
  std::thread drain_;
};

// Sedna objects as the GM sends them (the shapes of tests/integration/il_cluster_test.cc).
Json Meta(const std::string& name);
Json DatasetObject(const std::string& name, const std::string& url);
Json ModelObject(const std::string& name, const std::string& url, const std::string& format);
struct JobParams {
  std::string name;
  std::string dataset;
  double train_prob = 0.8;
  std::string op = ">";
  double threshold = 500;
  int64_t check_period_seconds = 60;
  std::string output_dir = "/output";
};
Json IlJobObject(const JobParams& p);
// The job as the GM sends it at its first sync: status.conditions = [Train/Waiting].
Json IlJobAtTrainWaiting(const JobParams& p);

// A dataset index line like the Sedna helmet example's ("<image path> <box>").
std::string IndexLine(int64_t n);

// From /proc/<pid>/status, in kB ("VmRSS", "VmHWM", "RssAnon", "RssFile"); -1 when absent.
int64_t ProcStatusKb(pid_t pid, const std::string& field);
// From /proc/<pid>/smaps_rollup, in kB ("Pss"); -1 when absent.
int64_t ProcSmapsKb(pid_t pid, const std::string& field);
// utime + stime of /proc/<pid>/stat, in seconds.
// utime and stime of a process (all its threads), in seconds.
struct ProcCpu {
  double user = 0;
  double system = 0;
};
ProcCpu ProcCpuSplit(pid_t pid);
double ProcCpuSeconds(pid_t pid);

// The CPU time all of `pid`'s threads have had so far, in ms (the sum of the first field of each
// /proc/<pid>/task/*/schedstat: ns on a CPU, exact, not in clock ticks); 0 where it cannot be read.
double ThreadsCpuMs(pid_t pid);

// "/proc/loadavg" first three fields plus nproc, e.g. "load 0.52 0.61 0.70 on 2 CPUs": the
// benches print it because other work on the machine moves every figure.
std::string LoadAvg();

// What making a file costs beneath `dir` now: the median CPU time of 20 creates (O_CREAT | O_EXCL,
// each removed again) in a fresh directory there, e.g. "a create under /tmp/x: 0.31 ms of CPU". On
// an ext4 without a journal it grows with the files deleted nearby in the last minutes
// (docs/benchmarks.md, session 31), and with it every figure that makes files.
std::string CreateCost(const std::string& dir);

// Nearest-rank percentile (q in [0,100]) of `v` (sorted copy).
double Percentile(std::vector<double> v, double q);
double Mean(const std::vector<double>& v);

std::string Fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
double Seconds(Clock::duration d);
double Millis(Clock::duration d);

}  // namespace sedna::bench
