// Worker POSTs per second on ONE keep-alive connection (design-notes §D2: >= 30 k/s; Go LC 8.3
// k/s).
//
// Starts the real sedna-lc against the GM emulator with one IL job, writes a wrk Lua script that
// POSTs the body a lib/sedna eval worker sends (`POST /sedna/workers/<name>/info`), and runs
// `wrk -t1 -c1` (one thread, one connection, HTTP/1.1 keep-alive) twice:
//   known job      ownerName = the job: decode, forward (the frame and the job's state committed
//                  to the SQLite outbox in one transaction), step the IL machine, reply; the GM
//                  link drains the outbox to the emulator meanwhile.
//   unknown owner  ownerName = a job the LC does not have: decode, then kept as an early report
//                  (committed, answered 200) until the owner's bound (EarlyLimits), and past it
//                  answered 503 (no SQLite): a run is almost all 503s, which it counts as NOT OK.
//   GET /healthz   the status server (same HTTP code, no body, no JSON, no SQLite): the ceiling
//                  one wrk connection reaches against this machine's loopback and scheduler.
// After each run it prints the LC's outbox backlog and how long the GM link takes to drain it.
//
// --gm-stalled: once the job is loaded the emulator stops reading its socket, so at most one
// frame is in flight and the outbox only grows: the known-job figure then excludes the cost of
// sending and deleting each frame (the emulator resumes reading afterwards to drain it).
// --pipeline=N: wrk writes N requests at a time on the connection (HTTP/1.1 pipelining), so both
// ends' wakeups are shared by N requests and the LC's own work per request shows.
// --cpu=N: the bench, the emulator, the LC and wrk all run on CPU N (sched_setaffinity, inherited):
// each wakeup is then a switch on one CPU instead of an inter-processor interrupt to an idle vCPU,
// which on this VM costs the LC ~20 us of kernel time per request (docs/benchmarks.md, "Two
// regimes"), so the LC's own work per request shows.
// --only=known|unknown|healthz: run that case alone (e.g. under a profiler or heaptrack).
// The LC's CPU per request is printed whole and split into user and kernel time (/proc stat).
// A known-job run with answers other than 2xx says so on its RESULT line: its figure then mixes
// refused requests (e.g. 503 once --gm-stalled fills the informational outbox quota) with
// durable reports and is not a per-report figure.
//
//   worker_post_bench [--duration=10] [--log-level=info] [--wrk=wrk] [--gm-stalled]
//                     [--pipeline=1] [--cpu=N] [--only=CASE] [--tmp-root=/tmp] [--lc=<sedna-lc>]
#include <sched.h>

#include <cstdio>
#include <regex>

#include "bench_util.h"

using namespace sedna::bench;
namespace testing = sedna::testing;

namespace {

std::string EvalBody(const std::string& worker, const std::string& owner) {
  return R"({"name": ")" + worker + R"(", "namespace": "default", "ownerName": ")" + owner +
         R"(", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"recall": [0.77, 0.70, 0.61, 0.48], "precision": [0.81, 0.74, 0.69, 0.52]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"recall": [0.62, 0.66, 0.55, 0.37], "precision": [0.66, 0.71, 0.58, 0.40]}}]})";
}

struct WrkResult {
  double rps = 0;
  double requests = 0;  // total completed in the run
  std::string latency_line, percentiles, output;
  std::string non2xx;  // non-2xx count and socket errors, when wrk reports any
};

WrkResult RunWrk(const std::string& wrk, const std::string& script, const std::string& url,
                 int duration) {
  const std::string cmd = wrk + " -t1 -c1 -d" + std::to_string(duration) + "s --latency -s " +
                          script + " " + url + " 2>&1";
  std::printf("  $ %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + wrk);
  WrkResult r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int rc = ::pclose(p);
  if (rc != 0) throw std::runtime_error("wrk failed (" + std::to_string(rc) + "):\n" + r.output);
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(R"(Requests/sec:\s+([0-9.]+))"))) {
    r.rps = std::stod(m[1]);
  } else {
    throw std::runtime_error("no Requests/sec in wrk output:\n" + r.output);
  }
  if (std::regex_search(r.output, m, std::regex(R"((\d+) requests in)"))) {
    r.requests = std::stod(m[1]);
  }
  if (std::regex_search(r.output, m, std::regex(R"(\n(\s*Latency[^\n]*))"))) r.latency_line = m[1];
  if (std::regex_search(
          r.output, m,
          std::regex(
              R"(\n\s*50%\s+(\S+)\s*\n\s*75%\s+(\S+)\s*\n\s*90%\s+(\S+)\s*\n\s*99%\s+(\S+))"))) {
    r.percentiles = "p50 " + m[1].str() + ", p90 " + m[3].str() + ", p99 " + m[4].str();
  }
  if (std::regex_search(r.output, m, std::regex(R"(Non-2xx or 3xx responses:\s+(\d+))"))) {
    r.non2xx = m[1];
  }
  if (std::regex_search(r.output, m, std::regex(R"(Socket errors:([^\n]*))"))) {
    r.non2xx += (r.non2xx.empty() ? "" : "; ") + std::string("socket errors:") + m[1].str();
  }
  return r;
}

// With pipeline > 1, each write carries that many requests (HTTP/1.1 pipelining on the one
// connection): the per-request wakeups of both ends are shared by the batch.
std::string PipelineLua(int pipeline) {
  if (pipeline <= 1) return "";
  return "init = function(args)\n"
         "  local r = {}\n"
         "  for i = 1, " +
         std::to_string(pipeline) +
         " do r[i] = wrk.format() end\n"
         "  req = table.concat(r)\n"
         "end\n"
         "request = function() return req end\n";
}

std::string WriteScript(const std::string& path, const std::string& body, int pipeline) {
  testing::WriteFile(path,
                     "-- generated by worker_post_bench: one lib/sedna eval-worker report\n"
                     "wrk.method = \"POST\"\n"
                     "wrk.headers[\"Content-Type\"] = \"application/json\"\n"
                     "wrk.body = [==[" +
                         body + "]==]\n" + PipelineLua(pipeline));
  return path;
}

std::string WriteGetScript(const std::string& path, int pipeline) {
  testing::WriteFile(path, "-- generated by worker_post_bench: a bare GET\nwrk.method = \"GET\"\n" +
                               PipelineLua(pipeline));
  return path;
}

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  const int duration = static_cast<int>(args.GetInt("duration", 10));
  const std::string wrk = args.Get("wrk", "wrk");
  Cluster::Options o;
  o.lc_binary = LcBinary(args);
  o.log_level = args.Get("log-level", "info");
  const bool stalled = args.Has("gm-stalled");
  const int pipeline = static_cast<int>(args.GetInt("pipeline", 1));
  const std::string only = args.Get("only", "");
  if (!only.empty() && only != "known" && only != "unknown" && only != "healthz") {
    throw std::runtime_error("--only=" + only + ": expected known, unknown or healthz");
  }
  std::string pinned = "not pinned";
  if (args.Has("cpu")) {
    const int cpu = static_cast<int>(args.GetInt("cpu", 0));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < 0 || cpu >= CPU_SETSIZE) throw std::runtime_error("--cpu: out of range");
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) {
      throw std::runtime_error("--cpu=" + std::to_string(cpu) + ": sched_setaffinity failed");
    }
    pinned = "all on CPU " + std::to_string(cpu);
  }
  o.decode_frames = false;  // count only: keep the emulator's thread cheap
  o.tmp_prefix = "sedna-bench-post-";
  o.tmp_root = TmpRoot(args);
  Cluster c(o);
  std::printf("worker_post_bench: sedna-lc %s (log level %s, GM %s, %s), pid %d; %s\n",
              o.lc_binary.c_str(), o.log_level.c_str(), stalled ? "stalled" : "connected",
              pinned.c_str(), static_cast<int>(c.pid()), LoadAvg().c_str());
  std::fflush(stdout);

  const std::string job = "post-job";
  testing::WriteFile(c.Host("/data/post.txt"), "");
  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  c.Send("insert", DatasetObject("post-ds", "/data/post.txt"));
  JobParams p;
  p.name = job;
  p.dataset = "post-ds";
  c.Send("insert", IlJobAtTrainWaiting(p));
  if (!c.WaitStatus([](const Json& jobs) { return jobs.size() == 1; }, std::chrono::seconds(20))) {
    throw std::runtime_error("job never listed in /status");
  }

  struct Case {
    const char* name;  // for --only
    const char* label;
    std::string owner;  // empty: GET /healthz on the status port
  };
  std::vector<Case> cases;
  cases.push_back(
      {"known",
       stalled ? "known job (forward + outbox, GM stalled)" : "known job (forward + outbox)", job});
  cases.push_back({"unknown", "unknown owner (past its early-report bound: 503)", "no-such-job"});
  cases.push_back({"healthz", "GET /healthz (no-op ceiling)", ""});
  std::vector<std::pair<std::string, double>> results;
  std::vector<double> cpu_us;
  std::vector<std::string> refused;  // per result: the non-2xx count of a known-job run
  for (const auto& k : cases) {
    if (!only.empty() && only != k.name) continue;
    const std::string worker = "eval-worker-2bq7d";
    const bool noop = k.owner.empty();
    const std::string script = noop ? WriteGetScript(c.tmp() + "/get-healthz.lua", pipeline)
                                    : WriteScript(c.tmp() + "/post-" + k.owner + ".lua",
                                                  EvalBody(worker, k.owner), pipeline);
    const std::string url = noop
                                ? "http://127.0.0.1:" + std::to_string(c.status_port()) + "/healthz"
                                : "http://127.0.0.1:" + std::to_string(c.worker_port()) +
                                      "/sedna/workers/" + worker + "/info";
    std::printf("- %s\n", k.label);
    const ProcCpu split0 = ProcCpuSplit(c.pid());
    const double cpu0 = split0.user + split0.system;
    const int64_t frames0 = c.frames_seen();
    if (stalled) c.gm().server().SetUnresponsive(true);
    WrkResult r = RunWrk(wrk, script, url, duration);
    const ProcCpu split1 = ProcCpuSplit(c.pid());
    const double cpu1 = split1.user + split1.system;
    if (stalled) c.gm().server().SetUnresponsive(false);
    std::printf("  %s\n", LoadAvg().c_str());
    auto m = c.Metrics();
    const int64_t backlog = static_cast<int64_t>(m["sedna_lc_outbox_messages"]);
    std::printf("  %.0f req/s  [%s]  latency %s%s\n", r.rps, r.latency_line.c_str(),
                r.percentiles.c_str(), r.non2xx.empty() ? "" : (", NOT OK: " + r.non2xx).c_str());
    const double us_per_req = r.requests > 0 ? (cpu1 - cpu0) * 1e6 / r.requests : 0;
    const double user_us = r.requests > 0 ? (split1.user - split0.user) * 1e6 / r.requests : 0;
    std::printf(
        "  LC CPU during the run: %.2f s of %d s = %.1f us per request (user %.1f, kernel %.1f; "
        "one-core ceiling %.0f req/s); frames at the GM during the run: %lld\n",
        cpu1 - cpu0, duration, us_per_req, user_us, us_per_req - user_us,
        us_per_req > 0 ? 1e6 / us_per_req : 0.0, static_cast<long long>(c.frames_seen() - frames0));
    cpu_us.push_back(us_per_req);
    {
      const auto t0 = Clock::now();
      int64_t left = backlog;
      while (left > 0 && Clock::now() - t0 < std::chrono::seconds(300)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        left = static_cast<int64_t>(c.Metrics()["sedna_lc_outbox_messages"]);
      }
      std::printf("  outbox backlog at the end: %lld frames, drained in %.2f s%s\n",
                  static_cast<long long>(backlog), Seconds(Clock::now() - t0),
                  left > 0 ? " (NOT fully drained after 300 s)" : "");
    }
    results.push_back({k.label, r.rps});
    refused.push_back(std::string(k.name) == "known" ? r.non2xx : "");
  }
  std::printf("  LC VmHWM %.2f MB, VmRSS %.2f MB after the runs\n",
              ProcStatusKb(c.pid(), "VmHWM") / 1024.0, ProcStatusKb(c.pid(), "VmRSS") / 1024.0);
  for (size_t i = 0; i < results.size(); ++i) {
    std::printf("RESULT worker_posts_per_s \"%s\" log=%s %.0f (LC CPU %.1f us/request)%s\n",
                results[i].first.c_str(), o.log_level.c_str(), results[i].second, cpu_us[i],
                refused[i].empty() ? ""
                                   : (" NOT a per-report figure: " + refused[i] +
                                      " requests answered other than 2xx")
                                         .c_str());
  }
  c.Stop();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "worker_post_bench: %s\n", e.what());
  return 1;
}
