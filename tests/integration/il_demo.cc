// The cluster-mode demo: the real sedna-lc binary, a GM emulator that keeps job conditions like
// Sedna's GM (docs/protocol.md §P4), and real scikit-learn train/eval workers started as local
// processes with the GM's env contract (§P4.4). scikit-learn's digits are streamed into the dataset
// index in batches; every round is printed as it happens, then a summary table.
//
// Usage: il_demo <sedna-lc binary> <examples/incremental_learning/digits dir> [rounds]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "gm_emulator.h"
#include "lc_process.h"

using namespace sedna::testing;
using sedna::core::Stage;
using sedna::core::gm::PodPhase;
namespace stdfs = std::filesystem;

namespace {

auto g_start = std::chrono::steady_clock::now();

void Say(const std::string& s) {
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
  std::printf("[%6.1fs] %s\n", t, s.c_str());
  std::fflush(stdout);
}

pid_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& log) {
  std::vector<std::string> envs;
  envs.reserve(env.size());
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> a, e;
  std::vector<std::string> args = argv;
  for (auto& s : args) a.push_back(s.data());
  a.push_back(nullptr);
  for (auto& s : envs) e.push_back(s.data());
  e.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // no test sockets leak into the child
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("spawn " + args[0] + " failed");
  return pid;
}

int WaitPid(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

double Mean(const Json& list) {
  double s = 0;
  for (const auto& v : list) s += v.get<double>();
  return list.empty() ? 0 : s / list.size();
}

int CountLines(const std::string& path) {
  std::string s = ReadFile(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

struct RoundRow {
  int round = 0;
  int train_samples = 0, eval_samples = 0;
  double new_precision = 0, old_precision = 0;
  std::string decision;
};

Json Meta(const std::string& name) { return Json{{"name", name}, {"namespace", "default"}}; }

Json Template(const std::string& name) {
  return Json{{"spec", {{"containers", Json::array({{{"name", name}, {"image", "local"}}})}}}};
}

int Run(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: il_demo <sedna-lc> <digits example dir> [rounds]\n";
    return 2;
  }
  const std::string lc_bin = stdfs::absolute(argv[1]);
  const std::string ex = stdfs::absolute(argv[2]);
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  const std::string ws = MakeTempDir("sedna-demo-");
  const std::string python = "/usr/bin/python3";
  Say("workspace " + ws);
  if (int rc = WaitPid(Spawn({python, ex + "/make_dataset.py", ws}, {{"PATH", "/usr/bin:/bin"}},
                             ws + "/make_dataset.log"));
      rc != 0) {
    std::cerr << ReadFile(ws + "/make_dataset.log");
    return 1;
  }
  Say("dataset: scikit-learn digits written as " + ws + "/data/images/*.pgm");
  std::vector<std::string> stream;
  {
    std::istringstream in(ReadFile(ws + "/stream.txt"));
    for (std::string l; std::getline(in, l);) stream.push_back(l);
  }

  GmEmulator gm;
  const uint16_t port = FreePort();
  LcProcess lc(lc_bin,
               {{"GM_ADDRESS", gm.address()},
                {"NODENAME", "edge-node"},
                {"BIND_PORT", std::to_string(port)},
                {"ROOTFS_MOUNT_DIR", ""}},
               {"--db", ws + "/lc/database.db", "--status-port", "0"}, ws + "/sedna-lc.log");
  if (!gm.server().WaitForConnection(std::chrono::seconds(20))) {
    std::cerr << "sedna-lc did not connect:\n" << lc.Log();
    return 1;
  }
  Say("sedna-lc (pid " + std::to_string(lc.pid()) + ") connected to the GM emulator at " +
      gm.address() + "; worker API on 127.0.0.1:" + std::to_string(port));

  const std::string index = ws + "/data/train_data.txt";
  gm.Send("insert", Json{{"kind", "Dataset"},
                         {"apiVersion", "sedna.io/v1alpha1"},
                         {"metadata", Meta("digits-dataset")},
                         {"spec", {{"url", index}, {"format", "txt"}, {"nodeName", "edge-node"}}}});
  auto model = [&](const std::string& name, const std::string& url) {
    return Json{{"kind", "Model"},
                {"apiVersion", "sedna.io/v1alpha1"},
                {"metadata", Meta(name)},
                {"spec", {{"url", url}, {"format", "pkl"}}}};
  };
  Json job_obj{{"kind", "IncrementalLearningJob"},
               {"apiVersion", "sedna.io/v1alpha1"},
               {"metadata", Meta("digits-il")},
               {"spec",
                {{"dataset", {{"name", "digits-dataset"}, {"trainProb", 0.8}}},
                 {"initialModel", {{"name", "initial-model"}}},
                 {"trainSpec",
                  {{"template", Template("train")},
                   {"trigger",
                    {{"checkPeriodSeconds", 5},
                     {"condition",
                      {{"operator", ">"}, {"threshold", 300}, {"metric", "num_of_samples"}}}}}}},
                 {"evalSpec", {{"template", Template("eval")}}},
                 {"deploySpec",
                  {{"model", {{"name", "deploy-model"}}},
                   {"trigger",
                    {{"condition",
                      {{"operator", ">"}, {"threshold", 0.01}, {"metric", "precision_delta"}}}}},
                   {"hardExampleMining", {{"name", "IBT"}}},
                   {"template", Template("infer")}}},
                 {"outputDir", ws + "/output"}}}};
  GmJob job(sedna::core::gm::JobKind::kIncremental, job_obj);
  auto sync = [&] {
    auto d = job.Downstream();
    if (!d.send_job) return;
    gm.Send("insert", job.Object());
    if (d.model == sedna::core::gm::Downstream::ModelToSend::kInitial) {
      gm.Send("insert", model("initial-model", ws + "/models/base_model/model.pkl"));
    } else if (d.model == sedna::core::gm::Downstream::ModelToSend::kDeploy) {
      gm.Send("insert", model("deploy-model", ws + "/models/deploy_model/model.pkl"));
    }
  };
  sync();
  Say("job digits-il: trainProb 0.8, train when num_of_samples > 300, deploy when mean "
      "precision_delta > 0.01");

  std::map<std::string, std::string> base_env{
      {"PATH", "/usr/bin:/bin"},
      {"LC_SERVER", "http://127.0.0.1:" + std::to_string(port)},
      {"JOB_NAME", "digits-il"},
      {"NAMESPACE", "default"},
      {"ORIGINAL_DATASET_URL", index}};
  std::vector<RoundRow> rows;
  size_t next_line = 0;
  int exit_code = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  for (int r = 1; r <= rounds; ++r) {
    RoundRow row;
    row.round = r;
    // Stream samples until the LC's train trigger fires.
    std::optional<UpstreamFrame> ready;
    while (!ready) {
      if (std::chrono::steady_clock::now() > deadline || next_line >= stream.size()) {
        std::cerr << "demo: no train trigger (out of samples or time)\n" << lc.Log();
        return 1;
      }
      std::string batch;
      size_t n = std::min<size_t>(120, stream.size() - next_line);
      for (size_t i = 0; i < n; ++i) batch += stream[next_line++] + "\n";
      AppendFile(index, batch);
      Say("dataset: +" + std::to_string(n) + " samples appended (index has " +
          std::to_string(next_line) + ")");
      ready = gm.Next("IncrementalLearningJob", std::chrono::milliseconds(700));
    }
    const Json& in = ready->body.at("input");
    row.train_samples = CountLines(in.at("dataURL").get<std::string>());
    Say("round " + std::to_string(r) + ": train trigger fired -> Train Ready: " +
        std::to_string(row.train_samples) + " samples in " + in.at("dataURL").get<std::string>() +
        ", base model " + in.at("models")[0].at("url").get<std::string>());
    job.Report(ready->content);
    job.SetPod(Stage::kTrain, PodPhase::kRunning);
    sync();
    auto env = base_env;
    env["WORKER_NAME"] = "train-worker-r" + std::to_string(r);
    env["BASE_MODEL_URL"] = in.at("models")[0].at("url");
    env["MODEL_URL"] = in.at("outputDir");
    env["TRAIN_DATASET_URL"] = in.at("dataURL");
    pid_t train =
        Spawn({python, ex + "/train.py"}, env, ws + "/train-" + std::to_string(r) + ".log");
    auto done = gm.Next("IncrementalLearningJob", std::chrono::seconds(60));
    int rc = WaitPid(train);
    if (!done || rc != 0) {
      std::cerr << "train worker failed (exit " << rc << "):\n"
                << ReadFile(ws + "/train-" + std::to_string(r) + ".log");
      return 1;
    }
    Say("round " + std::to_string(r) + ": train worker done, reported " +
        done->body.at("output").at("models")[0].at("url").get<std::string>() + " (train accuracy " +
        done->body.at("output").at("models")[0].at("metrics").at("accuracy").dump() + ")");
    job.Report(done->content);
    job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
    sync();  // (Eval, Waiting)
    auto eval_ready = gm.Next("IncrementalLearningJob", std::chrono::seconds(30));
    if (!eval_ready) {
      std::cerr << "no Eval Ready\n" << lc.Log();
      return 1;
    }
    const Json& ein = eval_ready->body.at("input");
    row.eval_samples = CountLines(ein.at("dataURL").get<std::string>());
    Say("round " + std::to_string(r) + ": Eval Ready: [trained, deployed] on " +
        std::to_string(row.eval_samples) + " held-out samples (" +
        ein.at("dataURL").get<std::string>() + ")");
    job.Report(eval_ready->content);
    job.SetPod(Stage::kEval, PodPhase::kRunning);
    sync();
    env = base_env;
    env["WORKER_NAME"] = "eval-worker-r" + std::to_string(r);
    env["MODEL_URLS"] = ein.at("models")[0].at("url").get<std::string>() + ";" +
                        ein.at("models")[1].at("url").get<std::string>();
    env["TEST_DATASET_URL"] = ein.at("dataURL");
    pid_t eval = Spawn({python, ex + "/eval.py"}, env, ws + "/eval-" + std::to_string(r) + ".log");
    auto evaluated = gm.Next("IncrementalLearningJob", std::chrono::seconds(60));
    rc = WaitPid(eval);
    if (!evaluated || rc != 0) {
      std::cerr << "eval worker failed (exit " << rc << "):\n"
                << ReadFile(ws + "/eval-" + std::to_string(r) + ".log");
      return 1;
    }
    const Json& models = evaluated->body.at("output").at("models");
    row.new_precision = Mean(models[0].at("metrics").at("precision"));
    row.old_precision = Mean(models[1].at("metrics").at("precision"));
    char buf[160];
    std::snprintf(buf, sizeof buf, "round %d: eval: mean precision new %.3f vs deployed %.3f", r,
                  row.new_precision, row.old_precision);
    Say(buf);
    job.Report(evaluated->content);
    job.SetPod(Stage::kEval, PodPhase::kSucceeded);
    // This GM emulator never sends (Deploy, Waiting), so the LC (--gm-protocol auto, with no G1
    // evidence) decides --deploy-wait (30 s) after the eval report: wait past that.
    auto decision = gm.Next("IncrementalLearningJob", std::chrono::seconds(60));
    if (!decision) {
      std::cerr << "no deploy decision\n" << lc.Log();
      return 1;
    }
    const std::string status = decision->body.at("status");
    if (status == "Ready") {
      row.decision = "deployed";
      Say("round " + std::to_string(r) + ": DEPLOYED: LC copied the new model over " + ws +
          "/models/deploy_model/model.pkl; GM restarts the inference worker");
    } else if (status == "Completed") {
      row.decision = "kept";
      Say("round " + std::to_string(r) + ": kept the deployed model (deploy trigger not met)");
    } else {
      row.decision = "deploy failed";
      Say("round " + std::to_string(r) + ": deploy FAILED");
      exit_code = 1;
    }
    job.Report(decision->content);
    job.SetPod(Stage::kDeploy, PodPhase::kRunning);
    sync();  // back to (Train, Waiting)
    rows.push_back(row);
  }
  std::printf("\n%-6s %-14s %-13s %-16s %-16s %s\n", "ROUND", "TRAIN SAMPLES", "EVAL SAMPLES",
              "NEW PRECISION", "DEPLOYED PREC.", "DECISION");
  for (const auto& r : rows) {
    std::printf("%-6d %-14d %-13d %-16.3f %-16.3f %s\n", r.round, r.train_samples, r.eval_samples,
                r.new_precision, r.old_precision, r.decision.c_str());
  }
  const int stop = lc.Stop();
  std::printf("\nsedna-lc exited with %d; its log: %s/sedna-lc.log\n", stop, ws.c_str());
  return exit_code == 0 && stop == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "il_demo: %s\n", e.what());
  }
  return 1;
}
