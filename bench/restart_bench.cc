// Restart-to-resumed time ([D:I4]: target <= 1 s for 100 jobs): how long a sedna-lc killed with
// SIGKILL takes, from exec of the new process, to have every job back where it was.
//
// Setup (once): the real sedna-lc against the GM emulator with --jobs IL jobs (default 100), each
// with its own Dataset (index /data/ds-<i>.txt) and output dir. The first --mid-round jobs
// (default 50) are mid-round: 10 lines appended (trainProb 1, trigger num_of_samples > 5), Train
// Ready of round 1 received, and the GM moved them to (Train, Running), so their state is "round
// 2, round 1 dispatched". The other jobs have 3 samples waiting (round 1, trigger not fired).
// Once everything is delivered (outbox empty) the measurements start.
//
// Each repetition: SIGKILL the LC, start it again on the same database and rootfs, and time from
// just before posix_spawn to:
//   status   GET /status (polled every 1 ms) lists all jobs, each at its resumed round and sample
//            count (the status server starts after the jobs were reloaded from SQLite, so this is
//            also the first /readyz answer);
//   upstream (GM present) the first frame the new process sends the emulator (the bare header of
//            its websocket connection), timestamped on the emulator's server thread;
//   resynced (GM present) the GM re-sends every Dataset, the Model and every job as it stands, then
//            a barrier Dataset; time until the barrier's numberOfSamples arrives, i.e. all 2N+1
//            objects were handled. No job may send a second Train Ready (counted and printed).
// With the GM absent (GM_ADDRESS is a port nobody listens on, the link keeps retrying) only
// `status` is measured: resuming needs nothing but SQLite.
//
//   restart_bench [--jobs=100] [--mid-round=50] [--reps=7] [--log-level=info] [--tmp-root=/tmp]
//                 [--lc=<sedna-lc>]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "adapters/json/envelope.h"
#include "bench_util.h"

using namespace sedna::bench;
namespace testing = sedna::testing;
namespace stdfs = std::filesystem;

namespace {

// Upstream frames as the emulator's server thread sees them (timestamped there).
class Tap {
 public:
  explicit Tap(testing::GmEmulator& gm) : gm_(gm) {
    gm_.server().on_frame = [this](const std::string& text) { OnFrame(text); };
    drain_ = std::thread([this] {
      while (!stop_) gm_.server().WaitForFrame(std::chrono::milliseconds(100));
    });
  }
  ~Tap() {
    stop_ = true;
    drain_.join();
  }
  // Forgets every frame seen so far and the first-frame time.
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.clear();
    first_.reset();
  }
  std::optional<Clock::time_point> WaitFirst(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return first_.has_value(); });
    return first_;
  }
  std::optional<Seen> Wait(const std::function<bool(const Seen&)>& pred,
                           std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      for (auto it = seen_.begin(); it != seen_.end(); ++it) {
        if (pred(*it)) {
          Seen s = std::move(*it);
          seen_.erase(it);
          return s;
        }
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) return std::nullopt;
    }
  }
  int Count(const std::function<bool(const Seen&)>& pred) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& s : seen_) n += pred(s) ? 1 : 0;
    return n;
  }

 private:
  void OnFrame(const std::string& text) {
    const auto at = Clock::now();
    Seen s{at, "", "", Json()};
    auto parsed = Json::parse(text, nullptr, false);
    if (parsed.is_object() && parsed.contains("header")) {
      auto f = sedna::json::DecodeFrame(text);
      if (f.ok()) {
        s.kind = f->header.resource_kind;
        s.name = f->header.resource_name;
        s.body = Json::parse(f->content, nullptr, false);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!first_) first_ = at;
      if (!s.kind.empty()) seen_.push_back(std::move(s));
    }
    cv_.notify_all();
  }

  testing::GmEmulator& gm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Seen> seen_;
  std::optional<Clock::time_point> first_;
  std::atomic<bool> stop_{false};
  std::thread drain_;
};

struct Setup {
  std::string lc_binary, log_level, tmp, rootfs, db;
  int jobs = 100, mid = 50;
  uint16_t worker_port = 0, status_port = 0;
};

std::unique_ptr<testing::LcProcess> StartLc(const Setup& s, const std::string& gm_address) {
  return std::make_unique<testing::LcProcess>(
      s.lc_binary,
      std::map<std::string, std::string>{{"GM_ADDRESS", gm_address},
                                         {"NODENAME", "edge-node"},
                                         {"BIND_PORT", std::to_string(s.worker_port)},
                                         {"ROOTFS_MOUNT_DIR", s.rootfs}},
      std::vector<std::string>{"--db", s.db, "--status-port", std::to_string(s.status_port),
                               "--log-level", s.log_level},
      s.tmp + "/lc.log");
}

// GET /status -> jobs, or nullopt while the server is not up yet (no connect retry: 1 attempt).
std::optional<Json> TryStatus(uint16_t port) {
  try {
    auto r = testing::HttpRequest(port, "GET", "/status", "", {}, 0);
    if (r.status != 200) return std::nullopt;
    auto j = Json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("jobs")) return std::nullopt;
    return j["jobs"];
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Every job listed, at its resumed round and sample count.
bool AllResumed(const Setup& s, const Json& jobs) {
  if (static_cast<int>(jobs.size()) != s.jobs) return false;
  for (const auto& j : jobs) {
    const std::string name = j.value("name", "");
    if (name.rfind("job-", 0) != 0) return false;
    const int i = std::atoi(name.c_str() + 4);
    const bool mid = i < s.mid;
    if (j.value("round", int64_t{0}) != (mid ? 2 : 1)) return false;
    if (j.value("samplesSeen", int64_t{0}) != (mid ? 10 : 3)) return false;
  }
  return true;
}

// Polls /status every 1 ms until every job is resumed; the time it first was.
Clock::time_point WaitAllResumed(const Setup& s, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto jobs = TryStatus(s.status_port);
    if (jobs && AllResumed(s, *jobs)) return Clock::now();
    if (Clock::now() > deadline) throw std::runtime_error("jobs not all resumed in /status");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

double OutboxMessages(uint16_t port) {
  auto r = testing::HttpRequest(port, "GET", "/metrics", "", {});
  auto pos = r.body.find("\nsedna_lc_outbox_messages ");
  if (pos == std::string::npos) return -1;
  return std::atof(r.body.c_str() + pos + std::strlen("\nsedna_lc_outbox_messages "));
}

void PrintStats(const char* what, const std::vector<double>& ms) {
  std::printf("  %-44s p50 %8.1f ms  min %8.1f  max %8.1f  (n=%zu)\n", what, Percentile(ms, 50),
              Percentile(ms, 0), Percentile(ms, 100), ms.size());
}

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  Setup s;
  s.lc_binary = LcBinary(args);
  s.log_level = args.Get("log-level", "info");
  s.jobs = static_cast<int>(args.GetInt("jobs", 100));
  s.mid = std::min(s.jobs, static_cast<int>(args.GetInt("mid-round", 50)));
  const int reps = static_cast<int>(args.GetInt("reps", 7));
  std::string t = TmpRoot(args) + "/sedna-bench-restart-XXXXXX";
  if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
  s.tmp = t;
  s.rootfs = s.tmp + "/rootfs";
  s.db = s.tmp + "/db/database.db";
  s.worker_port = testing::FreePort();
  s.status_port = testing::FreePort();
  stdfs::create_directories(s.rootfs + "/data");
  stdfs::create_directories(s.rootfs + "/models/base_model");
  std::printf("restart_bench: sedna-lc %s, %d jobs (%d mid-round), %d reps, data under %s; %s\n",
              s.lc_binary.c_str(), s.jobs, s.mid, reps, s.tmp.c_str(), LoadAvg().c_str());
  std::fflush(stdout);

  testing::GmEmulator gm;
  Tap tap(gm);
  auto lc = StartLc(s, gm.address());
  if (!tap.WaitFirst(std::chrono::seconds(20))) throw std::runtime_error("LC did not connect");

  // ---- setup: N datasets + jobs, half of them mid-round.
  const Json model = ModelObject("initial-model", "/models/base_model", "ckpt");
  gm.Send("insert", model);
  std::vector<Json> datasets;
  std::vector<std::unique_ptr<testing::GmJob>> gm_jobs;
  for (int i = 0; i < s.jobs; ++i) {
    const std::string ds = "ds-" + std::to_string(i);
    testing::WriteFile(s.rootfs + "/data/" + ds + ".txt", "");
    datasets.push_back(DatasetObject(ds, "/data/" + ds + ".txt"));
    gm.Send("insert", datasets.back());
    JobParams p;
    p.name = "job-" + std::to_string(i);
    p.dataset = ds;
    p.train_prob = 1.0;
    p.threshold = 5;
    p.output_dir = "/output/" + p.name;
    gm_jobs.push_back(
        std::make_unique<testing::GmJob>(sedna::core::gm::JobKind::kIncremental, IlJobObject(p)));
    gm.Send("insert", gm_jobs.back()->Object());
  }
  {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      auto jobs = TryStatus(s.status_port);
      if (jobs && static_cast<int>(jobs->size()) == s.jobs) break;
      if (Clock::now() > deadline) throw std::runtime_error("jobs never listed in /status");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (int i = 0; i < s.jobs; ++i) {
    std::string lines;
    const int n = i < s.mid ? 10 : 3;
    for (int k = 1; k <= n; ++k) (lines += IndexLine(i * 100 + k)) += '\n';
    testing::AppendFile(s.rootfs + "/data/ds-" + std::to_string(i) + ".txt", lines);
  }
  for (int i = 0; i < s.mid; ++i) {
    const std::string name = "job-" + std::to_string(i);
    auto ready = tap.Wait(
        [&](const Seen& f) {
          return f.kind == "IncrementalLearningJob" && f.name == name &&
                 f.body.value("phase", "") == "Train" && f.body.value("status", "") == "Ready";
        },
        std::chrono::seconds(60));
    if (!ready) throw std::runtime_error("no Train Ready from " + name);
    gm_jobs[i]->Report(ready->body.dump());
    gm_jobs[i]->SetPod(sedna::core::Stage::kTrain, sedna::core::gm::PodPhase::kRunning);
    gm.Send("insert", gm_jobs[i]->Object());
  }
  WaitAllResumed(s, std::chrono::seconds(60));
  {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (OutboxMessages(s.status_port) != 0) {
      if (Clock::now() > deadline) throw std::runtime_error("outbox never drained");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::printf("setup done: %d jobs listed, %d at round 2 (Train/Running), outbox empty; %s\n",
              s.jobs, s.mid, LoadAvg().c_str());
  std::fflush(stdout);

  // ---- measurements
  std::vector<double> status_gm, upstream_gm, resynced_gm, status_nogm;
  int duplicate_readies = 0, barrier_no = 0;
  testing::WriteFile(s.rootfs + "/data/barrier.txt", IndexLine(1) + "\n");
  const std::string absent_gm = "127.0.0.1:" + std::to_string(testing::FreePort());
  for (int rep = 0; rep < reps; ++rep) {
    for (bool with_gm : {true, false}) {
      lc->Kill();
      // Let the emulator notice the dropped connection before the next one arrives.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      tap.Reset();
      const auto t0 = Clock::now();
      lc = StartLc(s, with_gm ? gm.address() : absent_gm);
      const auto t_status = WaitAllResumed(s, std::chrono::seconds(30));
      if (!with_gm) {
        status_nogm.push_back(Millis(t_status - t0));
        std::printf("  rep %d, GM absent:  status %.1f ms\n", rep, status_nogm.back());
        std::fflush(stdout);
        continue;
      }
      auto first = tap.WaitFirst(std::chrono::seconds(30));
      if (!first) throw std::runtime_error("no upstream frame after the restart");
      // The GM's resync after the reconnect: every object as it stands, then a barrier.
      gm.Send("insert", model);
      for (int i = 0; i < s.jobs; ++i) {
        gm.Send("insert", datasets[i]);
        gm.Send("insert", gm_jobs[i]->Object());
      }
      const std::string barrier = "barrier-" + std::to_string(++barrier_no);
      gm.Send("insert", DatasetObject(barrier, "/data/barrier.txt"));
      auto done = tap.Wait([&](const Seen& f) { return f.kind == "Dataset" && f.name == barrier; },
                           std::chrono::seconds(60));
      if (!done) throw std::runtime_error("resync barrier not answered");
      gm.Send("delete", DatasetObject(barrier, "/data/barrier.txt"));
      duplicate_readies += tap.Count([](const Seen& f) {
        return f.kind == "IncrementalLearningJob" && f.body.value("status", "") == "Ready";
      });
      status_gm.push_back(Millis(t_status - t0));
      upstream_gm.push_back(Millis(*first - t0));
      resynced_gm.push_back(Millis(done->at - t0));
      std::printf(
          "  rep %d, GM present: status %.1f ms, first upstream frame %.1f ms, resynced "
          "%.1f ms\n",
          rep, status_gm.back(), upstream_gm.back(), resynced_gm.back());
      std::fflush(stdout);
    }
  }
  lc->Stop();

  std::printf("\nrestart to resumed, %d IL jobs (%d mid-round), %d reps; %s\n", s.jobs, s.mid, reps,
              LoadAvg().c_str());
  PrintStats("GM present: /status lists all jobs resumed", status_gm);
  PrintStats("GM present: first upstream frame", upstream_gm);
  PrintStats("GM present: resync of all objects handled", resynced_gm);
  PrintStats("GM absent:  /status lists all jobs resumed", status_nogm);
  std::printf("  Train Ready frames after restarts (must be 0): %d\n", duplicate_readies);
  std::printf(
      "RESULT restart jobs=%d status_p50_ms=%.1f first_frame_p50_ms=%.1f resynced_p50_ms=%.1f "
      "status_nogm_p50_ms=%.1f duplicate_readies=%d\n",
      s.jobs, Percentile(status_gm, 50), Percentile(upstream_gm, 50), Percentile(resynced_gm, 50),
      Percentile(status_nogm, 50), duplicate_readies);
  if (!std::getenv("SEDNA_BENCH_KEEP")) stdfs::remove_all(s.tmp);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "restart_bench: %s\n", e.what());
  return 1;
}
