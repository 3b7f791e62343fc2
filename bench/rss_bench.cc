// Memory, ingest throughput and idle CPU of the real sedna-lc (design-notes §D2):
//   idle RSS with 0 / 100 IL jobs                  target <= 6 MB / <= 10 MB  (Go LC 37.5 / 43.5)
//   RSS after ingesting a 1e6 / 1e7-line index     target <= 12 MB / <= 16 MB (Go LC 142 MB / 1.07
//   GB) CPU while nothing changes, after the ingest    target ~0 (Go LC 3 s CPU/min at 1e7 lines)
//
// "Settle" is --settle-seconds (3 s): longer than the 2 s after which sedna-lc hands the heap
// pages a burst freed back to the OS (malloc_trim, app/cluster/context.h HeapTrim), so the figure
// is the idle state, not the tail of start-up. VmHWM keeps the peak.
//
// Each scenario runs a fresh sedna-lc (fresh database and rootfs) against the GM emulator (but
// idle-gm-down, whose GM address refuses), so VmHWM (peak RSS, /proc/<pid>/status) belongs to
// that scenario alone:
//   idle-0      no objects; poll the status server once; settle, read VmRSS/VmHWM.
//   idle-100    100 Datasets (empty indexes) + 100 IL jobs (or --shared-dataset: one Dataset for
//               all); wait until /status lists 100 jobs, poll the status server once, settle,
//               read; then idle CPU.
//   idle-gm-down  no objects, GM_ADDRESS a port that refuses (127.0.0.1:1): the link's doctor
//               and reconnects, what an edge node runs while its GM is down; poll the status
//               server once; settle, read.
//   index-N     one Dataset + one IL job (trainProb 0.8, trigger num_of_samples > N/2, so one
//               train round fires mid-ingest and its ~N/2-line train file is written too). The
//               whole N-line index is appended with one write(2); ingest ends when /status
//               shows samplesSeen == N (the throughput's end: the GM's numberOfSamples == N is
//               awaited after it, untimed, because --dataset-status-interval-ms holds the last
//               count up to 1 s). Then settle, read VmRSS/VmHWM, and sample utime+stime over
//               --idle-seconds.
//
// "Poll the status server" GETs /healthz, /readyz, /status, /metrics and / (the dashboard), each
// of which must answer 200: a node's probes, a Prometheus scrape and a look at the jobs touch that
// code, so an idle LC that is watched has it resident (its pages count in VmRSS).
// --no-status-poll leaves it out (the figure before session 30).
//
//   rss_bench [--sizes=1e6,1e7] [--idle-seconds=10] [--settle-seconds=3] [--jobs=100]
//             [--shared-dataset] [--skip-idle] [--log-level=info] [--tmp-root=/tmp]
//             [--lc=<sedna-lc>] [--long-line-gib=3] [--no-status-poll]
// (--long-line-gib: also an index whose first line is that many GiB, sparse, without a newline.)
// (--sizes= with an empty list skips the index scenarios; --skip-idle the three idle ones.)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "bench_util.h"

using namespace sedna::bench;
namespace testing = sedna::testing;

namespace {

struct Row {
  std::string scenario;
  int64_t rss_kb = -1, hwm_kb = -1, anon_kb = -1, file_kb = -1, pss_kb = -1;
  double ingest_lines_per_s = NAN, ingest_mb_per_s = NAN, ingest_cpu_s_per_mline = NAN;
  double idle_cpu_s_per_min = NAN;
  std::string note;
};

void Sleep(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

void ReadMem(Cluster& c, Row& r) {
  r.rss_kb = ProcStatusKb(c.pid(), "VmRSS");
  r.hwm_kb = ProcStatusKb(c.pid(), "VmHWM");
  r.anon_kb = ProcStatusKb(c.pid(), "RssAnon");
  r.file_kb = ProcStatusKb(c.pid(), "RssFile");
  r.pss_kb = ProcSmapsKb(c.pid(), "Pss");
}

double IdleCpu(Cluster& c, double seconds) {
  const double a = ProcCpuSeconds(c.pid());
  Sleep(seconds);
  const double b = ProcCpuSeconds(c.pid());
  return (b - a) * 60.0 / seconds;
}

Cluster::Options Opts(const Args& args, const std::string& scenario) {
  Cluster::Options o;
  o.lc_binary = LcBinary(args);
  o.log_level = args.Get("log-level", "info");
  o.tmp_prefix = "sedna-bench-rss-" + scenario + "-";
  o.tmp_root = TmpRoot(args);
  return o;
}

// GETs each endpoint of the status server once (see the header comment).
void PollStatusServer(const Args& args, Cluster& c) {
  if (args.Has("no-status-poll")) return;
  for (const char* path : {"/healthz", "/readyz", "/status", "/metrics", "/"}) {
    auto r = testing::HttpRequest(c.status_port(), "GET", path, "", {});
    if (r.status != 200) throw std::runtime_error(std::string("GET ") + path + ": " + r.raw);
  }
}

// An LC without objects (`o`: its GM reachable or not): poll, settle, read.
Row IdleNoJobs(const Args& args, const Cluster::Options& o, const std::string& scenario) {
  Cluster c(o);
  Row r{scenario};
  PollStatusServer(args, c);
  Sleep(args.GetDouble("settle-seconds", 3));
  ReadMem(c, r);
  c.Stop();
  return r;
}

Row Idle0(const Args& args) { return IdleNoJobs(args, Opts(args, "idle0"), "idle, 0 jobs"); }

Row IdleGmDown(const Args& args) {
  Cluster::Options o = Opts(args, "idle-gm-down");
  o.gm_address = "127.0.0.1:1";  // nothing listens there: every connect is refused
  return IdleNoJobs(args, o, "idle, 0 jobs, GM unreachable");
}

Row IdleJobs(const Args& args) {
  const int n = static_cast<int>(args.GetInt("jobs", 100));
  const bool shared = args.Has("shared-dataset");
  Cluster c(Opts(args, "idle100"));
  Row r{Fmt("idle, %d jobs%s", n, shared ? " (1 dataset)" : " (1 dataset each)")};
  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  for (int i = 0; i < n; ++i) {
    const std::string ds = shared ? "shared" : "ds-" + std::to_string(i);
    if (!shared || i == 0) {
      testing::WriteFile(c.Host("/data/" + ds + ".txt"), "");
      c.Send("insert", DatasetObject(ds, "/data/" + ds + ".txt"));
    }
    JobParams p;
    p.name = "job-" + std::to_string(i);
    p.dataset = ds;
    p.output_dir = "/output/" + p.name;
    c.Send("insert", IlJobAtTrainWaiting(p));
  }
  if (!c.WaitStatus([&](const Json& jobs) { return static_cast<int>(jobs.size()) == n; },
                    std::chrono::seconds(60), std::chrono::milliseconds(20))) {
    throw std::runtime_error("not all jobs listed in /status");
  }
  PollStatusServer(args, c);
  Sleep(args.GetDouble("settle-seconds", 3));
  ReadMem(c, r);
  r.idle_cpu_s_per_min = IdleCpu(c, args.GetDouble("idle-seconds", 10));
  c.Stop();
  return r;
}

Row Index(const Args& args, int64_t n) {
  Cluster c(Opts(args, "index"));
  Row r{Fmt("index %g lines, 1 job", static_cast<double>(n))};
  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  const std::string url = "/data/big.txt";
  testing::WriteFile(c.Host(url), "");
  c.Send("insert", DatasetObject("big", url));
  JobParams p;
  p.name = "big-job";
  p.dataset = "big";
  p.train_prob = 0.8;
  const int64_t half = n / 2;  // the train round fires at the ingest's midpoint
  p.threshold = static_cast<double>(half);
  p.output_dir = "/output";
  c.Send("insert", IlJobAtTrainWaiting(p));
  if (!c.WaitStatus([](const Json& jobs) { return jobs.size() == 1; }, std::chrono::seconds(20))) {
    throw std::runtime_error("job never listed in /status");
  }
  std::string index;
  index.reserve(static_cast<size_t>(n) * 44);
  for (int64_t i = 1; i <= n; ++i) (index += IndexLine(i)) += '\n';
  const double mb = static_cast<double>(index.size()) / 1e6;
  std::printf("  index of %lld lines, %.1f MB: appending with one write(2) (per 2 GiB)\n",
              static_cast<long long>(n), mb);
  std::fflush(stdout);

  const double cpu0 = ProcCpuSeconds(c.pid());
  const auto t0 = Clock::now();
  testing::AppendFile(c.Host(url), index);
  std::string().swap(index);
  if (!c.WaitStatus(
          [&](const Json& jobs) {
            return jobs.size() == 1 && jobs[0].value("samplesSeen", int64_t{0}) == n;
          },
          std::chrono::seconds(1800), std::chrono::milliseconds(10))) {
    throw std::runtime_error("the job never saw N samples");
  }
  const auto t1 = Clock::now();
  const double cpu1 = ProcCpuSeconds(c.pid());
  auto counted = c.WaitFrame(
      [&](const Seen& s) {
        return s.kind == "Dataset" && s.body.value("numberOfSamples", int64_t{0}) == n;
      },
      std::chrono::seconds(1800));
  if (!counted) throw std::runtime_error("numberOfSamples never reached N");
  const double secs = Seconds(t1 - t0);
  r.ingest_lines_per_s = static_cast<double>(n) / secs;
  r.ingest_mb_per_s = mb / secs;
  r.ingest_cpu_s_per_mline = (cpu1 - cpu0) / (static_cast<double>(n) / 1e6);
  auto ready = c.WaitFrame(
      [](const Seen& s) {
        return s.kind == "IncrementalLearningJob" && s.body.value("phase", "") == "Train" &&
               s.body.value("status", "") == "Ready";
      },
      std::chrono::seconds(120));
  r.note =
      ready ? Fmt("train round fired; dataset count at GM after %.2f s", Seconds(counted->at - t0))
            : "train round did NOT fire";
  Sleep(args.GetDouble("settle-seconds", 3));
  ReadMem(c, r);
  r.idle_cpu_s_per_min = IdleCpu(c, args.GetDouble("idle-seconds", 10));
  c.Stop();
  return r;
}

// [D:I15.3]: an index whose first "line" is a sparse GiB-sized run without a newline, then
// two real lines. The LC skips it (--max-index-line-bytes) with bounded memory; the figure is its
// peak RSS, and how long /status took to answer while it read (the loop never stalls).
Row LongLine(const Args& args, double gib) {
  Cluster c(Opts(args, "longline"));
  Row r{Fmt("%g GiB line without newline", gib)};
  const std::string url = "/data/long.txt";
  testing::WriteFile(c.Host(url), "");
  c.Send("insert", DatasetObject("long", url));
  {
    const int fd = ::open(c.Host(url).c_str(), O_WRONLY);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(gib * (1 << 30))) != 0) {
      throw std::runtime_error("cannot make the sparse index");
    }
    const std::string tail = "\n" + IndexLine(1) + "\n" + IndexLine(2) + "\n";
    if (::pwrite(fd, tail.data(), tail.size(), static_cast<off_t>(gib * (1 << 30))) !=
        static_cast<ssize_t>(tail.size())) {
      throw std::runtime_error("cannot write the index tail");
    }
    ::close(fd);
  }
  const auto t0 = Clock::now();
  double worst_status_ms = 0;
  std::optional<Seen> counted;
  while (!counted && Seconds(Clock::now() - t0) < 600) {
    const auto s0 = Clock::now();
    c.WaitStatus([](const Json&) { return true; }, std::chrono::seconds(10));
    worst_status_ms = std::max(worst_status_ms, Seconds(Clock::now() - s0) * 1000);
    counted = c.WaitFrame(
        [](const Seen& s) {
          return s.kind == "Dataset" && s.body.value("numberOfSamples", int64_t{0}) == 2;
        },
        std::chrono::milliseconds(50));
  }
  if (!counted) throw std::runtime_error("the two lines after the long one were never counted");
  r.note = Fmt("2 lines after it counted in %.2f s; slowest /status meanwhile %.1f ms",
               Seconds(counted->at - t0), worst_status_ms);
  Sleep(args.GetDouble("settle-seconds", 3));
  ReadMem(c, r);
  c.Stop();
  return r;
}

std::vector<int64_t> Sizes(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string tok;
  while (std::getline(in, tok, ',')) {
    if (!tok.empty()) out.push_back(static_cast<int64_t>(std::llround(std::stod(tok))));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  std::printf("rss_bench: sedna-lc %s; %s\n", LcBinary(args).c_str(), LoadAvg().c_str());
  std::fflush(stdout);
  std::vector<Row> rows;
  auto run = [&](const char* what, auto fn) {
    std::printf("- %s ...\n", what);
    std::fflush(stdout);
    rows.push_back(fn());
    std::printf("  done; %s\n", LoadAvg().c_str());
  };
  if (!args.Has("skip-idle")) {
    run("idle, 0 jobs", [&] { return Idle0(args); });
    run("idle, jobs", [&] { return IdleJobs(args); });
    run("idle, GM unreachable", [&] { return IdleGmDown(args); });
  }
  for (int64_t n : Sizes(args.Get("sizes", "1e6,1e7"))) {
    run(Fmt("index of %g lines", static_cast<double>(n)).c_str(), [&] { return Index(args, n); });
  }
  if (args.Has("long-line-gib")) {
    const double gib = args.GetDouble("long-line-gib", 3);
    run(Fmt("a %g GiB line", gib).c_str(), [&] { return LongLine(args, gib); });
  }

  std::printf("\n%-32s %9s %9s %9s %9s %9s %12s %7s %12s %14s\n", "scenario", "VmRSS MB",
              "VmHWM MB", "anon MB", "file MB", "Pss MB", "ingest l/s", "MB/s", "CPU s/1e6 l",
              "idle CPU s/min");
  for (const auto& r : rows) {
    std::printf("%-32s %9.2f %9.2f %9.2f %9.2f %9.2f %12.0f %7.1f %12.3f %14.4f  %s\n",
                r.scenario.c_str(), r.rss_kb / 1024.0, r.hwm_kb / 1024.0, r.anon_kb / 1024.0,
                r.file_kb / 1024.0, r.pss_kb / 1024.0, r.ingest_lines_per_s, r.ingest_mb_per_s,
                r.ingest_cpu_s_per_mline, r.idle_cpu_s_per_min, r.note.c_str());
  }
  for (const auto& r : rows) {
    std::printf(
        "RESULT rss \"%s\" VmRSS_MB=%.2f VmHWM_MB=%.2f RssAnon_MB=%.2f RssFile_MB=%.2f Pss_MB=%.2f",
        r.scenario.c_str(), r.rss_kb / 1024.0, r.hwm_kb / 1024.0, r.anon_kb / 1024.0,
        r.file_kb / 1024.0, r.pss_kb / 1024.0);
    if (!std::isnan(r.ingest_lines_per_s)) {
      std::printf(" ingest_lines_per_s=%.0f", r.ingest_lines_per_s);
    }
    if (!std::isnan(r.idle_cpu_s_per_min)) {
      std::printf(" idle_cpu_s_per_min=%.4f", r.idle_cpu_s_per_min);
    }
    std::printf("\n");
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "rss_bench: %s\n", e.what());
  return 1;
}
