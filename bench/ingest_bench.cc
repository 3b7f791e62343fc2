// Ingest through the real sedna-lc: one Dataset with
// --jobs IL jobs on it (each run: 1, then 4 by default; trainProb 0.8, a train trigger that never
// fires, so the spools only grow), then --lines index lines appended at once (written in 4 MiB
// pieces). Timed from the first write until every job's samplesSeen (GET /status, polled every
// 20 ms) is --lines. Printed per run:
//   bytes read per byte appended: sedna_lc_index_bytes_read_total (every ReadResult::bytes_read of
//     the LC's index reads; "n/a" on a build without it) and rchar of /proc/<pid>/io (every byte
//     the process read with read/pread, index or not: a cross-check that needs no counter);
//   the ingest time (wall) and the LC's CPU time (utime + stime) over it, and the load average.
//
//   ingest_bench [--lines=10000000] [--jobs=1,4] [--tmp-root=/tmp] [--lc=<sedna-lc>]
#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench_util.h"

using namespace sedna::bench;

namespace {

int64_t ProcIo(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/io");
  std::string k;
  int64_t v = 0;
  while (f >> k >> v) {
    if (k == field + ":") return v;
  }
  return -1;
}

struct Run {
  int jobs = 0;
  int64_t appended = 0, metric = -1, rchar = 0;
  double wall = 0, cpu = 0;
  std::string load;
};

Run One(const Args& args, int jobs, int64_t lines) {
  Cluster::Options o;
  o.lc_binary = LcBinary(args);
  o.tmp_root = TmpRoot(args);
  o.decode_frames = false;
  o.tmp_prefix = "sedna-ingest-bench-";
  Cluster c(o);
  const std::string index = c.Host("/data/ingest.txt");
  { std::ofstream(index, std::ios::trunc); }
  c.Send("insert", DatasetObject("ingest-ds", "/data/ingest.txt"));
  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  for (int i = 0; i < jobs; ++i) {
    JobParams p;
    p.name = "ingest-job-" + std::to_string(i);
    p.dataset = "ingest-ds";
    p.threshold = 1e15;
    c.Send("insert", IlJobAtTrainWaiting(p));
  }
  if (!c.WaitStatus([&](const Json& js) { return static_cast<int>(js.size()) == jobs; },
                    std::chrono::seconds(30), std::chrono::milliseconds(20))) {
    throw std::runtime_error("the jobs were not loaded");
  }
  const auto before_metrics = c.Metrics();
  const auto m0 = before_metrics.find("sedna_lc_index_bytes_read_total");
  const int64_t rchar0 = ProcIo(c.pid(), "rchar");
  const double cpu0 = ProcCpuSeconds(c.pid());
  Run r;
  r.jobs = jobs;
  const auto t0 = Clock::now();
  {
    std::ofstream out(index, std::ios::binary | std::ios::app);
    std::string buf;
    for (int64_t n = 1; n <= lines; ++n) {
      buf += IndexLine(n);
      buf += '\n';
      if (buf.size() >= (4u << 20) || n == lines) {
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        out.flush();
        r.appended += static_cast<int64_t>(buf.size());
        buf.clear();
      }
    }
  }
  const bool done = c.WaitStatus(
      [&](const Json& js) {
        if (static_cast<int>(js.size()) != jobs) return false;
        for (const auto& j : js) {
          if (j.value("samplesSeen", int64_t{-1}) != lines) return false;
        }
        return true;
      },
      std::chrono::minutes(20), std::chrono::milliseconds(20));
  const auto t1 = Clock::now();
  if (!done) throw std::runtime_error("the jobs did not see every line in 20 min");
  r.wall = Seconds(t1 - t0);
  r.cpu = ProcCpuSeconds(c.pid()) - cpu0;
  r.rchar = ProcIo(c.pid(), "rchar") - rchar0;
  const auto after_metrics = c.Metrics();
  const auto m1 = after_metrics.find("sedna_lc_index_bytes_read_total");
  if (m0 != before_metrics.end() && m1 != after_metrics.end()) {
    r.metric = static_cast<int64_t>(m1->second - m0->second);
  }
  r.load = LoadAvg();
  c.Stop();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const int64_t lines = args.GetInt("lines", 10'000'000);
  std::vector<int> counts;
  std::stringstream ss(args.Get("jobs", "1,4"));
  for (std::string t; std::getline(ss, t, ',');) counts.push_back(std::stoi(t));
  std::printf("ingest_bench: %lld lines, %s\n", static_cast<long long>(lines), LoadAvg().c_str());
  std::printf("%5s %12s %14s %10s %10s %8s %8s  %s\n", "jobs", "appended", "index read", "read/app",
              "rchar/app", "wall s", "cpu s", "load after");
  for (int jobs : counts) {
    Run r = One(args, jobs, lines);
    const double app = static_cast<double>(r.appended);
    std::printf("%5d %12lld %14s %10s %10.3f %8.2f %8.2f  %s\n", r.jobs,
                static_cast<long long>(r.appended),
                r.metric < 0 ? "n/a" : std::to_string(r.metric).c_str(),
                r.metric < 0 ? "n/a" : Fmt("%.4f", static_cast<double>(r.metric) / app).c_str(),
                static_cast<double>(r.rchar) / app, r.wall, r.cpu, r.load.c_str());
    std::fflush(stdout);
  }
  return 0;
}
