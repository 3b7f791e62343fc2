// Latency from "a sample line is appended to a dataset index" to "the GM receives the job's
// `Train Ready`" (design-notes §D2: p50 <= 20 ms, p99 <= 100 ms; the Go LC polls: median 40.6 s).
//
// The real sedna-lc runs against the GM emulator. A job answers each (Train, Waiting) condition
// once, so every trial uses a fresh job (method (a) of the brief): trial k inserts Dataset
// lat-k (an empty index /data/lat-k.txt) and IncrementalLearningJob lat-k at (Train, Waiting)
// with trainProb 1 and trigger `num_of_samples > 0`, waits until /status lists the job with its
// output directories made (so the LC has loaded it and watches the index), then appends ONE line
// with one write(2) and measures until the `Train Ready` frame of lat-k arrives at the emulator
// (timestamped on the emulator's server thread). Then job and dataset are deleted, so the LC holds
// one job per trial.
//
// The measured path: inotify -> read the new line -> Dataset count persisted + queued (SQLite) ->
// split into the job's train spool (fdatasync, all jobs' at once) -> trigger -> state persisted
// -> train file data.txt put in place on the worker pool (into a spare file made ahead, linked
// into a spare round directory moved in place) -> its fsyncs (the file's, its directory's, the
// parent's) made by the kernel with the other jobs' -> Train Ready persisted to the outbox ->
// websocket write.
//
// --jobs=N (default 1): N jobs on the trial's Dataset, so the one appended line reaches N train
// spools and starts N rounds (N train files put in place on the LC's pool of two threads); every
// job's latency counts, and the first and last job of each trial are also shown. Also shown: the
// CPU time the LC's threads had from the append to the last Ready (not the kernel's workers,
// which make the syncs).
//
//   latency_bench [--trials=200] [--warmup=5] [--jobs=1] [--log-level=info] [--tmp-root=/tmp]
//   [--settle] [--perf-ctl=<fifo>] [--lc=<sedna-lc>]
//
// --perf-ctl=<fifo>: writes `enable` to the fifo before each append and `disable` once the last
// Ready is in, so that `perf record -D -1 --control fifo:<fifo>` samples the trials' windows only
// (not the jobs' creation and deletion between them). docs/benchmarks.md shows the command.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "bench_util.h"

using namespace sedna::bench;
namespace testing = sedna::testing;

namespace {

// Waits until `pid`'s threads have had no CPU for 20 ms (2 s at most); returns how long it waited.
double SettleMs(pid_t pid) {
  const auto start = Clock::now();
  double before = ThreadsCpuMs(pid);
  while (Clock::now() - start < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double now = ThreadsCpuMs(pid);
    if (now - before < 0.005) break;
    before = now;
  }
  return Millis(Clock::now() - start);
}

// perf's control fifo (--perf-ctl), or nothing when not asked for.
class PerfControl {
 public:
  explicit PerfControl(const std::string& fifo) {
    if (fifo.empty()) return;
    fd_ = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("--perf-ctl: cannot open " + fifo);
  }
  ~PerfControl() {
    if (fd_ >= 0) ::close(fd_);
  }
  void Enable() { Write("enable\n"); }
  void Disable() { Write("disable\n"); }

 private:
  void Write(const std::string& command) {
    if (fd_ >= 0 && ::write(fd_, command.data(), command.size()) < 0) {
      throw std::runtime_error("--perf-ctl: write failed");
    }
  }
  int fd_ = -1;
};

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  const int trials = static_cast<int>(args.GetInt("trials", 200));
  const int warmup = static_cast<int>(args.GetInt("warmup", 5));
  Cluster::Options o;
  o.lc_binary = LcBinary(args);
  o.log_level = args.Get("log-level", "info");
  o.tmp_prefix = "sedna-bench-latency-";
  o.tmp_root = TmpRoot(args);
  Cluster c(o);
  std::printf("latency_bench: sedna-lc %s, pid %d, data under %s; %s; %s\n", o.lc_binary.c_str(),
              static_cast<int>(c.pid()), c.tmp().c_str(), LoadAvg().c_str(),
              CreateCost(c.tmp()).c_str());
  std::fflush(stdout);

  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));

  const int jobs = static_cast<int>(args.GetInt("jobs", 1));
  const bool settle = args.Has("settle");
  std::vector<double> settle_ms;
  PerfControl perf(args.Get("perf-ctl", ""));
  if (jobs < 1) throw std::runtime_error("--jobs must be at least 1");
  std::vector<double> ready_ms, first_ms, last_ms, count_ms, cpu_ms;
  for (int k = 0; k < warmup + trials; ++k) {
    const std::string name = "lat-" + std::to_string(k);
    const std::string url = "/data/" + name + ".txt";
    testing::WriteFile(c.Host(url), "");
    std::vector<std::string> job_names;
    std::vector<Json> job_objects;
    for (int j = 0; j < jobs; ++j) {
      JobParams p;
      p.name = jobs == 1 ? name : name + "-" + std::to_string(j);
      p.dataset = name;
      p.train_prob = 1.0;
      p.threshold = 0;
      p.output_dir = "/output/" + p.name;
      job_names.push_back(p.name);
      job_objects.push_back(IlJobAtTrainWaiting(p));
    }
    const Json ds = DatasetObject(name, url);
    c.Send("insert", ds);
    for (const auto& job : job_objects) c.Send("insert", job);
    bool loaded = c.WaitStatus(
        [&](const Json& listed) {
          int n = 0;
          for (const auto& j : listed) {
            // Loaded: listed, with its output directories made (since session 34 on the pool;
            // an LC before it lists no "outputDirs" and made them before listing the job).
            if (j.value("outputDirs", "made") != "made") continue;
            n += std::count(job_names.begin(), job_names.end(), j.at("name").get<std::string>());
          }
          return n == jobs;
        },
        std::chrono::seconds(10));
    if (!loaded) throw std::runtime_error("the jobs of " + name + " never listed in /status");
    // With --settle the append waits until the LC has been idle for 20 ms (the jobs' creation
    // still has work queued: their spare files, made on the pool), as an index grows under jobs
    // created long before; an idle machine's CPUs are then asleep, and their wakeups are in the
    // figure. Without it (the default, as before session 32) the append follows the listing.
    if (settle) settle_ms.push_back(SettleMs(c.pid()));

    perf.Enable();
    const double cpu0 = ThreadsCpuMs(c.pid());
    const auto t0 = Clock::now();
    testing::AppendFile(c.Host(url), IndexLine(k) + "\n");
    auto count = c.WaitFrame(
        [&](const Seen& s) {
          return s.kind == "Dataset" && s.name == name && s.body.value("numberOfSamples", 0) == 1;
        },
        std::chrono::seconds(10));
    std::vector<double> trial;
    for (int j = 0; j < jobs; ++j) {
      auto ready = c.WaitFrame(
          [&](const Seen& s) {
            return s.kind == "IncrementalLearningJob" &&
                   std::count(job_names.begin(), job_names.end(), s.name) > 0 &&
                   s.body.value("phase", "") == "Train" && s.body.value("status", "") == "Ready";
          },
          std::chrono::seconds(10));
      if (!ready) throw std::runtime_error("no Train Ready for a job of " + name + " within 10 s");
      trial.push_back(Millis(ready->at - t0));
    }
    const double cpu = ThreadsCpuMs(c.pid()) - cpu0;  // read once the last Ready is in
    perf.Disable();
    if (k >= warmup) {
      cpu_ms.push_back(cpu);
      ready_ms.insert(ready_ms.end(), trial.begin(), trial.end());
      first_ms.push_back(*std::min_element(trial.begin(), trial.end()));
      last_ms.push_back(*std::max_element(trial.begin(), trial.end()));
      if (count) count_ms.push_back(Millis(count->at - t0));
    }
    for (const auto& job : job_objects) c.Send("delete", job);
    c.Send("delete", ds);
    c.ClearFrames();
  }
  // The last delete is processed before /status drops the job; then the LC is idle again.
  c.WaitStatus([](const Json& jobs) { return jobs.empty(); }, std::chrono::seconds(10));

  auto line = [](const char* what, const std::vector<double>& v) {
    std::printf("  %-34s n=%zu  p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f  mean %7.2f  (ms)\n",
                what, v.size(), Percentile(v, 50), Percentile(v, 90), Percentile(v, 99),
                *std::max_element(v.begin(), v.end()), Mean(v));
  };
  std::printf("latency_bench: %d trials (+%d warm-up), %d fresh job(s) on one Dataset per trial\n",
              trials, warmup, jobs);
  line("append -> Dataset numberOfSamples", count_ms);
  line("append -> Train Ready (target)", ready_ms);
  if (jobs > 1) {
    line("  the first job of a trial", first_ms);
    line("  the last job of a trial", last_ms);
  }
  line("the LC's CPU (all threads) a trial", cpu_ms);
  if (settle) line("waited for the LC to be idle", settle_ms);
  std::printf("  at the end: %s; %s\n", LoadAvg().c_str(), CreateCost(c.tmp()).c_str());
  std::printf("RESULT latency_train_ready_ms p50=%.2f p90=%.2f p99=%.2f max=%.2f n=%zu jobs=%d\n",
              Percentile(ready_ms, 50), Percentile(ready_ms, 90), Percentile(ready_ms, 99),
              *std::max_element(ready_ms.begin(), ready_ms.end()), ready_ms.size(), jobs);
  if (c.Stop() != 0) std::fprintf(stderr, "sedna-lc exited non-zero; log:\n%s", c.Log().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "latency_bench: %s\n", e.what());
  return 1;
}
