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
//   [--settle] [--perf-ctl=<fifo>] [--lc=<sedna-lc>] [--lc-b=<another sedna-lc>]
//
// --lc-b=<binary>: a second LC (B; --lc is A), each with its own GM emulator and data directory,
// both running through the run; each trial runs on A and on B one right after the other (which
// goes first alternates), and besides each one's figures the bench prints B - A trial by trial:
// the median difference and in how many trials B was lower. The machine's drift (this VM's
// figures move by 0.5 ms within minutes, docs/benchmarks.md) then falls on both within ~50 ms
// instead of between runs minutes apart. An LC's work left after its trial (the jobs' deletion,
// the spare files refilled 250 ms later) can overlap the other's next trial; alike on both sides.
//
// --perf-ctl=<fifo>: writes `enable` to the fifo before each append and `disable` once the last
// Ready is in, so that `perf record -D -1 --control fifo:<fifo>` samples the trials' windows only
// (not the jobs' creation and deletion between them). docs/benchmarks.md shows the command.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

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

// One trial's figures: each job's append -> Train Ready, the count's, the LC's CPU.
struct Trial {
  std::vector<double> ready_ms;
  std::optional<double> count_ms;
  double cpu_ms = 0;
};

// Trial k on `c`: a Dataset and `jobs` jobs made, one line appended, every Ready awaited, all
// deleted again.
Trial RunTrial(Cluster& c, int k, int jobs, bool settle, std::vector<double>& settle_ms,
               PerfControl& perf) {
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
  Trial t;
  for (int j = 0; j < jobs; ++j) {
    auto ready = c.WaitFrame(
        [&](const Seen& s) {
          return s.kind == "IncrementalLearningJob" &&
                 std::count(job_names.begin(), job_names.end(), s.name) > 0 &&
                 s.body.value("phase", "") == "Train" && s.body.value("status", "") == "Ready";
        },
        std::chrono::seconds(10));
    if (!ready) throw std::runtime_error("no Train Ready for a job of " + name + " within 10 s");
    t.ready_ms.push_back(Millis(ready->at - t0));
  }
  t.cpu_ms = ThreadsCpuMs(c.pid()) - cpu0;  // read once the last Ready is in
  perf.Disable();
  if (count) t.count_ms = Millis(count->at - t0);
  for (const auto& job : job_objects) c.Send("delete", job);
  c.Send("delete", ds);
  c.ClearFrames();
  return t;
}

// The figures of one LC over its trials.
struct Figures {
  std::vector<double> ready_ms, first_ms, last_ms, count_ms, cpu_ms, settle_ms;
  std::vector<double> trial_p50_ms;  // each trial's median Ready (its only Ready with one job)

  void Add(const Trial& t) {
    cpu_ms.push_back(t.cpu_ms);
    ready_ms.insert(ready_ms.end(), t.ready_ms.begin(), t.ready_ms.end());
    first_ms.push_back(*std::min_element(t.ready_ms.begin(), t.ready_ms.end()));
    last_ms.push_back(*std::max_element(t.ready_ms.begin(), t.ready_ms.end()));
    trial_p50_ms.push_back(Percentile(t.ready_ms, 50));
    if (t.count_ms) count_ms.push_back(*t.count_ms);
  }
};

void Line(const char* what, const std::vector<double>& v) {
  if (v.empty()) return;
  std::printf("  %-34s n=%zu  p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f  mean %7.2f  (ms)\n", what,
              v.size(), Percentile(v, 50), Percentile(v, 90), Percentile(v, 99),
              *std::max_element(v.begin(), v.end()), Mean(v));
}

void PrintFigures(const Figures& f, int jobs, bool settle) {
  Line("append -> Dataset numberOfSamples", f.count_ms);
  Line("append -> Train Ready (target)", f.ready_ms);
  if (jobs > 1) {
    Line("  the first job of a trial", f.first_ms);
    Line("  the last job of a trial", f.last_ms);
  }
  Line("the LC's CPU (all threads) a trial", f.cpu_ms);
  if (settle) Line("waited for the LC to be idle", f.settle_ms);
}

// B against A, trial by trial (trial k of each ran one after the other): the median of the
// differences, and in how many trials B was lower. Under "no difference" the count is
// Binomial(n, 1/2): outside n/2 +- sqrt(n) (two standard deviations) is the line printed.
void PrintPaired(const char* what, const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d;
  int lower = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d.push_back(b[i] - a[i]);
    if (b[i] < a[i]) ++lower;
  }
  if (d.empty()) return;
  const double n = static_cast<double>(d.size());
  const bool beyond = std::abs(lower - n / 2) > std::sqrt(n);
  std::printf("  B - A, %-26s n=%zu  median %+7.3f  mean %+7.3f ms; B lower in %d (%s)\n", what,
              d.size(), Percentile(d, 50), Mean(d), lower,
              beyond ? "beyond n/2 +- sqrt(n)" : "within n/2 +- sqrt(n): no difference shown");
}

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  const int trials = static_cast<int>(args.GetInt("trials", 200));
  const int warmup = static_cast<int>(args.GetInt("warmup", 5));
  const int jobs = static_cast<int>(args.GetInt("jobs", 1));
  const bool settle = args.Has("settle");
  if (jobs < 1) throw std::runtime_error("--jobs must be at least 1");
  std::vector<std::string> binaries = {LcBinary(args)};
  if (args.Has("lc-b")) binaries.push_back(args.Get("lc-b", ""));
  std::vector<std::unique_ptr<Cluster>> clusters;
  for (size_t i = 0; i < binaries.size(); ++i) {
    Cluster::Options o;
    o.lc_binary = binaries[i];
    o.log_level = args.Get("log-level", "info");
    o.tmp_prefix = "sedna-bench-latency-";
    o.tmp_root = TmpRoot(args);
    clusters.push_back(std::make_unique<Cluster>(o));
    Cluster& c = *clusters.back();
    std::printf("latency_bench: %ssedna-lc %s, pid %d, data under %s; %s; %s\n",
                binaries.size() > 1 ? (i == 0 ? "A: " : "B: ") : "", o.lc_binary.c_str(),
                static_cast<int>(c.pid()), c.tmp().c_str(), LoadAvg().c_str(),
                CreateCost(c.tmp()).c_str());
    std::fflush(stdout);
    c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  }

  PerfControl perf(args.Get("perf-ctl", ""));
  std::vector<Figures> figures(clusters.size());
  for (int k = 0; k < warmup + trials; ++k) {
    // With two LCs, trial k runs on both, one right after the other, the first of the two
    // alternating with k: what the machine does over the run falls on both alike.
    for (size_t step = 0; step < clusters.size(); ++step) {
      const size_t i = (step + static_cast<size_t>(k)) % clusters.size();
      Trial t = RunTrial(*clusters[i], k, jobs, settle, figures[i].settle_ms, perf);
      if (k >= warmup) figures[i].Add(t);
    }
  }
  for (auto& c : clusters) {
    // The last delete is processed before /status drops the job; then the LC is idle again.
    c->WaitStatus([](const Json& listed) { return listed.empty(); }, std::chrono::seconds(10));
  }

  std::printf(
      "latency_bench: %d trials (+%d warm-up), %d fresh job(s) on one Dataset per trial%s\n",
      trials, warmup, jobs, clusters.size() > 1 ? ", on A and B in turn" : "");
  for (size_t i = 0; i < clusters.size(); ++i) {
    if (clusters.size() > 1) std::printf(" %s %s\n", i == 0 ? "A" : "B", binaries[i].c_str());
    PrintFigures(figures[i], jobs, settle);
  }
  if (clusters.size() > 1) {
    PrintPaired("a trial's median Ready", figures[0].trial_p50_ms, figures[1].trial_p50_ms);
    PrintPaired("a trial's last Ready", figures[0].last_ms, figures[1].last_ms);
    PrintPaired("the LC's CPU a trial", figures[0].cpu_ms, figures[1].cpu_ms);
  }
  std::printf("  at the end: %s; %s\n", LoadAvg().c_str(), CreateCost(clusters[0]->tmp()).c_str());
  for (size_t i = 0; i < clusters.size(); ++i) {
    const std::vector<double>& r = figures[i].ready_ms;
    std::printf(
        "RESULT latency_train_ready_ms%s p50=%.2f p90=%.2f p99=%.2f max=%.2f n=%zu jobs=%d\n",
        clusters.size() > 1 ? (i == 0 ? "_a" : "_b") : "", Percentile(r, 50), Percentile(r, 90),
        Percentile(r, 99), *std::max_element(r.begin(), r.end()), r.size(), jobs);
  }
  int rc = 0;
  for (auto& c : clusters) {
    if (c->Stop() != 0) {
      std::fprintf(stderr, "sedna-lc exited non-zero; log:\n%s", c->Log().c_str());
      rc = 1;
    }
  }
  return rc;
} catch (const std::exception& e) {
  std::fprintf(stderr, "latency_bench: %s\n", e.what());
  return 1;
}
