// End to end, standalone mode: the real sedna-lc binary runs `standalone -f <manifests>` in a temp
// directory, with manifests written by the test and tiny local workers
// (standalone_workers/worker.py, reporting through the digits example's sedna_report.py exactly
// like lib/sedna). Everything is observed from outside, as a user would: the daemon's /status
// endpoint, its log, the worker logs, the files the workers write, and /proc for worker processes.
// The daemon is another process, so waits are bounded polls of /status with short intervals and
// generous deadlines.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "adapters/s3/s3_client.h"
#include "lc_process.h"
#include "moto_server.h"

namespace sedna::testing {
namespace {

namespace stdfs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kWorker = std::string(SEDNA_STANDALONE_WORKERS) + "/worker.py";
const std::string kReportDir = SEDNA_DIGITS_EXAMPLE;  // holds sedna_report.py
constexpr auto kWait = seconds(60);                   // generous: CI machines are slow

// Double-quoted YAML scalar (JSON string syntax is valid YAML).
std::string Q(const std::string& s) { return Json(s).dump(); }

// A worker process is alive when /proc has it and it is not a zombie (a zombie is dead; its
// parent, or init after the daemon exited, reaps it).
bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto p = stat.rfind(')');
  if (stat.empty() || p == std::string::npos || p + 2 >= stat.size()) return false;
  const char state = stat[p + 2];
  return state != 'Z' && state != 'X';
}

bool WaitGone(pid_t pid, milliseconds limit) {
  auto end = Clock::now() + limit;
  while (Alive(pid)) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true;
}

int CountOccurrences(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

struct JobOpts {
  std::string name;
  std::string train_mode = "train";
  std::string eval_mode = "eval";
  std::string infer_mode = "infer";
  // Replaces the whole train container args (e.g. a command that does not exist).
  std::vector<std::string> train_args;
  std::string threshold = "5";  // train trigger: num_of_samples > threshold
  std::string initial_model = "base-model";
  std::string train_prob = "0.8";
  std::vector<std::pair<std::string, std::string>> train_env;
  std::vector<std::pair<std::string, std::string>> eval_env;
  std::string dataset = "ds";
  std::string output_dir;       // ../out/<name> unless set
  std::string credential_name;  // spec.credentialName, unset when empty
  bool hot_update = false;      // deploySpec.model.hotUpdateEnabled, pollPeriodSeconds 1
  // YAML lines added to a template's pod spec (8 spaces in) and to its container (12 spaces in).
  std::string train_pod_yaml, train_container_yaml, infer_pod_yaml, infer_container_yaml;
};

class StandaloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Canonical: standalone mode resolves relative manifest paths with realpath.
    tmp = stdfs::canonical(MakeTempDir("sedna-sa-")).string();
    mdir = tmp + "/m";
    index = tmp + "/data/index.txt";
    base_model = tmp + "/models/base/model.bin";
    deploy_model = tmp + "/models/deploy/model.bin";
    db = tmp + "/lc/database.db";
    for (const char* d : {"/m", "/data", "/models/base", "/models/deploy", "/marks"}) {
      stdfs::create_directories(tmp + d);
    }
    WriteFile(index, "");
    WriteFile(base_model, "BASE-MODEL");
    WriteFile(deploy_model, "OLD-DEPLOYED-MODEL");
    status_port = FreePort();
    bind_port = FreePort();
  }

  void TearDown() override {
    if (lc) {
      if (HasFailure()) std::cerr << "---- sedna-lc log (" << log_path << ") ----\n" << lc->Log();
      StopLc(seconds(15));
    } else if (HasFailure() && !log_path.empty()) {
      std::cerr << "---- sedna-lc log (" << log_path << ") ----\n" << ReadFile(log_path);
    }
    // Never leave a worker behind, even when the daemon failed to: every worker wrote its pid.
    for (const Json& m : AllMarks()) {
      for (const char* k : {"pid", "child_pid"}) {
        if (!m.contains(k)) continue;
        pid_t pid = m[k].get<pid_t>();
        std::string cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
        if (Alive(pid) && (cmd.find("worker.py") != std::string::npos ||
                           cmd.find("sleep") != std::string::npos)) {
          ::kill(pid, SIGKILL);
        }
      }
    }
    std::error_code ec;
    stdfs::remove_all(tmp, ec);  // the daemon's log was printed above on failure
  }

  // ------------------------------------------------------------------ the daemon

  void StartLc(std::vector<std::string> extra = {}) {
    ++starts;
    log_path = tmp + "/lc" + std::to_string(starts) + ".log";
    std::vector<std::string> args{"standalone",
                                  "-f",
                                  manifest_arg.empty() ? mdir : manifest_arg,
                                  "--db",
                                  db,
                                  "--status-port",
                                  std::to_string(status_port),
                                  "--bind-port",
                                  std::to_string(bind_port),
                                  "--log-level",
                                  "debug"};
    for (auto& a : extra) args.push_back(a);
    const char* path = std::getenv("PATH");
    std::map<std::string, std::string> env{{"PATH", path ? path : "/usr/bin:/bin"}};
    if (const char* home = std::getenv("HOME")) env["HOME"] = home;
    lc = std::make_unique<LcProcess>(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", env, args,
                                     log_path);
    auto end = Clock::now() + seconds(20);
    while (!Status()) {
      siginfo_t si{};
      if (::waitid(P_PID, lc->pid(), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          si.si_pid == lc->pid()) {
        FAIL() << "sedna-lc exited during start-up:\n" << lc->Log();
      }
      if (Clock::now() > end) FAIL() << "/status never answered:\n" << lc->Log();
      std::this_thread::sleep_for(milliseconds(50));
    }
  }

  // SIGTERM, then waits up to `limit` for the exit; returns the exit status (or -signal), -999
  // when it had to be killed. `elapsed` gets the time from SIGTERM to exit.
  int StopLc(milliseconds limit, milliseconds* elapsed = nullptr) {
    if (!lc) return -998;
    const pid_t pid = lc->pid();
    const auto t0 = Clock::now();
    ::kill(pid, SIGTERM);
    for (;;) {
      siginfo_t si{};
      if (::waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;
      if (Clock::now() - t0 > limit) {
        ADD_FAILURE() << "sedna-lc did not exit within " << limit.count() << " ms of SIGTERM";
        lc->Kill();
        lc.reset();
        return -999;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    if (elapsed) *elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
    int rc = lc->Stop();  // reaps (the SIGTERM it sends goes to a zombie)
    lc.reset();
    return rc;
  }

  // Waits for the daemon to exit by itself; returns its exit status, -999 after `limit`.
  int WaitExit(milliseconds limit) {
    const pid_t pid = lc->pid();
    const auto end = Clock::now() + limit;
    for (;;) {
      siginfo_t si{};
      if (::waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;
      if (Clock::now() > end) return -999;
      std::this_thread::sleep_for(milliseconds(20));
    }
    int rc = lc->Stop();
    lc.reset();
    return rc;
  }

  // Starts the daemon with `args` only (no readiness wait), for start-up failures.
  void SpawnLc(const std::vector<std::string>& args) {
    ++starts;
    log_path = tmp + "/lc" + std::to_string(starts) + ".log";
    const char* path = std::getenv("PATH");
    lc = std::make_unique<LcProcess>(
        std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
        std::map<std::string, std::string>{{"PATH", path ? path : "/usr/bin:/bin"}}, args,
        log_path);
  }

  std::string Log() const { return ReadFile(log_path); }

  // The job's conditions as the embedded GM keeps them in the database ("Train/Failed", ...),
  // oldest first; read with python3's sqlite3 (read-only, the daemon may be running).
  std::vector<std::string> Conditions(const std::string& job) {
    const std::string cmd =
        "python3 -c 'import sqlite3, sys, json\n"
        "c = sqlite3.connect(\"file:\" + sys.argv[1] + \"?mode=ro\", uri=True, timeout=5)\n"
        "r = c.execute(\"SELECT value FROM lc_state WHERE scope = ? AND key = ?\", "
        "(\"localgm\", sys.argv[2])).fetchone()\n"
        "for x in (json.loads(r[0])[\"conditions\"] if r else []):\n"
        "  print(x[\"stage\"] + \"/\" + x[\"type\"])' " +
        db + " default/incrementallearningjob/" + job;
    std::vector<std::string> out;
    FILE* f = ::popen(cmd.c_str(), "r");
    if (!f) return out;
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) {
      std::string l = buf;
      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
      out.push_back(l);
    }
    ::pclose(f);
    return out;
  }

  // True when `conds` ends with `tail`.
  static bool EndsWith(const std::vector<std::string>& conds,
                       const std::vector<std::string>& tail) {
    return conds.size() >= tail.size() && std::equal(tail.rbegin(), tail.rend(), conds.rbegin());
  }

  // ------------------------------------------------------------------ /status

  std::optional<Json> Status() {
    try {
      HttpResult r = HttpRequest(status_port, "GET", "/status", "", {}, 500);
      if (r.status != 200) return std::nullopt;
      Json j = Json::parse(r.body, nullptr, false);
      if (j.is_discarded() || !j.contains("jobs")) return std::nullopt;
      return j;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  std::optional<Json> JobStatus(const std::string& name) {
    auto st = Status();
    if (!st) return std::nullopt;
    for (const auto& j : (*st)["jobs"]) {
      if (j.value("name", "") == name) return j;
    }
    return std::nullopt;
  }

  // Polls `pred` until it holds; on timeout records a failure naming `what` with the last /status.
  bool WaitFor(const std::string& what, const std::function<bool()>& pred,
               milliseconds limit = kWait) {
    auto end = Clock::now() + limit;
    while (!pred()) {
      if (Clock::now() > end) {
        auto st = Status();
        ADD_FAILURE() << "timed out waiting for " << what
                      << "; /status: " << (st ? st->dump(1) : std::string("(no answer)"));
        return false;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    return true;
  }

  // Waits until the job's /status entry satisfies `pred`; returns that entry.
  std::optional<Json> WaitJob(const std::string& name, const std::string& what,
                              const std::function<bool(const Json&)>& pred,
                              milliseconds limit = kWait) {
    std::optional<Json> got;
    bool ok = WaitFor(
        name + ": " + what,
        [&] {
          got = JobStatus(name);
          return got && pred(*got);
        },
        limit);
    return ok ? got : std::nullopt;
  }

  // Stage back at Train/Waiting with round `round` and no LC work in progress.
  std::optional<Json> WaitTrainWaiting(const std::string& name, int64_t round) {
    return WaitJob(name, "Train/Waiting at round " + std::to_string(round), [&](const Json& j) {
      return j["stage"] == "Train/Waiting" && j["round"] == round && j["work"] == "none";
    });
  }

  // ------------------------------------------------------------------ worker marks

  std::vector<Json> AllMarks() {
    std::vector<Json> out;
    std::error_code ec;
    for (auto it = stdfs::recursive_directory_iterator(tmp + "/marks", ec);
         !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (!it->is_regular_file() || n.empty() || n[0] == '.') continue;
      Json j = Json::parse(ReadFile(it->path().string()), nullptr, false);
      if (j.is_object()) out.push_back(j);
    }
    return out;
  }

  // Marks written by `job`'s workers in `mode`, oldest first.
  std::vector<Json> Marks(const std::string& job, const std::string& mode) {
    std::vector<Json> out;
    for (Json& m : AllMarks()) {
      if (m["mode"] == mode && m["env"].value("JOB_NAME", "") == job) out.push_back(m);
    }
    std::sort(out.begin(), out.end(),
              [](const Json& a, const Json& b) { return a["time"] < b["time"]; });
    return out;
  }

  std::vector<Json> WaitMarks(const std::string& job, const std::string& mode, size_t n,
                              milliseconds limit = kWait) {
    std::vector<Json> m;
    WaitFor(
        job + ": " + std::to_string(n) + " " + mode + " worker(s) started",
        [&] {
          m = Marks(job, mode);
          return m.size() >= n;
        },
        limit);
    return m;
  }

  // Processes of `job`'s workers in `mode` that are still alive.
  std::vector<pid_t> AlivePids(const std::string& job, const std::string& mode) {
    std::vector<pid_t> out;
    for (const Json& m : Marks(job, mode)) {
      if (Alive(m["pid"].get<pid_t>())) out.push_back(m["pid"].get<pid_t>());
    }
    return out;
  }

  // Worker log files of `job` whose names start with `prefix`.
  std::vector<std::string> WorkerLogs(const std::string& job, const std::string& prefix) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : stdfs::directory_iterator(tmp + "/lc/workers/" + job, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind(prefix, 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".log") {
        out.push_back(e.path().string());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // ------------------------------------------------------------------ manifests and samples

  // Atomic (write + rename) so the daemon's 2 s poll never reads half a file; the temporary name
  // starts with '.' so the directory loader skips it.
  void WriteManifest(const std::string& file, const std::string& text) {
    const std::string tmpfile = mdir + "/." + file + ".tmp";
    WriteFile(tmpfile, text);
    stdfs::rename(tmpfile, mdir + "/" + file);
  }

  static std::string Doc(const std::string& kind, const std::string& name,
                         const std::string& spec) {
    return "apiVersion: sedna.io/v1alpha1\nkind: " + kind + "\nmetadata:\n  name: " + name +
           "\nspec:\n" + spec;
  }

  // Dataset "ds" (relative url), Models base-model and deploy-model (one relative, one absolute).
  static std::string CommonYaml(const std::string& extra_models = "") {
    return Doc("Dataset", "ds", "  url: ../data/index.txt\n  format: txt\n  nodeName: edge\n") +
           "---\n" +
           Doc("Model", "base-model", "  url: ../models/base/model.bin\n  format: bin\n") +
           "---\n" +
           Doc("Model", "deploy-model", "  url: ../models/deploy/model.bin\n  format: bin\n") +
           extra_models;
  }

  std::string Container(const std::string& name, const std::vector<std::string>& args,
                        const std::string& job,
                        const std::vector<std::pair<std::string, std::string>>& env,
                        const std::string& pod_yaml = "", const std::string& container_yaml = "") {
    std::string a;
    for (const auto& s : args) a += (a.empty() ? "" : ", ") + Q(s);
    std::string y =
        "    template:\n      spec:\n        nodeName: edge\n" + pod_yaml + "        containers:\n";
    y += "          - name: " + name + "\n            image: ignored:latest\n";
    y += "            args: [" + a + "]\n            env:\n";
    auto var = [&](const std::string& k, const std::string& v) {
      y += "              - name: " + k + "\n                value: " + Q(v) + "\n";
    };
    var("MARK_DIR", tmp + "/marks/" + job);
    var("PYTHONPATH", kReportDir);
    for (const auto& [k, v] : env) var(k, v);
    return y + container_yaml;
  }

  std::string JobYaml(const JobOpts& o) {
    std::string s;
    s += "  initialModel:\n    name: " + o.initial_model + "\n";
    s += "  dataset:\n    name: " + o.dataset + "\n    trainProb: " + o.train_prob + "\n";
    s += "  trainSpec:\n";
    s += Container(
        "train-worker",
        o.train_args.empty() ? std::vector<std::string>{kWorker, o.train_mode} : o.train_args,
        o.name, o.train_env, o.train_pod_yaml, o.train_container_yaml);
    s += "    trigger:\n      checkPeriodSeconds: 1\n";
    s += "      timer:\n        start: \"00:00\"\n        end: \"24:00\"\n";
    s += "      condition:\n        operator: \">\"\n        threshold: " + o.threshold +
         "\n        metric: num_of_samples\n";
    s += "  evalSpec:\n" + Container("eval-worker", {kWorker, o.eval_mode}, o.name, o.eval_env);
    s += "  deploySpec:\n    model:\n      name: deploy-model\n";
    if (o.hot_update) s += "      hotUpdateEnabled: true\n      pollPeriodSeconds: 1\n";
    s += "    trigger:\n      condition:\n        operator: \">\"\n        threshold: 0.01\n";
    s += "        metric: precision_delta\n";
    s += "    hardExampleMining:\n      name: IBT\n";
    s += Container("infer-worker", {kWorker, o.infer_mode}, o.name, {}, o.infer_pod_yaml,
                   o.infer_container_yaml);
    s += "  outputDir: " + (o.output_dir.empty() ? "../out/" + o.name : o.output_dir) + "\n";
    if (!o.credential_name.empty()) s += "  credentialName: " + o.credential_name + "\n";
    return Doc("IncrementalLearningJob", o.name, s);
  }

  void AppendSamples(int n) {
    std::string s;
    for (int i = 0; i < n; ++i, ++next_sample) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "img/%05d.png %d\n", next_sample, next_sample % 10);
      s += buf;
    }
    AppendFile(index, s);
  }

  // Appends samples until the job's train trigger (> 5 train samples) has enough.
  void FeedRound() { AppendSamples(20); }

  std::string manifest_arg;  // -f: the manifest directory unless set
  std::string tmp, mdir, index, base_model, deploy_model, db, log_path;
  uint16_t status_port = 0, bind_port = 0;
  int starts = 0;
  int next_sample = 0;
  std::unique_ptr<LcProcess> lc;
};

// ---------------------------------------------------------------------------------------------

// One complete IL round with real local workers: samples -> train worker -> eval worker -> the
// deploy copy -> the inference worker restarted on the new model. Checks Sedna's env contract as
// the workers saw it, the files, and the decision in /status.
TEST_F(StandaloneTest, FullIlRoundWithLocalWorkers) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "digits"}));
  StartLc();
  auto j0 = WaitJob("digits", "loaded at Train/Waiting",
                    [](const Json& j) { return j["stage"] == "Train/Waiting"; });
  ASSERT_TRUE(j0);
  EXPECT_EQ((*j0)["kind"], "IncrementalLearningJob");
  EXPECT_EQ((*j0)["namespace"], "default");
  EXPECT_EQ((*j0)["round"], 1);
  EXPECT_EQ((*j0)["decisions"], 0);

  // The inference worker starts at the job's first sync, on the deploy model as it is.
  auto infer0 = WaitMarks("digits", "infer", 1);
  ASSERT_EQ(infer0.size(), 1u);
  EXPECT_EQ(infer0[0]["model_content"], "OLD-DEPLOYED-MODEL");
  EXPECT_EQ(infer0[0]["env"].value("MODEL_URL", ""), deploy_model);
  EXPECT_EQ(infer0[0]["env"].value("HEM_NAME", ""), "IBT");
  ASSERT_EQ(WorkerLogs("digits", "inferworker-").size(), 1u);
  const pid_t infer0_pid = infer0[0]["pid"].get<pid_t>();
  EXPECT_TRUE(Alive(infer0_pid));

  FeedRound();
  auto done = WaitJob("digits", "round 1 deployed and back at Train/Waiting", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none" &&
           !j["deployedUrl"].get<std::string>().empty();
  });
  ASSERT_TRUE(done);

  // The train worker's env contract (relative manifest paths resolved against the manifest dir).
  auto train = Marks("digits", "train");
  ASSERT_EQ(train.size(), 1u);
  const Json& tenv = train[0]["env"];
  const std::string out = tmp + "/out/digits";
  EXPECT_EQ(tenv.value("TRAIN_DATASET_URL", ""), out + "/data/train/1/data.txt");
  EXPECT_EQ(tenv.value("ORIGINAL_DATASET_URL", ""), index);
  EXPECT_EQ(tenv.value("BASE_MODEL_URL", ""), base_model);
  EXPECT_EQ(tenv.value("MODEL_URL", ""), out + "/train/1");
  EXPECT_EQ(tenv.value("LC_SERVER", ""), "http://127.0.0.1:" + std::to_string(bind_port));
  EXPECT_EQ(tenv.value("JOB_NAME", ""), "digits");
  EXPECT_EQ(tenv.value("NAMESPACE", ""), "default");
  EXPECT_EQ(tenv.value("WORKER_NAME", "").rfind("train-worker-", 0), 0u);
  const std::string train_data = ReadFile(out + "/data/train/1/data.txt");
  EXPECT_GE(CountOccurrences(train_data, "\n"), 6) << train_data;  // > 5 train samples fired it
  const std::string trained_url = out + "/train/1/model.bin";
  const std::string trained = ReadFile(trained_url);
  EXPECT_EQ(trained, "trained " + out + "/train/1 from [BASE-MODEL]");

  auto eval = Marks("digits", "eval");
  ASSERT_EQ(eval.size(), 1u);
  EXPECT_EQ(eval[0]["env"].value("MODEL_URLS", ""), trained_url + ";" + deploy_model);
  EXPECT_EQ(eval[0]["env"].value("TEST_DATASET_URL", ""),
            out + "/data/eval/1/data.txt");  // the v0.7 layout: the train round's number
  EXPECT_EQ(eval[0]["env"].value("WORKER_NAME", "").rfind("eval-worker-", 0), 0u);

  // The decision, as /status shows it, and the deploy copy.
  EXPECT_EQ((*done)["round"], 2);
  EXPECT_EQ((*done)["decidedRound"], 1);
  EXPECT_EQ((*done)["lastDecision"].get<std::string>().rfind("deploying trained model", 0), 0u)
      << (*done)["lastDecision"];
  EXPECT_EQ((*done)["deployedUrl"], trained_url);
  ASSERT_EQ((*done)["lastEval"].size(), 2u);
  EXPECT_EQ((*done)["lastEval"][0]["metrics"]["precision"], Json::array({0.9}));
  EXPECT_EQ((*done)["lastEval"][1]["metrics"]["precision"], Json::array({0.5}));
  EXPECT_EQ((*done)["lastError"], "");
  EXPECT_EQ(ReadFile(deploy_model), trained);

  // The inference worker was restarted after the deploy and serves the new model.
  auto infer = WaitMarks("digits", "infer", 2);
  ASSERT_EQ(infer.size(), 2u);
  EXPECT_EQ(infer[1]["model_content"], trained);
  EXPECT_TRUE(WaitGone(infer0_pid, seconds(10))) << "the old inference worker still runs";
  EXPECT_EQ(WorkerLogs("digits", "inferworker-").size(), 2u);
  EXPECT_EQ(WorkerLogs("digits", "train-worker-").size(), 1u);
  EXPECT_EQ(WorkerLogs("digits", "eval-worker-").size(), 1u);
  const pid_t infer1_pid = infer[1]["pid"].get<pid_t>();
  EXPECT_TRUE(Alive(infer1_pid));

  EXPECT_EQ(StopLc(seconds(20)), 0);
  EXPECT_TRUE(WaitGone(infer1_pid, seconds(2))) << "inference worker outlived the daemon";
}

// The local GM plays the G2 GM by default: a cold round's deploy is asked for with (Deploy,
// Waiting) and completes without (Deploy, Starting) (docs/protocol.md §H1.3); the inference
// worker is restarted on the new model.
TEST_F(StandaloneTest, G2ColdRoundAsksForTheDeployAndCompletesIt) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "coldg2"}));
  StartLc();
  ASSERT_EQ(WaitMarks("coldg2", "infer", 1).size(), 1u);
  FeedRound();
  ASSERT_TRUE(WaitJob("coldg2", "round 1 deployed", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  }));
  EXPECT_TRUE(EndsWith(Conditions("coldg2"), {"Eval/Completed", "Deploy/Waiting", "Deploy/Ready",
                                              "Deploy/Completed", "Train/Waiting"}))
      << ::testing::PrintToString(Conditions("coldg2"));
  auto infer = WaitMarks("coldg2", "infer", 2);
  ASSERT_EQ(infer.size(), 2u);
  EXPECT_EQ(infer[1]["model_content"], ReadFile(tmp + "/out/coldg2/train/1/model.bin"));
  EXPECT_NE(Log().find("plays the v0.5-v0.7 (G2) GM (--gm-protocol auto)"), std::string::npos);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// Model hot update on the G2 local GM, end to end (docs/protocol.md §H4.1, §H3.4 case 3): one
// inference worker for the whole job, started with the hot-update env; on each round's
// (Deploy, Running) the LC writes the trained model and model_config.json into the job's
// model-hot-update directory (bytes as the v0.7.0 LC writes them); the worker reloads it and
// reports `deploy completed`, which ends the round. Two rounds (upstream issue [P:U381] is round 2
// never updating).
TEST_F(StandaloneTest, G2HotUpdateReloadsTheOneInferenceWorkerEachRound) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "hot", .hot_update = true}));
  StartLc();
  const std::string dir = tmp + "/lc/model-hot-update/default/incrementallearningjob/hot";
  const std::string config = dir + "/model_config.json";
  auto infer = WaitMarks("hot", "infer", 1);
  ASSERT_EQ(infer.size(), 1u);
  EXPECT_EQ(infer[0]["env"].value("MODEL_HOT_UPDATE", ""), "true");
  EXPECT_EQ(infer[0]["env"].value("MODEL_POLL_PERIOD_SECONDS", ""), "1");
  EXPECT_EQ(infer[0]["env"].value("MODEL_HOT_UPDATE_CONFIG", ""), config);
  EXPECT_EQ(infer[0]["env"].value("MODEL_URL", ""), deploy_model);
  std::vector<std::string> versions;
  for (int round = 1; round <= 2; ++round) {
    FeedRound();
    auto reloads = WaitMarks("hot", "reload", round);
    ASSERT_EQ(reloads.size(), static_cast<size_t>(round))
        << "round " << round << ": the inference worker did not reload; conditions "
        << ::testing::PrintToString(Conditions("hot"));
    const Json& r = reloads.back();
    const std::string trained = tmp + "/out/hot/train/" + std::to_string(round) + "/model.bin";
    EXPECT_EQ(r["model_content"], ReadFile(trained)) << "round " << round;
    // {"model_config":{"model_path":..,"model_update_time":..}}, json.MarshalIndent(v, "", " "),
    // no trailing newline.
    const std::string text = r["config"];
    Json c = Json::parse(text, nullptr, false);
    ASSERT_TRUE(c.is_object()) << text;
    EXPECT_EQ(c["model_config"]["model_path"], "/model-hot-update/model.bin");
    EXPECT_EQ(text.rfind("{\n \"model_config\": {\n  \"model_path\": ", 0), 0u) << text;
    EXPECT_NE(text.back(), '\n');
    versions.push_back(r["version"]);
    ASSERT_TRUE(WaitJob("hot", "round " + std::to_string(round) + " done", [&](const Json& j) {
      return j["decisions"] == round && j["stage"] == "Train/Waiting" && j["work"] == "none";
    }));
    EXPECT_TRUE(
        EndsWith(Conditions("hot"), {"Deploy/Waiting", "Deploy/Ready", "Deploy/Starting",
                                     "Deploy/Running", "Deploy/Completed", "Train/Waiting"}))
        << ::testing::PrintToString(Conditions("hot"));
  }
  EXPECT_NE(versions[0], versions[1]);
  EXPECT_EQ(ReadFile(dir + "/model.bin"), ReadFile(tmp + "/out/hot/train/2/model.bin"));
  EXPECT_EQ(Marks("hot", "infer").size(), 1u) << "a hot deploy must not restart the worker";
  EXPECT_TRUE(Alive(infer[0]["pid"].get<pid_t>()));

  // rollback-model of the hot-update model, given the standalone's --db: the config beside it is
  // rewritten and the running worker reloads the restored version ([D:I23.4]c).
  const std::string v1 = ReadFile(dir + "/.sedna-versions/model.bin.1");
  ASSERT_FALSE(v1.empty());
  const std::string rb_log = tmp + "/rollback.log";
  LcProcess rb(
      std::string(SEDNA_BINARY_DIR) + "/sedna-lc", {{"NODENAME", "edge"}},
      {"rollback-model", dir + "/model.bin", "--version", "1", "--rootfs", "/", "--db=" + db},
      rb_log);
  ASSERT_EQ(rb.Wait(), 0) << ReadFile(rb_log);
  EXPECT_NE(ReadFile(rb_log).find("rewrote " + config), std::string::npos) << ReadFile(rb_log);
  auto reloads = WaitMarks("hot", "reload", 3);
  ASSERT_EQ(reloads.size(), 3u) << ReadFile(rb_log);
  EXPECT_EQ(reloads.back()["model_content"], v1);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A restart after a hot round: the inference worker starts again and, like lib/sedna, reloads the
// model_config.json it finds and reports it; the local GM refuses that report (the job is not at
// (Deploy, Running)), so no stray (Deploy, Completed) enters the next round, and round 2 reloads.
TEST_F(StandaloneTest, G2HotUpdateRestartAddsNoStrayDeployReport) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "hotr", .hot_update = true}));
  StartLc();
  ASSERT_EQ(WaitMarks("hotr", "infer", 1).size(), 1u);
  FeedRound();
  ASSERT_EQ(WaitMarks("hotr", "reload", 1).size(), 1u)
      << ::testing::PrintToString(Conditions("hotr"));
  ASSERT_TRUE(WaitTrainWaiting("hotr", 2));
  const auto before = Conditions("hotr");
  ASSERT_EQ(StopLc(seconds(20)), 0);

  StartLc();
  ASSERT_EQ(WaitMarks("hotr", "infer", 2).size(), 2u);
  // The restarted worker reloads the existing config (its own reload mark) and is refused.
  auto reloads = WaitMarks("hotr", "reload", 2);
  ASSERT_EQ(reloads.size(), 2u);
  ASSERT_TRUE(WaitFor("the refused deploy report in the log", [&] {
    return Log().find("a model reload is reported only while the GM waits for one") !=
           std::string::npos;
  }));
  EXPECT_EQ(Conditions("hotr"), before) << "a stray condition after the restart";

  FeedRound();
  ASSERT_EQ(WaitMarks("hotr", "reload", 3).size(), 3u);
  ASSERT_TRUE(WaitTrainWaiting("hotr", 3));
  auto c = Conditions("hotr");
  EXPECT_EQ(std::count(c.begin(), c.end(), std::string("Deploy/Completed")), 2)
      << ::testing::PrintToString(c);
  EXPECT_EQ(Marks("hotr", "reload").back()["model_content"],
            ReadFile(tmp + "/out/hotr/train/2/model.bin"));
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// --gm-protocol g1 keeps the 2021 GM: a job with hotUpdateEnabled is deployed cold (the field is
// dropped as the 2021 GM's typed API drops it), the inference worker restarted on the new model,
// no model_config.json, and (Deploy, Starting) before (Deploy, Completed).
TEST_F(StandaloneTest, GmProtocolG1DeploysAHotJobCold) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "oldgm", .hot_update = true}));
  StartLc({"--gm-protocol", "g1"});
  auto infer0 = WaitMarks("oldgm", "infer", 1);
  ASSERT_EQ(infer0.size(), 1u);
  EXPECT_EQ(infer0[0]["env"].count("MODEL_HOT_UPDATE"), 0u);
  FeedRound();
  ASSERT_TRUE(WaitJob("oldgm", "round 1 deployed", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  }));
  EXPECT_TRUE(
      EndsWith(Conditions("oldgm"), {"Eval/Completed", "Deploy/Waiting", "Deploy/Ready",
                                     "Deploy/Starting", "Deploy/Completed", "Train/Waiting"}))
      << ::testing::PrintToString(Conditions("oldgm"));
  const std::string trained = ReadFile(tmp + "/out/oldgm/train/1/model.bin");
  auto infer = WaitMarks("oldgm", "infer", 2);
  ASSERT_EQ(infer.size(), 2u);
  EXPECT_EQ(infer[1]["model_content"], trained);
  EXPECT_EQ(ReadFile(deploy_model), trained);
  EXPECT_FALSE(stdfs::exists(tmp + "/lc/model-hot-update"));
  EXPECT_TRUE(Marks("oldgm", "reload").empty());
  // The 2021 sample layout: the eval file of train round 1 is numbered 2.
  auto eval = Marks("oldgm", "eval");
  ASSERT_EQ(eval.size(), 1u);
  EXPECT_EQ(eval[0]["env"].value("TEST_DATASET_URL", ""), tmp + "/out/oldgm/data/eval/2/data.txt");
  const std::string log = Log();
  EXPECT_NE(log.find("plays the 2021 (G1) GM (--gm-protocol g1)"), std::string::npos);
  EXPECT_NE(log.find("hotUpdateEnabled is ignored with --gm-protocol g1"), std::string::npos);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A YAML syntax error in one file: the log names the file and the line; the good job still runs.
TEST_F(StandaloneTest, BrokenYamlNamesFileAndLine) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("good.yaml", JobYaml({.name = "good"}));
  // Line 13 (in the file, across the document separator) has an unclosed flow sequence.
  WriteManifest("broken.yaml",
                "apiVersion: sedna.io/v1alpha1\n"    // 1
                "kind: Model\n"                      // 2
                "metadata:\n"                        // 3
                "  name: extra-model\n"              // 4
                "spec:\n"                            // 5
                "  url: ../models/base/model.bin\n"  // 6
                "  format: bin\n"                    // 7
                "---\n"                              // 8
                "apiVersion: sedna.io/v1alpha1\n"    // 9
                "kind: IncrementalLearningJob\n"     // 10
                "metadata:\n"                        // 11
                "  name: broken\n"                   // 12
                "  labels: {app: [x, y}\n"           // 13
                "spec:\n"                            // 14
                "  outputDir: ../out/broken\n");     // 15
  StartLc();
  ASSERT_TRUE(WaitJob("good", "loaded", [](const Json&) { return true; }));
  const std::string log = Log();
  bool named = false;
  std::string line_text;
  for (size_t p = 0; p < log.size();) {
    size_t e = log.find('\n', p);
    std::string l = log.substr(p, e == std::string::npos ? std::string::npos : e - p);
    if (l.find("broken.yaml") != std::string::npos && l.find("line 13") != std::string::npos) {
      named = true;
      line_text = l;
    }
    p = e == std::string::npos ? log.size() : e + 1;
  }
  EXPECT_TRUE(named) << "no log line names broken.yaml and line 13:\n" << log;
  EXPECT_NE(line_text.find("document 2"), std::string::npos) << line_text;
  EXPECT_FALSE(JobStatus("broken")) << "the broken document became a job";

  FeedRound();
  auto j = WaitJob("good", "round 1 decided", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  });
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["round"], 2);
  EXPECT_EQ(Marks("good", "train").size(), 1u);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// trainProb: "abc": the log names the file, the document, the object and the field; the other
// job in the same file runs.
TEST_F(StandaloneTest, WrongFieldTypeNamesField) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("jobs.yaml", JobYaml({.name = "fine"}) + "---\n" +
                                 JobYaml({.name = "typo", .train_prob = "\"abc\""}));
  StartLc();
  ASSERT_TRUE(WaitJob("fine", "loaded", [](const Json&) { return true; }));
  const std::string log = Log();
  std::string line;
  for (size_t p = log.find("jobs.yaml (document 2"); p != std::string::npos;
       p = log.find("jobs.yaml (document 2", p + 1)) {
    size_t b = log.rfind('\n', p);
    size_t e = log.find('\n', p);
    line =
        log.substr(b == std::string::npos ? 0 : b + 1, (e == std::string::npos ? log.size() : e) -
                                                           (b == std::string::npos ? 0 : b + 1));
    if (line.find("spec.dataset.trainProb") != std::string::npos) break;
  }
  EXPECT_NE(line.find("IncrementalLearningJob default/typo"), std::string::npos) << log;
  EXPECT_NE(line.find("spec.dataset.trainProb"), std::string::npos) << log;
  EXPECT_NE(line.find("string"), std::string::npos) << "the message should say what was found\n"
                                                    << line;
  EXPECT_FALSE(JobStatus("typo")) << "the bad document became a job";

  FeedRound();
  ASSERT_TRUE(WaitJob("fine", "round 1 decided",
                      [](const Json& j) { return j["decisions"] == 1 && j["round"] == 2; }));
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// The initial Model is not defined: the job waits at Train/Waiting with a note naming the Model;
// adding the Model to the manifest file (picked up by the 2 s manifest poll) lets it proceed.
TEST_F(StandaloneTest, MissingReferencedModelWaits) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "patient", .initial_model = "late-model"}));
  StartLc();
  ASSERT_TRUE(WaitJob("patient", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto j = WaitJob("patient", "a note naming the missing Model", [](const Json& j) {
    return j["lastError"].get<std::string>().find("Model default/late-model") != std::string::npos;
  });
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["stage"], "Train/Waiting");
  EXPECT_EQ((*j)["round"], 1);
  EXPECT_GE((*j)["samplesWaiting"].get<int64_t>(), 6);
  EXPECT_NE(Log().find("late-model"), std::string::npos);
  // It keeps waiting (three trigger periods) and starts no worker.
  std::this_thread::sleep_for(seconds(3));
  j = JobStatus("patient");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["stage"], "Train/Waiting");
  EXPECT_EQ((*j)["round"], 1);
  EXPECT_TRUE(Marks("patient", "train").empty());

  const std::string late = tmp + "/models/late/model.bin";
  stdfs::create_directories(tmp + "/models/late");
  WriteFile(late, "LATE-MODEL");
  WriteManifest("common.yaml", CommonYaml("---\n" + Doc("Model", "late-model",
                                                        "  url: " + late + "\n  format: bin\n")));
  auto proceeded = WaitJob("patient", "round 1 decided after the Model appeared",
                           [](const Json& j) { return j["decisions"] == 1; });
  ASSERT_TRUE(proceeded);
  EXPECT_EQ((*proceeded)["round"], 2);
  auto train = Marks("patient", "train");
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(train[0]["env"].value("BASE_MODEL_URL", ""), late);
  EXPECT_EQ(ReadFile(tmp + "/out/patient/train/1/model.bin"),
            "trained " + tmp + "/out/patient/train/1 from [LATE-MODEL]");
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A train worker whose command does not exist: the log names the command, the stage fails and the
// job returns to Train/Waiting; the other job keeps running.
TEST_F(StandaloneTest, WorkerCommandMissing) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("jobs.yaml", JobYaml({.name = "nocmd", .train_args = {"/nonexistent/cmd"}}) +
                                 "---\n" + JobYaml({.name = "steady"}));
  StartLc();
  ASSERT_TRUE(WaitJob("nocmd", "loaded", [](const Json&) { return true; }));
  ASSERT_TRUE(WaitJob("steady", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_TRUE(WaitTrainWaiting("nocmd", 2));
  {
    auto c = Conditions("nocmd");
    EXPECT_TRUE(EndsWith(c, {"Train/Running", "Train/Failed", "Train/Waiting"}))
        << ::testing::PrintToString(c);
  }
  ASSERT_TRUE(WaitFor("the log naming /nonexistent/cmd",
                      [&] { return Log().find("/nonexistent/cmd") != std::string::npos; }));
  ASSERT_TRUE(WaitFor("the spawn failure in the log",
                      [&] { return Log().find("spawn /nonexistent/cmd") != std::string::npos; }));
  const std::string log = Log();
  size_t p = log.find("spawn /nonexistent/cmd");
  size_t b = log.rfind('\n', p);
  const std::string line = log.substr(b + 1, log.find('\n', p) - b - 1);
  EXPECT_NE(line.find("default/incrementallearningjob/nocmd: Train worker"), std::string::npos)
      << line;
  EXPECT_NE(line.find("No such file or directory"), std::string::npos) << line;
  auto nocmd = JobStatus("nocmd");
  ASSERT_TRUE(nocmd);
  EXPECT_EQ((*nocmd)["decisions"], 0);
  EXPECT_TRUE(Marks("nocmd", "eval").empty()) << "a failed train stage must not go on to eval";

  auto steady = WaitJob("steady", "round 1 decided", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  });
  ASSERT_TRUE(steady);
  EXPECT_EQ((*steady)["round"], 2);
  // The failed job takes the next round when more samples come (it is not stuck).
  FeedRound();
  ASSERT_TRUE(WaitTrainWaiting("nocmd", 3));
  EXPECT_GE(CountOccurrences(Log(), "spawn /nonexistent/cmd"), 2) << Log();
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A train worker that exits 3: the stage fails with the exit logged; back to Train/Waiting.
TEST_F(StandaloneTest, WorkerCrashes) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "crashy", .train_mode = "crash"}));
  StartLc();
  ASSERT_TRUE(WaitJob("crashy", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto crashed = WaitMarks("crashy", "crash", 1);
  ASSERT_EQ(crashed.size(), 1u);
  ASSERT_TRUE(WaitTrainWaiting("crashy", 2));
  {
    auto c = Conditions("crashy");
    EXPECT_TRUE(EndsWith(c, {"Train/Running", "Train/Failed", "Train/Waiting"}))
        << ::testing::PrintToString(c);
  }
  ASSERT_TRUE(WaitFor("the exit code in the log", [&] {
    return Log().find("crashy: Train worker exited with 3") != std::string::npos;
  }));
  auto j = JobStatus("crashy");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["decisions"], 0);
  EXPECT_TRUE(Marks("crashy", "eval").empty());
  // The worker's own output is in its log.
  auto logs = WorkerLogs("crashy", "train-worker-");
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(ReadFile(logs[0]).find("crashing on purpose"), std::string::npos);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// An eval worker that exits 3 fails the Eval stage: no decision, back to Train/Waiting, and the
// next round still evaluates and decides.
TEST_F(StandaloneTest, EvalWorkerCrashesThenNextRoundDecides) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "evalcrash", .eval_mode = "crash"}));
  StartLc();
  ASSERT_TRUE(WaitJob("evalcrash", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_EQ(WaitMarks("evalcrash", "crash", 1).size(), 1u);
  ASSERT_TRUE(WaitTrainWaiting("evalcrash", 2));
  {
    auto c = Conditions("evalcrash");
    EXPECT_TRUE(EndsWith(c, {"Eval/Running", "Eval/Failed", "Train/Waiting"}))
        << ::testing::PrintToString(c);
  }
  ASSERT_TRUE(WaitFor("the eval exit in the log", [&] {
    return Log().find("evalcrash: Eval worker exited with 3") != std::string::npos;
  }));
  EXPECT_EQ((*JobStatus("evalcrash"))["decisions"], 0);
  // Fix the eval worker in the manifest, then feed round 2.
  WriteManifest("job.yaml", JobYaml({.name = "evalcrash"}));
  ASSERT_TRUE(WaitFor("the change applied", [&] {
    return Log().find("evalcrash changed; applied") != std::string::npos;
  }));
  FeedRound();
  auto j = WaitJob("evalcrash", "round 2 decided", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  });
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["round"], 3);
  EXPECT_EQ((*j)["decidedRound"], 2);
  EXPECT_EQ((*j)["lastDecision"].get<std::string>().rfind("deploying trained model", 0), 0u);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A worker's report is acknowledged once journaled and forwarded to the local GM after the
// batch commit; with a 1.5 s batch window every worker exits before its report is forwarded. The
// exit's verdict waits for the report, so the round is decided and no stage fails.
TEST_F(StandaloneTest, WorkerExitBeforeItsForwardedReportStillSucceeds) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "overtaken"}));
  StartLc({"--report-batch-ms", "1500"});
  ASSERT_TRUE(WaitJob("overtaken", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_TRUE(WaitJob("overtaken", "round 1 decided",
                      [](const Json& j) { return j["decisions"] == 1 && j["round"] == 2; }));
  auto c = Conditions("overtaken");
  for (const std::string& cond : c) EXPECT_EQ(cond.find("Failed"), std::string::npos) << cond;
  EXPECT_EQ(Log().find("without reporting"), std::string::npos) << Log();
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A train worker that exits 0 without POSTing its report fails the stage.
TEST_F(StandaloneTest, WorkerNeverReports) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "silent", .train_mode = "noreport"}));
  StartLc();
  ASSERT_TRUE(WaitJob("silent", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_EQ(WaitMarks("silent", "noreport", 1).size(), 1u);
  ASSERT_TRUE(WaitTrainWaiting("silent", 2));
  {
    auto c = Conditions("silent");
    EXPECT_TRUE(EndsWith(c, {"Train/Running", "Train/Failed", "Train/Waiting"}))
        << ::testing::PrintToString(c);
  }
  ASSERT_TRUE(WaitFor("the reason in the log", [&] {
    return Log().find("silent: Train worker exited 0 without reporting") != std::string::npos;
  }));
  auto j = JobStatus("silent");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["decisions"], 0);
  EXPECT_TRUE(Marks("silent", "eval").empty());
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// --worker-timeout 3 with a train worker that sleeps 100 s: killed, stage failed, process gone.
TEST_F(StandaloneTest, WorkerTimeout) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "sleepy", .train_mode = "sleep"}));
  StartLc({"--worker-timeout", "3"});
  ASSERT_TRUE(WaitJob("sleepy", "loaded", [](const Json&) { return true; }));
  FeedRound();
  // The worker's pid as the LC logs it when it starts the worker (not the worker's own mark,
  // which a loaded machine may not let python3 write within the timeout).
  pid_t pid = 0;
  ASSERT_TRUE(WaitFor("the train worker's start in the log", [&] {
    const std::string log = Log();
    const size_t at = log.find("sleepy: started train-worker-");
    if (at == std::string::npos) return false;
    const size_t p = log.find(", pid ", at);
    const size_t eol = log.find('\n', at);
    if (p == std::string::npos || p > eol) return false;
    pid = static_cast<pid_t>(std::atol(log.c_str() + p + 6));
    return true;
  }));
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(WaitGone(pid, seconds(15))) << "the timed-out worker " << pid << " still runs";
  ASSERT_TRUE(WaitTrainWaiting("sleepy", 2));
  {
    auto c = Conditions("sleepy");
    EXPECT_TRUE(EndsWith(c, {"Train/Running", "Train/Failed", "Train/Waiting"}))
        << ::testing::PrintToString(c);
  }
  ASSERT_TRUE(WaitFor("the timeout in the log", [&] {
    return Log().find("sleepy: Train worker timed out after 3000 ms") != std::string::npos;
  }));
  // The inference worker is not a train/eval worker: no timeout for it.
  auto infer = Marks("sleepy", "infer");
  ASSERT_EQ(infer.size(), 1u);
  EXPECT_TRUE(Alive(infer[0]["pid"].get<pid_t>()));
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// Editing the job in the manifest applies the new version: a threshold that kept the trigger
// from firing is lowered, and the train container's env is changed.
TEST_F(StandaloneTest, ManifestChangeApplies) {
  WriteManifest("common.yaml", CommonYaml());
  JobOpts o{.name = "tunable", .threshold = "1000", .train_env = {{"VERSION", "v1"}}};
  WriteManifest("job.yaml", JobYaml(o));
  StartLc();
  ASSERT_TRUE(WaitJob("tunable", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_TRUE(WaitJob("tunable", "samples counted",
                      [](const Json& j) { return j["samplesWaiting"].get<int64_t>() >= 6; }));
  std::this_thread::sleep_for(seconds(3));  // three trigger periods: 1000 is not reached
  auto before = JobStatus("tunable");
  ASSERT_TRUE(before);
  EXPECT_EQ((*before)["round"], 1);
  EXPECT_TRUE(Marks("tunable", "train").empty());

  o.threshold = "5";
  o.train_env = {{"VERSION", "v2"}};
  WriteManifest("job.yaml", JobYaml(o));
  auto after = WaitJob("tunable", "round 1 decided with the new threshold",
                       [](const Json& j) { return j["decisions"] == 1; });
  ASSERT_TRUE(after);
  EXPECT_EQ((*after)["round"], 2);
  EXPECT_NE(Log().find("tunable changed; applied"), std::string::npos);
  auto train = Marks("tunable", "train");
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(train[0]["env"].value("VERSION", ""), "v2");
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// Removing a job's document while its train worker runs deletes the job and stops its workers
// (train and inference); the other job in the file is untouched.
TEST_F(StandaloneTest, ManifestRemovalDeletesJobAndKillsWorkers) {
  WriteManifest("common.yaml", CommonYaml());
  const std::string keeper = JobYaml({.name = "keeper", .threshold = "1000"});
  WriteManifest("jobs.yaml", JobYaml({.name = "doomed", .train_mode = "sleep"}) + "---\n" + keeper);
  StartLc();
  ASSERT_TRUE(WaitJob("doomed", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto sleeping = WaitMarks("doomed", "sleep", 1);
  ASSERT_EQ(sleeping.size(), 1u);
  const pid_t train_pid = sleeping[0]["pid"].get<pid_t>();
  auto infer = WaitMarks("doomed", "infer", 1);
  ASSERT_EQ(infer.size(), 1u);
  const pid_t infer_pid = infer[0]["pid"].get<pid_t>();
  auto keeper_infer = WaitMarks("keeper", "infer", 1);
  ASSERT_EQ(keeper_infer.size(), 1u);
  ASSERT_TRUE(WaitJob("doomed", "Train/Running",
                      [](const Json& j) { return j["stage"] == "Train/Running"; }));
  ASSERT_TRUE(Alive(train_pid));

  WriteManifest("jobs.yaml", keeper);
  ASSERT_TRUE(WaitFor("doomed gone from /status", [&] {
    auto st = Status();
    if (!st) return false;
    bool doomed = false, kept = false;
    for (const auto& j : (*st)["jobs"]) {
      doomed |= j["name"] == "doomed";
      kept |= j["name"] == "keeper";
    }
    return !doomed && kept;
  }));
  EXPECT_TRUE(WaitGone(train_pid, seconds(10))) << "train worker " << train_pid << " survived";
  EXPECT_TRUE(WaitGone(infer_pid, seconds(10))) << "inference worker " << infer_pid << " survived";
  EXPECT_NE(Log().find("doomed removed; job deleted"), std::string::npos);
  EXPECT_TRUE(Alive(keeper_infer[0]["pid"].get<pid_t>())) << "the other job's worker was stopped";
  // The deletion is durable: a restart does not bring the job back.
  EXPECT_EQ(StopLc(seconds(20)), 0);
  StartLc();
  ASSERT_TRUE(WaitJob("keeper", "loaded after restart", [](const Json&) { return true; }));
  EXPECT_FALSE(JobStatus("doomed"));
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// Removing the job of a train worker that ignores SIGTERM (and has a grandchild): SIGKILL follows
// and no process of the worker remains.
TEST_F(StandaloneTest, ManifestRemovalKillsWorkerIgnoringSigterm) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "mule", .train_mode = "stubborn"}));
  StartLc();
  ASSERT_TRUE(WaitJob("mule", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto m = WaitMarks("mule", "stubborn", 1);
  ASSERT_EQ(m.size(), 1u);
  const pid_t worker = m[0]["pid"].get<pid_t>(), child = m[0]["child_pid"].get<pid_t>();
  ASSERT_TRUE(Alive(worker));
  ASSERT_TRUE(Alive(child));
  stdfs::remove(mdir + "/job.yaml");
  ASSERT_TRUE(WaitFor("mule gone from /status", [&] {
    auto st = Status();
    return st && (*st)["jobs"].empty();
  }));
  EXPECT_TRUE(WaitGone(worker, seconds(10))) << "worker " << worker << " survived the deletion";
  EXPECT_TRUE(WaitGone(child, seconds(10))) << "grandchild " << child << " survived the deletion";
  EXPECT_TRUE(AlivePids("mule", "infer").empty());
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// Every deploy replaces the inference worker (exactly one runs, on the newest model), and deleting
// the job after deploys stops the one that runs.
TEST_F(StandaloneTest, InferenceWorkerReplacedOnEachDeployAndStoppedOnDelete) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "served"}));
  StartLc();
  ASSERT_TRUE(WaitJob("served", "loaded", [](const Json&) { return true; }));
  for (int round = 1; round <= 2; ++round) {
    FeedRound();
    ASSERT_TRUE(
        WaitJob("served", "round " + std::to_string(round) + " deployed", [&](const Json& j) {
          return j["decisions"] == round && j["stage"] == "Train/Waiting" && j["work"] == "none";
        }));
    ASSERT_EQ(WaitMarks("served", "infer", round + 1).size(), static_cast<size_t>(round + 1));
  }
  auto infer = Marks("served", "infer");
  ASSERT_EQ(infer.size(), 3u);
  EXPECT_EQ(infer[2]["model_content"], ReadFile(tmp + "/out/served/train/2/model.bin"));
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(WaitGone(infer[i]["pid"].get<pid_t>(), seconds(10)))
        << "inference worker #" << i << " still runs after a later deploy";
  }
  const pid_t current = infer[2]["pid"].get<pid_t>();
  ASSERT_TRUE(Alive(current));

  // Remove the job (the file keeps only the Dataset and Models).
  stdfs::remove(mdir + "/job.yaml");
  ASSERT_TRUE(WaitFor("served gone from /status", [&] {
    auto st = Status();
    return st && (*st)["jobs"].empty();
  }));
  EXPECT_TRUE(WaitGone(current, seconds(10)))
      << "the deleted job's inference worker " << current << " still runs";
  for (const Json& m : infer) {
    const pid_t p = m["pid"].get<pid_t>();
    EXPECT_TRUE(WaitGone(p, seconds(5)))
        << "an inference worker (" << p << ") of the deleted job still runs";
  }
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// SIGTERM to the daemon while a worker ignores SIGTERM (and has a grandchild): the daemon exits 0
// within its grace period and no worker process remains.
TEST_F(StandaloneTest, ShutdownKillsWorkers) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "stubborn", .train_mode = "stubborn"}));
  StartLc();
  ASSERT_TRUE(WaitJob("stubborn", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto m = WaitMarks("stubborn", "stubborn", 1);
  ASSERT_EQ(m.size(), 1u);
  auto infer = WaitMarks("stubborn", "infer", 1);
  ASSERT_EQ(infer.size(), 1u);
  const std::vector<pid_t> pids{m[0]["pid"].get<pid_t>(), m[0]["child_pid"].get<pid_t>(),
                                infer[0]["pid"].get<pid_t>()};
  for (pid_t p : pids) ASSERT_TRUE(Alive(p)) << p;

  milliseconds elapsed{0};
  const int rc = StopLc(seconds(15), &elapsed);
  EXPECT_EQ(rc, 0);
  // SIGTERM, 3 s grace, SIGKILL: well under 10 s.
  EXPECT_LT(elapsed.count(), 10000) << "shutdown took " << elapsed.count() << " ms";
  for (pid_t p : pids) EXPECT_FALSE(Alive(p)) << "process " << p << " outlived the daemon";
  const std::string log = Log();
  EXPECT_NE(log.find("stopping workers and shutting down"), std::string::npos) << log;
}

// [D:I21.8]b: SIGHUP, SIGUSR1/2, SIGQUIT and SIGALRM killed the daemon with no log line and
// left the workers running. Now SIGTERM, SIGINT, SIGQUIT and SIGHUP each stop it cleanly (a line
// naming the signal, the workers stopped, exit 0) and the default-fatal signals that are no
// error are logged and ignored (SIGPIPE silently), with the daemon and its worker still running.
TEST_F(StandaloneTest, StopSignalsStopTheWorkersAndTheOthersAreIgnored) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "sig"}));
  const std::pair<int, const char*> kStop[] = {
      {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGHUP, "SIGHUP"}};
  const std::pair<int, const char*> kIgnored[] = {
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGALRM, "SIGALRM"}, {SIGVTALRM, "SIGVTALRM"},
      {SIGPROF, "SIGPROF"}, {SIGPOLL, "SIGPOLL"}, {SIGPWR, "SIGPWR"}};
  size_t started = 0;
  for (const auto& [sig, name] : kStop) {
    SCOPED_TRACE(name);
    ASSERT_NO_FATAL_FAILURE(StartLc());
    auto infer = WaitMarks("sig", "infer", ++started);
    ASSERT_EQ(infer.size(), started);
    const pid_t worker = infer.back()["pid"].get<pid_t>();
    ASSERT_TRUE(Alive(worker));
    if (sig == SIGTERM) {
      for (const auto& [ignored, ignored_name] : kIgnored) ASSERT_EQ(::kill(lc->pid(), ignored), 0);
      ASSERT_EQ(::kill(lc->pid(), SIGPIPE), 0);
      ASSERT_TRUE(WaitFor("the ignored signals logged", [&] {
        return CountOccurrences(Log(), " ignored (SIGTERM, SIGINT, SIGQUIT or SIGHUP stop") ==
               static_cast<int>(std::size(kIgnored));
      }));
      for (const auto& [ignored, ignored_name] : kIgnored) {
        EXPECT_NE(Log().find(std::string("signal ") + ignored_name + " (" +
                             std::to_string(ignored) + ") ignored"),
                  std::string::npos)
            << ignored_name;
      }
      EXPECT_TRUE(Alive(lc->pid()));
      EXPECT_TRUE(Status()) << "the daemon answers after the ignored signals";
      EXPECT_TRUE(Alive(worker));
    }
    ASSERT_EQ(::kill(lc->pid(), sig), 0);
    EXPECT_EQ(WaitExit(seconds(20)), 0);
    const std::string log = Log();
    EXPECT_NE(
        log.find(std::string("signal ") + name + " (" + std::to_string(sig) + "): shutting down"),
        std::string::npos)
        << log;
    EXPECT_NE(log.find("stopping workers and shutting down"), std::string::npos) << log;
    EXPECT_TRUE(WaitGone(worker, seconds(5))) << "worker " << worker << " outlived the daemon";
  }
}

// Stop after round 1 is deployed, restart on the same --db: /status shows the same round and
// decisions, the inference worker serves again, and round 2 proceeds from round 1's model.
TEST_F(StandaloneTest, RestartResumes) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "durable"}));
  StartLc();
  ASSERT_TRUE(WaitJob("durable", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto r1 = WaitJob("durable", "round 1 deployed", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none" &&
           !j["deployedUrl"].get<std::string>().empty();
  });
  ASSERT_TRUE(r1);
  ASSERT_EQ(WaitMarks("durable", "infer", 2).size(), 2u);  // restarted after the deploy
  ASSERT_EQ(StopLc(seconds(20)), 0);
  for (const Json& m : Marks("durable", "infer")) {
    EXPECT_FALSE(Alive(m["pid"].get<pid_t>())) << "inference worker outlived the daemon";
  }

  StartLc();
  auto resumed = WaitJob("durable", "resumed", [](const Json&) { return true; });
  ASSERT_TRUE(resumed);
  for (const char* k : {"stage", "round", "decisions", "decidedRound", "lastDecision",
                        "deployedUrl", "deployedAt", "samplesSeen", "lastEval"}) {
    EXPECT_EQ((*resumed)[k], (*r1)[k]) << k;
  }
  EXPECT_NE(Log().find("resumed"), std::string::npos);
  // In cluster mode the inference pod survives an LC restart; standalone starts it again.
  auto infer = WaitMarks("durable", "infer", 3, seconds(15));
  EXPECT_EQ(infer.size(), 3u) << "no inference worker runs after the restart";
  if (infer.size() >= 3) {
    EXPECT_EQ(infer[2]["model_content"], ReadFile(tmp + "/out/durable/train/1/model.bin"));
  }

  FeedRound();
  auto r2 = WaitJob("durable", "round 2 decided", [](const Json& j) {
    return j["decisions"] == 2 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  });
  ASSERT_TRUE(r2);
  EXPECT_EQ((*r2)["round"], 3);
  EXPECT_EQ((*r2)["decidedRound"], 2);
  auto train = Marks("durable", "train");
  ASSERT_EQ(train.size(), 2u);
  // Round 2 trains from round 1's output, on round 2's samples only.
  EXPECT_EQ(train[1]["env"].value("BASE_MODEL_URL", ""), tmp + "/out/durable/train/1/model.bin");
  EXPECT_EQ(train[1]["env"].value("MODEL_URL", ""), tmp + "/out/durable/train/2");
  const std::string d1 = ReadFile(tmp + "/out/durable/data/train/1/data.txt");
  const std::string d2 = ReadFile(tmp + "/out/durable/data/train/2/data.txt");
  EXPECT_FALSE(d2.empty());
  EXPECT_EQ(d1.find(d2.substr(0, d2.find('\n'))), std::string::npos) << "round 2 re-used samples";
  EXPECT_EQ(ReadFile(deploy_model), ReadFile(tmp + "/out/durable/train/2/model.bin"));
  // After round 2's deploy exactly one inference worker serves, on round 2's model.
  ASSERT_TRUE(WaitFor("one inference worker on round 2's model", [&] {
    auto m = Marks("durable", "infer");
    return !m.empty() &&
           m.back()["model_content"] == ReadFile(tmp + "/out/durable/train/2/model.bin");
  }));
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(AlivePids("durable", "infer").size(), 1u);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A daemon stopped while a train worker runs: on restart the stage has failed (its worker is
// gone) and the job waits for the next train trigger, as after a lost pod.
TEST_F(StandaloneTest, RestartDuringTrainFailsStage) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "interrupted", .train_mode = "sleep"}));
  StartLc();
  ASSERT_TRUE(WaitJob("interrupted", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto m = WaitMarks("interrupted", "sleep", 1);
  ASSERT_EQ(m.size(), 1u);
  ASSERT_TRUE(WaitJob("interrupted", "Train/Running",
                      [](const Json& j) { return j["stage"] == "Train/Running"; }));
  ASSERT_EQ(StopLc(seconds(20)), 0);
  EXPECT_FALSE(Alive(m[0]["pid"].get<pid_t>()));

  // Fix the worker, then restart.
  WriteManifest("job.yaml", JobYaml({.name = "interrupted"}));
  StartLc();
  ASSERT_TRUE(WaitTrainWaiting("interrupted", 2));
  {
    auto c = Conditions("interrupted");
    EXPECT_TRUE(EndsWith(c, {"Train/Running", "Train/Failed", "Train/Waiting"}))
        << ::testing::PrintToString(c);
  }
  FeedRound();
  auto j = WaitJob("interrupted", "round 2 decided",
                   [](const Json& j) { return j["decisions"] == 1 && j["decidedRound"] == 2; });
  ASSERT_TRUE(j);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// The job's Dataset is not defined: the job waits with a note naming the Dataset; adding it to the
// manifests lets the job ingest and proceed.
TEST_F(StandaloneTest, MissingReferencedDatasetWaits) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "orphan", .dataset = "late-ds"}));
  const std::string late_index = tmp + "/data/late.txt";
  WriteFile(late_index, "img/a.png 1\nimg/b.png 2\n");
  StartLc();
  auto j = WaitJob("orphan", "a note naming the missing Dataset", [](const Json& j) {
    return j["lastError"].get<std::string>().find("Dataset default/late-ds") != std::string::npos;
  });
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["stage"], "Train/Waiting");
  EXPECT_EQ((*j)["round"], 1);
  for (int i = 0; i < 20; ++i) AppendFile(late_index, "img/late" + std::to_string(i) + ".png 3\n");
  WriteManifest(
      "common.yaml",
      CommonYaml("---\n" + Doc("Dataset", "late-ds", "  url: ../data/late.txt\n  format: txt\n")));
  auto done = WaitJob("orphan", "round 1 decided after the Dataset appeared",
                      [](const Json& j) { return j["decisions"] == 1; });
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["samplesSeen"], 22);
  EXPECT_EQ((*done)["lastError"], "");
  auto train = Marks("orphan", "train");
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(train[0]["env"].value("ORIGINAL_DATASET_URL", ""), late_index);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// -f naming one file: an edit to it applies, and removing the job's document deletes the job.
TEST_F(StandaloneTest, SingleFileModeAppliesEditsAndRemoval) {
  manifest_arg = mdir + "/all.yaml";
  WriteManifest("all.yaml",
                CommonYaml() + "---\n" + JobYaml({.name = "solo", .threshold = "1000"}));
  StartLc();
  ASSERT_TRUE(WaitJob("solo", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_TRUE(WaitJob("solo", "samples counted",
                      [](const Json& j) { return j["samplesWaiting"].get<int64_t>() >= 6; }));
  EXPECT_EQ((*JobStatus("solo"))["round"], 1);
  WriteManifest("all.yaml", CommonYaml() + "---\n" + JobYaml({.name = "solo", .threshold = "5"}));
  ASSERT_TRUE(WaitJob("solo", "round 1 decided after the edit", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  }));
  auto infer = Marks("solo", "infer");
  ASSERT_FALSE(infer.empty());
  WriteManifest("all.yaml", CommonYaml());
  ASSERT_TRUE(WaitFor("solo gone from /status", [&] {
    auto st = Status();
    return st && (*st)["jobs"].empty();
  }));
  for (const Json& m : Marks("solo", "infer")) {
    EXPECT_TRUE(WaitGone(m["pid"].get<pid_t>(), seconds(10))) << m["pid"];
  }
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A running job edited into an invalid document keeps its previous version (the log names the
// field); the next valid edit applies.
TEST_F(StandaloneTest, BadEditKeepsPreviousVersion) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "edited", .threshold = "1000"}));
  StartLc();
  ASSERT_TRUE(WaitJob("edited", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_TRUE(WaitJob("edited", "samples counted",
                      [](const Json& j) { return j["samplesWaiting"].get<int64_t>() >= 6; }));
  WriteManifest("job.yaml", JobYaml({.name = "edited", .threshold = "5", .train_prob = "\"abc\""}));
  ASSERT_TRUE(WaitFor("the bad edit named in the log", [&] {
    return Log().find(
               "job.yaml (document 1, IncrementalLearningJob default/edited): "
               "spec.dataset.trainProb") != std::string::npos;
  }));
  std::this_thread::sleep_for(seconds(3));
  auto j = JobStatus("edited");
  ASSERT_TRUE(j) << "a bad edit deleted the job";
  EXPECT_EQ((*j)["round"], 1) << "the bad version (threshold 5) was applied";
  EXPECT_TRUE(Marks("edited", "train").empty());
  EXPECT_EQ(AlivePids("edited", "infer").size(), 1u) << "the job's inference worker was stopped";
  WriteManifest("job.yaml", JobYaml({.name = "edited", .threshold = "5"}));
  ASSERT_TRUE(WaitJob("edited", "round 1 decided after the fix",
                      [](const Json& j) { return j["decisions"] == 1; }));
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// One manifest file stays broken; removing a document from another, valid, file still deletes
// that job ("a bad document is skipped, the others run").
TEST_F(StandaloneTest, RemovalAppliesWhileAnotherFileIsBroken) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("broken.yaml", "kind: [unclosed\n");
  const std::string stay = JobYaml({.name = "stay", .threshold = "1000"});
  WriteManifest("jobs.yaml", stay + "---\n" + JobYaml({.name = "go", .threshold = "1000"}));
  StartLc();
  ASSERT_TRUE(WaitJob("go", "loaded", [](const Json&) { return true; }));
  auto infer = WaitMarks("go", "infer", 1);
  ASSERT_EQ(infer.size(), 1u);
  WriteManifest("jobs.yaml", stay);
  bool gone = WaitFor(
      "go gone from /status",
      [&] {
        auto st = Status();
        if (!st) return false;
        for (const auto& j : (*st)["jobs"]) {
          if (j["name"] == "go") return false;
        }
        return true;
      },
      seconds(15));
  EXPECT_TRUE(gone) << "removing a document is ignored while any other manifest file has an error";
  EXPECT_TRUE(WaitGone(infer[0]["pid"].get<pid_t>(), seconds(5)))
      << "the removed job's inference worker still runs";
  EXPECT_TRUE(JobStatus("stay"));
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A job whose document was removed while the daemon was stopped is gone after the restart (the
// manifests are the desired state, as the API server's objects are for the GM).
TEST_F(StandaloneTest, JobRemovedWhileStoppedIsGoneAfterRestart) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("jobs.yaml", JobYaml({.name = "kept"}) + "---\n" + JobYaml({.name = "dropped"}));
  StartLc();
  ASSERT_TRUE(WaitJob("dropped", "loaded", [](const Json&) { return true; }));
  ASSERT_TRUE(WaitJob("kept", "loaded", [](const Json&) { return true; }));
  ASSERT_EQ(StopLc(seconds(20)), 0);
  WriteManifest("jobs.yaml", JobYaml({.name = "kept"}));
  StartLc();
  ASSERT_TRUE(WaitJob("kept", "loaded after restart", [](const Json&) { return true; }));
  std::this_thread::sleep_for(seconds(3));  // one manifest poll and more
  EXPECT_FALSE(JobStatus("dropped")) << "/status still lists the job removed while stopped";
  // It must not take samples and report rounds nobody runs.
  FeedRound();
  std::this_thread::sleep_for(seconds(3));
  auto d = JobStatus("dropped");
  if (d) {
    EXPECT_EQ((*d)["round"], 1) << "the removed job started a round";
  }
  EXPECT_TRUE(Marks("dropped", "train").empty());
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// A Dataset whose spec.credentialName names a Secret that is not in the manifests: the log names
// the Dataset and the missing Secret, the Dataset is sent without the credential and the job runs
// on it; adding the Secret sends the Dataset again with it, removing it sends it again without.
// No Secret value reaches the log, the database or any other file the daemon writes.
TEST_F(StandaloneTest, CredentialSecretMissingThenAddedThenRemoved) {
  const std::string ds_with_credential =
      Doc("Dataset", "ds",
          "  url: ../data/index.txt\n  format: txt\n  nodeName: edge\n  credentialName: creds\n");
  const std::string models =
      Doc("Model", "base-model", "  url: ../models/base/model.bin\n  format: bin\n") + "---\n" +
      Doc("Model", "deploy-model", "  url: ../models/deploy/model.bin\n  format: bin\n");
  WriteManifest("common.yaml", ds_with_credential + "---\n" + models);
  WriteManifest("job.yaml", JobYaml({.name = "cred"}));
  StartLc();
  ASSERT_TRUE(WaitJob("cred", "loaded", [](const Json&) { return true; }));
  const std::string missing =
      "Dataset default/ds: spec.credentialName: Secret default/creds not found; sent without the "
      "sedna.io/credential annotation";
  ASSERT_TRUE(WaitFor("the missing Secret in the log",
                      [&] { return Log().find(missing) != std::string::npos; }));
  EXPECT_EQ(CountOccurrences(Log(), missing), 1) << "logged once, not on every send";

  // The job runs on the Dataset sent without the credential.
  FeedRound();
  ASSERT_TRUE(WaitJob("cred", "round 1 decided", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  }));

  // ACCESS_KEY_ID as stringData, SECRET_ACCESS_KEY as data (base64 of "SENTINEL-SECRET-2").
  WriteManifest("secret.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  annotations:\n"
                "    s3-endpoint: minio.local:9000\n    s3-usehttps: \"0\"\n"
                "stringData:\n  ACCESS_KEY_ID: AKIA-SENTINEL-1\n"
                "data:\n  SECRET_ACCESS_KEY: U0VOVElORUwtU0VDUkVULTI=\n");
  ASSERT_TRUE(WaitFor("the Dataset sent again with the Secret's credential", [&] {
    const std::string log = Log();
    return log.find("default/dataset/ds sent again: its Secret default/creds changed") !=
               std::string::npos &&
           log.find("Dataset default/ds: Secret default/creds found; sent with its credential") !=
               std::string::npos;
  }));
  EXPECT_EQ(Log().find("default/incrementallearningjob/cred sent again"), std::string::npos)
      << "the job does not name the Secret";
  FeedRound();
  ASSERT_TRUE(WaitJob("cred", "round 2 decided with the credential", [](const Json& j) {
    return j["decisions"] == 2 && j["stage"] == "Train/Waiting" && j["work"] == "none";
  }));

  stdfs::remove(mdir + "/secret.yaml");
  ASSERT_TRUE(WaitFor("the missing Secret in the log again",
                      [&] { return CountOccurrences(Log(), missing) == 2; }));
  EXPECT_NE(Log().find("Secret default/creds removed"), std::string::npos);
  EXPECT_EQ(StopLc(seconds(20)), 0);

  // No value anywhere the daemon writes (the database, its WAL, worker logs and marks, its log).
  int files = 0;
  for (auto it = stdfs::recursive_directory_iterator(tmp);
       it != stdfs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file() || it->path().parent_path() == mdir) continue;
    ++files;
    const std::string content = ReadFile(it->path().string());
    for (const char* value : {"AKIA-SENTINEL-1", "SENTINEL-SECRET-2", "U0VOVElORUwtU0VDUkVULTI="}) {
      EXPECT_EQ(content.find(value), std::string::npos) << value << " in " << it->path();
    }
  }
  EXPECT_GT(files, 3);
  EXPECT_TRUE(stdfs::exists(db));
}

// Standalone mode against a real S3 server (moto_server, SigV4 signature checking on).
class StandaloneS3Test : public StandaloneTest {
 protected:
  static void SetUpTestSuite() {
    moto_ = new MotoServer();
    problem_ = moto_->Start(&skip_);
  }
  static void TearDownTestSuite() {
    moto_->Stop();
    if (problem_.empty()) moto_->RemoveLog();
    delete moto_;
    moto_ = nullptr;
  }
  void SetUp() override {
    if (skip_) GTEST_SKIP() << problem_;
    ASSERT_TRUE(problem_.empty()) << problem_;
    StandaloneTest::SetUp();
  }

  static inline MotoServer* moto_ = nullptr;
  static inline std::string problem_;
  static inline bool skip_ = false;
};

// sha256sum of `value`, through a file (no shell quoting); the file is removed.
std::string Sha256Hex(const std::string& value, const std::string& dir) {
  const std::string file = dir + "/.sha256-input";
  WriteFile(file, value);
  FILE* f = ::popen(("sha256sum " + file).c_str(), "r");
  std::string out;
  if (f) {
    char buf[256] = {};
    if (std::fgets(buf, sizeof buf, f)) out = std::string(buf).substr(0, 64);
    ::pclose(f);
  }
  stdfs::remove(file);
  return out;
}

// §P4.4/§P4.5 in standalone mode: a job whose outputDir is on S3 and whose credentialName names a
// Secret. The train and eval workers get the URLs unchanged and S3_ENDPOINT_URL ("http://" +
// s3-endpoint, s3-usehttps "0"), ACCESS_KEY_ID and SECRET_ACCESS_KEY exactly as Sedna's GM
// injects them; with them the train worker PUTs its model to S3 itself (signature checked), and
// the round completes through the S3 copy to the deploy model. The inference worker (its Model is
// a host path, no Secret) gets none. The workers print only hashes of the keys; no key reaches
// the daemon's log, its database or any file under the test directory.
TEST_F(StandaloneS3Test, WorkersGetTheS3EnvOfTheJobSecret) {
  ASSERT_TRUE(moto_->CreateBucket("kubeedge").ok());
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("secret.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s3creds\n"
                "  annotations:\n    s3-endpoint: " +
                    moto_->endpoint() + "\n    s3-usehttps: \"0\"\nstringData:\n  ACCESS_KEY_ID: " +
                    Q(moto_->access_key()) + "\n  SECRET_ACCESS_KEY: " + Q(moto_->secret_key()) +
                    "\n");
  WriteManifest("job.yaml", JobYaml({.name = "s3env",
                                     .output_dir = "s3://kubeedge/out/s3env",
                                     .credential_name = "s3creds"}));
  StartLc();
  auto infer0 = WaitMarks("s3env", "infer", 1);
  ASSERT_EQ(infer0.size(), 1u);
  for (const char* k : {"S3_ENDPOINT_URL", "ACCESS_KEY_ID", "SECRET_ACCESS_KEY"}) {
    EXPECT_FALSE(infer0[0]["env"].contains(k)) << k << ": the deploy Model is a host path";
  }

  FeedRound();
  auto done = WaitJob("s3env", "round 1 deployed and back at Train/Waiting", [](const Json& j) {
    return j["decisions"] == 1 && j["stage"] == "Train/Waiting" && j["work"] == "none" &&
           !j["deployedUrl"].get<std::string>().empty();
  });
  ASSERT_TRUE(done);

  const std::string endpoint_url = "http://" + moto_->endpoint();
  const std::string access_hash = "sha256:" + Sha256Hex(moto_->access_key(), tmp);
  const std::string secret_hash = "sha256:" + Sha256Hex(moto_->secret_key(), tmp);
  ASSERT_EQ(secret_hash.size(), 7u + 64u);
  auto train = Marks("s3env", "train");
  auto eval = Marks("s3env", "eval");
  ASSERT_EQ(train.size(), 1u);
  ASSERT_EQ(eval.size(), 1u);
  for (const Json* m : {&train[0], &eval[0]}) {
    const Json& env = (*m)["env"];
    EXPECT_EQ(env.value("S3_ENDPOINT_URL", ""), endpoint_url) << (*m)["mode"];
    EXPECT_EQ(env.value("ACCESS_KEY_ID", ""), access_hash) << (*m)["mode"];
    EXPECT_EQ(env.value("SECRET_ACCESS_KEY", ""), secret_hash) << (*m)["mode"];
  }
  // URLs unchanged (no storage initializer in standalone mode).
  EXPECT_EQ(train[0]["env"].value("MODEL_URL", ""), "s3://kubeedge/out/s3env/train/1");
  EXPECT_EQ(train[0]["env"].value("TRAIN_DATASET_URL", ""),
            "s3://kubeedge/out/s3env/data/train/1/data.txt");
  EXPECT_EQ(train[0]["env"].value("BASE_MODEL_URL", ""), base_model);
  const std::string trained_url = "s3://kubeedge/out/s3env/train/1/model.bin";
  EXPECT_EQ(train[0].value("model", ""), trained_url);
  EXPECT_EQ(eval[0]["env"].value("MODEL_URLS", ""), trained_url + ";" + deploy_model);

  // The model the train worker uploaded with the injected env, read back with the server's key.
  s3::Client client(moto_->credentials());
  auto url = s3::ParseS3Url(trained_url);
  ASSERT_TRUE(url.ok()) << url.message();
  std::string got;
  sedna::Status get = client.Get(*url, 0, -1, [&](std::string_view chunk) {
    got.append(chunk);
    return sedna::Status::Ok();
  });
  ASSERT_TRUE(get.ok()) << get.message();
  const std::string trained = "trained s3://kubeedge/out/s3env/train/1 from [BASE-MODEL]";
  EXPECT_EQ(got, trained);
  EXPECT_EQ((*done)["deployedUrl"], trained_url);
  EXPECT_EQ(ReadFile(deploy_model), trained);

  const std::string train_log = ReadFile(WorkerLogs("s3env", "train-worker-").at(0));
  EXPECT_NE(train_log.find("S3 env: S3_ENDPOINT_URL=" + endpoint_url +
                           " ACCESS_KEY_ID=" + access_hash + " SECRET_ACCESS_KEY=" + secret_hash),
            std::string::npos)
      << train_log;
  EXPECT_EQ(Log().find("s3:// URL"), std::string::npos)
      << "no warning: the Dataset's URLs under the job's outputDir take the job's Secret";
  EXPECT_NE(Log().find("gets S3_ENDPOINT_URL=" + endpoint_url +
                       ", ACCESS_KEY_ID and SECRET_ACCESS_KEY of Secret default/s3creds"),
            std::string::npos);
  EXPECT_EQ(StopLc(seconds(20)), 0);

  int files = 0;
  for (auto it = stdfs::recursive_directory_iterator(tmp);
       it != stdfs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file() || it->path().parent_path() == mdir) continue;
    ++files;
    const std::string content = ReadFile(it->path().string());
    for (const std::string& value : {moto_->access_key(), moto_->secret_key()}) {
      EXPECT_EQ(content.find(value), std::string::npos) << "a key in " << it->path();
    }
  }
  EXPECT_GT(files, 3);
}

// Start-up errors name their cause and exit 2: no -f, a bad --worker-timeout, manifests with
// nothing usable (the message names the file, the document and the field).
TEST_F(StandaloneTest, StartupErrorsNameTheCause) {
  SpawnLc({"standalone", "--db", db, "--status-port", "0", "--bind-port", "0"});
  EXPECT_EQ(WaitExit(seconds(10)), 2);
  EXPECT_NE(Log().find("-f <manifest file or directory> is required"), std::string::npos) << Log();

  SpawnLc({"standalone", "-f", mdir, "--worker-timeout", "soon", "--db", db, "--status-port", "0",
           "--bind-port", "0"});
  EXPECT_EQ(WaitExit(seconds(10)), 2);
  EXPECT_NE(Log().find("--worker-timeout: \"soon\""), std::string::npos) << Log();

  WriteManifest("only.yaml", Doc("Dataset", "ds", "  url: 5\n  format: txt\n"));
  SpawnLc({"standalone", "-f", mdir, "--db", db, "--status-port", "0", "--bind-port", "0"});
  EXPECT_EQ(WaitExit(seconds(10)), 2);
  const std::string log = Log();
  EXPECT_NE(log.find("only.yaml (document 1, Dataset default/ds): spec.url"), std::string::npos)
      << log;
  EXPECT_NE(log.find("no usable"), std::string::npos) << log;

  SpawnLc({"standalone", "-f", tmp + "/does-not-exist", "--db", db, "--status-port", "0",
           "--bind-port", "0"});
  EXPECT_EQ(WaitExit(seconds(10)), 2);
  EXPECT_NE(Log().find(tmp + "/does-not-exist"), std::string::npos) << Log();
}

// [D:I15.1], standalone: only the worker the LC started for a stage may report for it. A
// report under a made-up name, and one from the train worker with kind eval, are answered 400
// naming the field, and move nothing; the train worker's own report is taken.
TEST_F(StandaloneTest, OnlyTheStartedWorkerMayReport) {
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "gated", .train_mode = "sleep"}));
  StartLc();
  ASSERT_TRUE(WaitJob("gated", "loaded", [](const Json&) { return true; }));
  FeedRound();
  auto m = WaitMarks("gated", "sleep", 1);
  ASSERT_EQ(m.size(), 1u);
  ASSERT_TRUE(WaitJob("gated", "Train/Running",
                      [](const Json& j) { return j["stage"] == "Train/Running"; }));
  const std::string worker = m[0]["env"].value("WORKER_NAME", "");
  const std::string model_dir = m[0]["env"].value("MODEL_URL", "");
  ASSERT_EQ(worker.rfind("train-worker-", 0), 0u) << worker;
  stdfs::create_directories(model_dir);
  WriteFile(model_dir + "/fake.bin", "FAKE");
  WriteFile(model_dir + "/model.bin", "REAL");
  auto post = [&](const std::string& name, const std::string& kind, const std::string& model) {
    Json body{{"name", name},
              {"namespace", "default"},
              {"ownerName", "gated"},
              {"ownerKind", "incrementallearningjob"},
              {"kind", kind},
              {"status", "completed"},
              {"results", Json::array({Json{{"format", "bin"},
                                            {"url", model_dir + "/" + model},
                                            {"metrics", {{"accuracy", 0.9}}}}})}};
    return HttpRequest(bind_port, "POST", "/sedna/workers/" + name + "/info", body.dump());
  };

  HttpResult forged = post("train-worker-zzzzz", "train", "fake.bin");
  EXPECT_EQ(forged.status, 400) << forged.raw;
  EXPECT_NE(forged.body.find("is not a worker this LC started for IncrementalLearningJob "
                             "default/gated (stage train)"),
            std::string::npos)
      << forged.body;
  EXPECT_NE(forged.body.find("train-worker-zzzzz"), std::string::npos) << forged.body;

  HttpResult wrong_kind = post(worker, "eval", "fake.bin");
  EXPECT_EQ(wrong_kind.status, 400) << wrong_kind.raw;
  EXPECT_NE(wrong_kind.body.find("it was started for stage train"), std::string::npos)
      << wrong_kind.body;

  // The same report under the started worker's name is taken: reports are handled in order, so
  // the eval worker's models show which train report moved the job.
  HttpResult real = post(worker, "train", "model.bin");
  EXPECT_EQ(real.status, 200) << real.raw;
  auto eval = WaitMarks("gated", "eval", 1);
  ASSERT_EQ(eval.size(), 1u);
  EXPECT_EQ(eval[0]["env"].value("MODEL_URLS", "").rfind(model_dir + "/model.bin;", 0), 0u)
      << eval[0]["env"].value("MODEL_URLS", "");
  EXPECT_NE(Log().find("report refused: name: \"train-worker-zzzzz\""), std::string::npos);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// [D:I15.7]: a root LC runs a worker with its template's runAsUser, runAsGroup and
// supplementalGroups (the container's securityContext over the pod's); the log, opened by the LC,
// still works. A field standalone cannot honour is warned about once per job, naming it, although
// the inference worker is started twice (once more after the deploy).
TEST_F(StandaloneTest, WorkerRunsWithItsSecurityContextIds) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root LC changes a worker's uid";
  // uid 65534 must reach the marks (and worker.py, the report module and the deploy model).
  stdfs::permissions(tmp, stdfs::perms::owner_all | stdfs::perms::group_exec |
                              stdfs::perms::group_read | stdfs::perms::others_exec |
                              stdfs::perms::others_read);
  stdfs::create_directories(tmp + "/marks/ids");
  stdfs::permissions(tmp + "/marks/ids", stdfs::perms::all);
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml", JobYaml({.name = "ids",
                                     .infer_pod_yaml = "        securityContext:\n"
                                                       "          runAsUser: 1000\n"
                                                       "          runAsGroup: 65533\n"
                                                       "          supplementalGroups: [4242]\n"
                                                       "          fsGroup: 2000\n",
                                     .infer_container_yaml = "            securityContext:\n"
                                                             "              runAsUser: 65534\n"
                                                             "              capabilities:\n"
                                                             "                drop: [ALL]\n"}));
  StartLc();
  auto first = WaitMarks("ids", "infer", 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["uid"], 65534);
  EXPECT_EQ(first[0]["gid"], 65533);
  EXPECT_EQ(first[0]["groups"], Json::array({4242}));
  EXPECT_EQ(first[0]["model_content"], "OLD-DEPLOYED-MODEL");
  FeedRound();
  auto infer = WaitMarks("ids", "infer", 2);
  ASSERT_EQ(infer.size(), 2u);
  EXPECT_EQ(infer[1]["uid"], 65534);
  auto logs = WorkerLogs("ids", "inferworker-");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(ReadFile(logs[0]).find("mode infer"), std::string::npos) << "the worker's log";
  // The train and eval workers have no securityContext: they run as the LC does.
  auto train = Marks("ids", "train");
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(train[0]["uid"], 0);
  const std::string log = Log();
  const std::string caps =
      "deploySpec.template.spec.containers[0].securityContext.capabilities "
      "is not honoured in standalone mode";
  const std::string fs_group = "deploySpec.template.spec.securityContext.fsGroup is not honoured";
  EXPECT_EQ(CountOccurrences(log, caps), 1) << log;
  EXPECT_EQ(CountOccurrences(log, fs_group), 1) << log;
  EXPECT_NE(log.find("inference worker inferworker-"), std::string::npos);
  EXPECT_NE(log.find(" started as uid 65534 gid 65533"), std::string::npos) << log;
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

// runAsNonRoot: true with no runAsUser, under a root LC (the "image default" is root): the train
// worker is not started, the stage fails, and the log names the job, the worker and the field.
TEST_F(StandaloneTest, RunAsNonRootRefusesARootWorker) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a non-root LC never runs a uid 0 worker";
  WriteManifest("common.yaml", CommonYaml());
  WriteManifest("job.yaml",
                JobYaml({.name = "nonroot",
                         .train_container_yaml = "            securityContext:\n"
                                                 "              runAsNonRoot: true\n"}));
  StartLc();
  ASSERT_TRUE(WaitJob("nonroot", "loaded", [](const Json&) { return true; }));
  FeedRound();
  ASSERT_TRUE(WaitTrainWaiting("nonroot", 2));
  {
    auto c = Conditions("nonroot");
    EXPECT_TRUE(EndsWith(c, {"Train/Failed", "Train/Waiting"})) << ::testing::PrintToString(c);
  }
  std::string line;
  ASSERT_TRUE(WaitFor("the refusal in the log", [&] {
    const std::string log = Log();
    const size_t p = log.find("nonroot: Train worker train-worker-");
    if (p == std::string::npos) return false;
    line = log.substr(p, log.find('\n', p) - p);
    return true;
  }));
  EXPECT_NE(line.find("not started: spec.trainSpec.template.spec.containers[0].securityContext."
                      "runAsNonRoot: true, but the worker would run as uid 0 (no runAsUser is set "
                      "and the LC runs as root)"),
            std::string::npos)
      << line;
  EXPECT_TRUE(Marks("nonroot", "train").empty()) << "the worker must not have run";
  EXPECT_TRUE(WorkerLogs("nonroot", "train-worker-").empty());
  EXPECT_EQ((*JobStatus("nonroot"))["decisions"], 0);
  EXPECT_EQ(StopLc(seconds(20)), 0);
}

}  // namespace
}  // namespace sedna::testing
