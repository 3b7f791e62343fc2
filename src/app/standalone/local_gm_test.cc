// The local GM on its own (no controller): manifests in a temp directory, its frames to the LC
// recorded, the LC's upstream frames written by the test, real local worker processes (sh and
// sleep). Pins the GM side of a standalone round for each generation: what is sent when
// (docs/protocol.md §H1.3, §H1.4; docs/protocol.md §P4.3), model hot update (§H4.1) and the
// report gate for the inference worker's reload report.
#include "app/standalone/local_gm.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/json/envelope.h"
#include "app/standalone/local_gm_impl.h"

namespace sedna::app {
namespace {

namespace stdfs = std::filesystem;
using NJ = nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kJob = "digits";
constexpr const char* kHotAnnotation = "sedna.io/model-hot-update-config";

struct Sent {
  std::string op, kind, name;
  NJ object;                  // the content, parsed
  std::string Last() const {  // "Stage/Type" of the latest condition, "" if none
    const NJ* c = nullptr;
    if (object.contains("status") && object["status"].contains("conditions") &&
        !object["status"]["conditions"].empty()) {
      c = &object["status"]["conditions"].back();
    }
    return c ? (*c)["stage"].get<std::string>() + "/" + (*c)["type"].get<std::string>() : "";
  }
  std::string Annotation(const std::string& key) const {
    const NJ& m = object["metadata"];
    if (!m.contains("annotations") || !m["annotations"].contains(key)) return "";
    return m["annotations"][key].get<std::string>();
  }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  stdfs::create_directories(stdfs::path(path).parent_path());
  std::ofstream(path + ".tmp") << text;
  stdfs::rename(path + ".tmp", path);
}

class LocalGmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sedna-localgm-XXXXXX";
    tmp = ::mkdtemp(tmpl);
    for (const char* d : {"/m", "/marks", "/lc"}) stdfs::create_directories(tmp + d);
    WriteFile(tmp + "/models/base.bin", "BASE");
    WriteFile(tmp + "/models/deploy.bin", "DEPLOY");
    WriteFile(tmp + "/index.txt", "");
  }

  void TearDown() override {
    if (gm) gm->Stop();
    gm.reset();
    std::error_code ec;
    stdfs::remove_all(tmp, ec);
  }

  std::string Manifests(bool hot) {
    auto sleeper = [](const std::string& name) {
      return "        containers:\n          - name: " + name +
             "\n            image: x\n            command: [\"sleep\", \"30\"]\n";
    };
    return "apiVersion: sedna.io/v1alpha1\nkind: Dataset\nmetadata:\n  name: ds\nspec:\n"
           "  url: " +
           tmp +
           "/index.txt\n  format: txt\n  nodeName: edge\n---\n"
           "apiVersion: sedna.io/v1alpha1\nkind: Model\nmetadata:\n  name: base\nspec:\n"
           "  url: " +
           tmp +
           "/models/base.bin\n  format: bin\n---\n"
           "apiVersion: sedna.io/v1alpha1\nkind: Model\nmetadata:\n  name: deploy\nspec:\n"
           "  url: " +
           tmp +
           "/models/deploy.bin\n  format: bin\n---\n"
           "apiVersion: sedna.io/v1alpha1\nkind: IncrementalLearningJob\nmetadata:\n  name: " +
           std::string(kJob) +
           "\nspec:\n  initialModel:\n    name: base\n  dataset:\n    name: ds\n"
           "    trainProb: 0.8\n  trainSpec:\n    template:\n      spec:\n" +
           sleeper("train") +
           "    trigger:\n      condition:\n        operator: \">\"\n        threshold: 5\n"
           "        metric: num_of_samples\n  evalSpec:\n    template:\n      spec:\n" +
           sleeper("eval") + "  deploySpec:\n    model:\n      name: deploy\n" +
           (hot ? "      hotUpdateEnabled: true\n      pollPeriodSeconds: 3\n" : "") +
           "    trigger:\n      condition:\n        operator: \">\"\n        threshold: 0.1\n"
           "        metric: precision_delta\n    template:\n      spec:\n"
           "        containers:\n          - name: infer\n            image: x\n"
           "            command: [\"sh\", \"-c\", \"env > $MARK_DIR/infer-$$.env; exec sleep "
           "30\"]\n            env:\n              - name: MARK_DIR\n                value: " +
           tmp + "/marks\n  outputDir: " + tmp + "/out\n";
  }

  // An LL job like the seasons example's, with workers that record their env (<name>-<pid>.env).
  std::string LlManifests() {
    auto recorder = [&](const std::string& name) {
      return "        containers:\n          - name: " + name +
             "\n            image: x\n            command: [\"sh\", \"-c\", \"(env; echo "
             "PID_FILE=$$) > "
             "$MARK_DIR/" +
             name +
             "-$$.env; exec sleep 30\"]\n            env:\n              - name: MARK_DIR\n"
             "                value: " +
             tmp + "/marks\n";
    };
    return "apiVersion: sedna.io/v1alpha1\nkind: Dataset\nmetadata:\n  name: ds\nspec:\n"
           "  url: " +
           tmp +
           "/index.txt\n  format: txt\n  nodeName: edge\n---\n"
           "apiVersion: sedna.io/v1alpha1\nkind: LifelongLearningJob\nmetadata:\n  name: " +
           std::string(kJob) +
           "\nspec:\n  dataset:\n    name: ds\n    trainProb: 0.8\n  trainSpec:\n    template:\n"
           "      spec:\n        nodeName: edge\n" +
           recorder("train") +
           "    trigger:\n      condition:\n        operator: \">\"\n        threshold: 5\n"
           "        metric: num_of_samples\n  evalSpec:\n    template:\n      spec:\n" +
           recorder("eval") + "  deploySpec:\n    template:\n      spec:\n" + recorder("infer") +
           "  outputDir: " + tmp + "/out\n";
  }

  void Start(const std::string& protocol, bool hot, bool ll = false) {
    if (ll) job_kind = "lifelonglearningjob";
    WriteFile(tmp + "/m/all.yaml", ll ? LlManifests() : Manifests(hot));
    LocalGmOptions o;
    o.manifest_path = tmp + "/m";
    o.db_path = tmp + "/lc/database.db";
    o.log_dir = tmp + "/lc/workers";
    o.lc_server = "http://127.0.0.1:1";
    o.manifest_poll = milliseconds(50);
    o.gm_protocol = protocol;
    o.hot_update_dir = tmp + "/lc/model-hot-update";
    gm = std::make_unique<LocalGm>(
        io,
        [this](const std::string& frame) {
          auto f = json::DecodeFrame(frame);
          ASSERT_TRUE(f.ok()) << f.message();
          sent.push_back({f->header.operation, f->header.resource_kind, f->header.resource_name,
                          NJ::parse(f->content)});
        },
        o);
    ASSERT_TRUE(gm->Start().ok());
  }

  // Runs the loop until `pred` holds (workers start and exit asynchronously).
  bool RunUntil(const std::function<bool()>& pred, milliseconds limit = milliseconds(10000)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      io.restart();
      io.run_for(milliseconds(20));
    }
    return true;
  }

  // The LC's status message for the job, through LocalGm::Send as the outbox sends it.
  void Upstream(const std::string& content) {
    size_t done = 0;
    const std::string kind =
        job_kind == "lifelonglearningjob" ? "LifelongLearningJob" : "IncrementalLearningJob";
    const std::string frame = json::EncodeFrame({"default", kind, kJob, "status"}, content);
    const std::string_view batch[] = {frame};
    ASSERT_TRUE(gm->Send(batch, [&](size_t applied) { done = applied; }));
    ASSERT_TRUE(RunUntil([&] { return done == 1; }));
  }

  std::vector<Sent> Jobs() const {
    std::vector<Sent> out;
    for (const auto& s : sent) {
      if (s.kind == job_kind) out.push_back(s);
    }
    return out;
  }

  // Waits for a job frame whose latest condition is `last`, after the one the previous WaitJob
  // returned; returns it.
  Sent WaitJob(const std::string& last) {
    Sent got;
    EXPECT_TRUE(RunUntil([&] {
      for (size_t i = waited; i < sent.size(); ++i) {
        if (sent[i].kind == job_kind && sent[i].op == "insert" && sent[i].Last() == last) {
          got = sent[i];
          waited = i + 1;
          return true;
        }
      }
      return false;
    })) << "no job frame at "
        << last << "; frames: " << Trace();
    return got;
  }

  std::string Trace() const {
    std::string t;
    for (const auto& s : sent) {
      t += s.op + " " + s.kind + (s.kind == "incrementallearningjob" ? "@" + s.Last() : "") + ", ";
    }
    return t;
  }

  // Index in `sent` of the first frame after `from` of kind `kind` (job frames: at `last`).
  int IndexOf(const std::string& kind, const std::string& last = "", size_t from = 0) const {
    for (size_t i = from; i < sent.size(); ++i) {
      if (sent[i].op == "insert" && sent[i].kind == kind &&
          (last.empty() || sent[i].Last() == last))
        return static_cast<int>(i);
    }
    return -1;
  }

  // Environments of the inference workers started so far (each wrote one file).
  std::vector<std::map<std::string, std::string>> InferenceEnvs() { return Envs("infer-"); }

  // Environments of the workers whose env files start with `prefix`, oldest first.
  std::vector<std::map<std::string, std::string>> Envs(const std::string& prefix) {
    std::vector<std::pair<stdfs::file_time_type, std::string>> files;
    for (const auto& e : stdfs::directory_iterator(tmp + "/marks")) {
      const std::string n = e.path().filename().string();
      if (e.path().extension() == ".env" && n.rfind(prefix, 0) == 0) {
        files.emplace_back(stdfs::last_write_time(e.path()), e.path().string());
      }
    }
    std::sort(files.begin(), files.end());
    std::vector<std::map<std::string, std::string>> out;
    for (const auto& [t, path] : files) {
      std::map<std::string, std::string> env;
      std::istringstream in(ReadFile(path));
      for (std::string line; std::getline(in, line);) {
        auto eq = line.find('=');
        if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
      }
      if (env.count("WORKER_NAME")) out.push_back(env);
    }
    return out;
  }

  core::WorkerReport DeployReport(const std::string& worker) {
    core::WorkerReport r;
    r.worker_name = worker;
    r.kind = "deploy";
    r.status = "completed";
    r.ns = "default";
    r.owner_name = kJob;
    r.owner_kind = core::kKindIlJob;
    return r;
  }

  // The LC's messages of one round up to the deploy decision.
  void TrainAndEval() {
    Upstream(R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"bin","url":")" +
             tmp + R"(/models/base.bin"}],"dataURL":")" + tmp +
             R"(/out/data/train/1/data.txt","outputDir":")" + tmp +
             R"(/out/train/1"},"output":null})");
    WaitJob("Train/Running");
    Upstream(R"({"phase":"train","status":"completed","output":{"models":[{"format":"bin",)"
             R"("url":")" +
             tmp + R"(/out/train/1/model.bin"}],"ownerInfo":null}})");
    WaitJob("Eval/Waiting");
    Upstream(R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"bin","url":")" +
             tmp + R"(/out/train/1/model.bin"},{"format":"bin","url":")" + tmp +
             R"(/models/deploy.bin"}],"dataURL":")" + tmp +
             R"(/out/data/eval/1/data.txt"},"output":null})");
    WaitJob("Eval/Running");
    Upstream(R"({"phase":"eval","status":"completed","output":{"models":[{"format":"bin",)"
             R"("url":")" +
             tmp +
             R"(/out/train/1/model.bin","metrics":{"precision":[0.9]}},{"format":"bin",)"
             R"("url":")" +
             tmp + R"(/models/deploy.bin","metrics":{"precision":[0.5]}}],"ownerInfo":null}})");
  }

  std::string DeployReady() {
    return R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"bin","url":")" +
           tmp + R"(/out/train/1/model.bin"},{"format":"bin","url":")" + tmp +
           R"(/models/deploy.bin"}]},"output":null})";
  }

  std::string tmp;
  boost::asio::io_context io{1};
  std::unique_ptr<LocalGm> gm;
  std::vector<Sent> sent;
  size_t waited = 0;  // frames before this were matched by WaitJob
  std::string job_kind = "incrementallearningjob";
};

// G2, hot update: the annotation and the inference worker's env at the first sync; (Deploy,
// Waiting) is sent to the LC; (Deploy, Ready) does not restart the inference worker; (Deploy,
// Running) is sent with sedna.io/Deploy; the worker's deploy report is let through only then and
// ends the round.
TEST_F(LocalGmTest, G2HotUpdateRound) {
  Start("auto", /*hot=*/true);
  const std::string config =
      tmp + "/lc/model-hot-update/default/incrementallearningjob/digits/model_config.json";
  Sent first = WaitJob("Train/Waiting");
  EXPECT_EQ(first.Annotation(kHotAnnotation), config);
  EXPECT_EQ(first.object["spec"]["deploySpec"]["model"]["hotUpdateEnabled"], true);
  // G2 sends the initial Model before the job (§H1.4); G1 after.
  const int job_at = IndexOf("incrementallearningjob", "Train/Waiting");
  EXPECT_GE(IndexOf("model"), 0);
  EXPECT_EQ(sent[job_at - 1].kind, "model") << Trace();
  EXPECT_EQ(sent[job_at - 1].name, "base");

  ASSERT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 1; }));
  auto env = InferenceEnvs()[0];
  EXPECT_EQ(env["MODEL_HOT_UPDATE"], "true");
  EXPECT_EQ(env["MODEL_POLL_PERIOD_SECONDS"], "3");
  EXPECT_EQ(env["MODEL_HOT_UPDATE_CONFIG"], config);
  EXPECT_EQ(env["MODEL_URL"], tmp + "/models/deploy.bin");
  EXPECT_TRUE(stdfs::is_directory(stdfs::path(config).parent_path()));
  const std::string worker = env["WORKER_NAME"];
  Status early = gm->MayReport(DeployReport(worker));
  EXPECT_FALSE(early.ok());
  EXPECT_EQ(early.message(),
            "kind: \"deploy\": default/incrementallearningjob/digits is at Train/Waiting, not "
            "Deploy/Running: a model reload is reported only while the GM waits for one");

  TrainAndEval();
  Sent waiting = WaitJob("Deploy/Waiting");  // G2 asks the LC for the deploy decision
  EXPECT_EQ(waiting.Annotation("sedna.io/Eval"), "edge");
  Upstream(DeployReady());
  Sent running = WaitJob("Deploy/Running");
  EXPECT_EQ(running.Annotation("sedna.io/Deploy"), "edge");
  EXPECT_EQ(running.Annotation(kHotAnnotation), config);
  const auto& conds = running.object["status"]["conditions"];
  ASSERT_GE(conds.size(), 3u);
  EXPECT_EQ(conds[conds.size() - 2]["type"], "Starting");
  EXPECT_EQ(conds[conds.size() - 3]["type"], "Ready");
  EXPECT_EQ(InferenceEnvs().size(), 1u) << "a hot deploy must not restart the inference worker";
  EXPECT_TRUE(gm->MayReport(DeployReport(worker)).ok());

  Upstream(R"({"phase":"deploy","status":"completed","output":{"models":null,"ownerInfo":null}})");
  Sent next = WaitJob("Train/Waiting");
  const auto& c2 = next.object["status"]["conditions"];
  ASSERT_GE(c2.size(), 3u);
  EXPECT_EQ(c2[c2.size() - 2]["stage"], "Deploy");
  EXPECT_EQ(c2[c2.size() - 2]["type"], "Completed");
  EXPECT_EQ(c2[c2.size() - 2]["message"], "reported by lc");
  EXPECT_FALSE(gm->MayReport(DeployReport(worker)).ok()) << "the round is over";
  EXPECT_EQ(InferenceEnvs().size(), 1u);
}

// G2, cold: (Deploy, Waiting) is sent; (Deploy, Ready) restarts the inference worker and
// completes the stage directly (no Starting).
TEST_F(LocalGmTest, G2ColdDeployRestartsInferenceAndCompletes) {
  Start("g2", /*hot=*/false);
  Sent first = WaitJob("Train/Waiting");
  EXPECT_EQ(first.Annotation(kHotAnnotation), "");
  ASSERT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 1; }));
  EXPECT_EQ(InferenceEnvs()[0].count("MODEL_HOT_UPDATE"), 0u);
  TrainAndEval();
  WaitJob("Deploy/Waiting");
  Upstream(DeployReady());
  Sent next = WaitJob("Train/Waiting");
  std::vector<std::string> tail;
  for (const auto& c : next.object["status"]["conditions"]) {
    tail.push_back(c["stage"].get<std::string>() + "/" + c["type"].get<std::string>());
  }
  ASSERT_GE(tail.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(tail.end() - 4, tail.end()),
            (std::vector<std::string>{"Deploy/Waiting", "Deploy/Ready", "Deploy/Completed",
                                      "Train/Waiting"}));
  EXPECT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 2; }))
      << "the inference worker is restarted on a cold deploy";
}

// --gm-protocol g1: the 2021 GM. hotUpdateEnabled is dropped from the job, no annotation, a
// Deploy-stage job is never sent, and (Deploy, Ready) restarts the inference worker and goes
// through (Deploy, Starting).
TEST_F(LocalGmTest, G1KeepsTheOldBehaviour) {
  Start("g1", /*hot=*/true);
  Sent first = WaitJob("Train/Waiting");
  EXPECT_FALSE(first.object["spec"]["deploySpec"]["model"].contains("hotUpdateEnabled"));
  EXPECT_FALSE(first.object["spec"]["deploySpec"]["model"].contains("pollPeriodSeconds"));
  EXPECT_EQ(first.Annotation(kHotAnnotation), "");
  // G1 sends the job first, then its Model.
  const int job_at = IndexOf("incrementallearningjob", "Train/Waiting");
  ASSERT_LT(job_at + 1, static_cast<int>(sent.size()));
  EXPECT_EQ(sent[job_at + 1].kind, "model") << Trace();
  ASSERT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 1; }));
  EXPECT_EQ(InferenceEnvs()[0].count("MODEL_HOT_UPDATE"), 0u);

  TrainAndEval();
  // The eval report lands (Eval, Completed) then (Deploy, Waiting), which G1 never sends.
  ASSERT_TRUE(RunUntil([&] { return IndexOf("incrementallearningjob", "Eval/Running") >= 0; }));
  const size_t before = sent.size();
  Upstream(DeployReady());
  Sent next = WaitJob("Train/Waiting");
  for (const auto& s : Jobs()) {
    EXPECT_NE(s.Last().rfind("Deploy/", 0), 0u) << "G1 sent a Deploy-stage job: " << Trace();
  }
  std::vector<std::string> tail;
  for (const auto& c : next.object["status"]["conditions"]) {
    tail.push_back(c["stage"].get<std::string>() + "/" + c["type"].get<std::string>());
  }
  ASSERT_GE(tail.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(tail.end() - 5, tail.end()),
            (std::vector<std::string>{"Deploy/Waiting", "Deploy/Ready", "Deploy/Starting",
                                      "Deploy/Completed", "Train/Waiting"}));
  EXPECT_GT(sent.size(), before);
  EXPECT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 2; }));
}

// A job edited to hotUpdateEnabled after its first sync (or started under an older sedna-lc) gets
// the annotation the GM sets only at the first sync, and an inference worker with the hot env.
TEST_F(LocalGmTest, JobMadeHotLaterGetsTheAnnotationAndAHotInferenceWorker) {
  Start("auto", /*hot=*/false);
  WaitJob("Train/Waiting");
  ASSERT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 1; }));
  const size_t before = sent.size();
  WriteFile(tmp + "/m/all.yaml", Manifests(/*hot=*/true));
  const std::string config =
      tmp + "/lc/model-hot-update/default/incrementallearningjob/digits/model_config.json";
  ASSERT_TRUE(RunUntil([&] {
    for (size_t i = before; i < sent.size(); ++i) {
      if (sent[i].kind == "incrementallearningjob" &&
          sent[i].Annotation(kHotAnnotation) == config) {
        return true;
      }
    }
    return false;
  })) << Trace();
  ASSERT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 2; }));
  bool hot_env = false;
  for (auto& e : InferenceEnvs()) hot_env |= e["MODEL_HOT_UPDATE_CONFIG"] == config;
  EXPECT_TRUE(hot_env);
}

// G2 LL (docs/protocol.md §H1.7, §H4.4): the job goes to the LC at Waiting and Running only; the
// train worker gets HAS_COMPLETED_INITIAL_TRAINING (and from round 2 CLOUD_KB_INDEX, models[0]
// of the latest train report), the inference worker OUTPUT_URL; (Deploy, Ready) restarts the
// inference worker and completes the stage directly.
TEST_F(LocalGmTest, G2LifelongRoundEnvAndRouting) {
  Start("auto", /*hot=*/false, /*ll=*/true);
  WaitJob("Train/Waiting");
  const std::string out = tmp + "/out";
  auto ready = [&](const std::string& stage, const std::string& extra) {
    Upstream(R"({"phase":")" + stage + R"(","status":"ready","input":{"dataURL":")" + out +
             "/data/" + stage + R"(/1/data.txt","outputDir":")" + out + "/" + stage + R"(/1")" +
             extra + R"(},"output":null})");
  };
  auto completed = [&](const std::string& stage) {
    Upstream(R"({"phase":")" + stage +
             R"(","status":"completed","output":{"models":[)"
             R"({"format":"pkl","url":")" +
             out + "/" + stage + R"(/1/index.pkl"}],"ownerInfo":null}})");
  };
  ready("train", "");
  WaitJob("Train/Running");
  ASSERT_TRUE(RunUntil([&] { return Envs("train-").size() == 1; }));
  EXPECT_EQ(Envs("train-")[0]["HAS_COMPLETED_INITIAL_TRAINING"], "false");
  EXPECT_EQ(Envs("train-")[0].count("CLOUD_KB_INDEX"), 0u);
  completed("train");
  WaitJob("Eval/Waiting");
  ready("eval", R"(,"models":[{"format":"pkl","url":")" + out + R"(/train/1/index.pkl"}])");
  WaitJob("Eval/Running");
  completed("eval");
  WaitJob("Deploy/Waiting");
  Upstream(R"({"phase":"deploy","status":"ready","input":{"models":[{"format":"pkl","url":")" +
           out + R"(/deploy/index.pkl"}]},"output":null})");
  WaitJob("Train/Waiting");
  EXPECT_EQ(Jobs().back().object["status"]["knowledgeBase"]["samples"]["numberOfUnseenSample"], 0)
      << "a v0.6+ GM's LL job carries status.knowledgeBase";
  for (const auto& s : Jobs()) {
    const std::string last = s.Last();
    EXPECT_TRUE(last.empty() || last.find("/Waiting") != std::string::npos ||
                last.find("/Running") != std::string::npos)
        << "G2 sent an LL job at " << last;
  }
  ASSERT_TRUE(RunUntil([&] { return InferenceEnvs().size() == 1; }));
  EXPECT_EQ(InferenceEnvs()[0]["OUTPUT_URL"], out);
  EXPECT_EQ(InferenceEnvs()[0]["MODEL_URLS"], out + "/deploy/index.pkl");

  // Round 1's train worker (a sleeper here) must end before the GM creates the next train pod.
  const pid_t first = std::stoi(Envs("train-")[0]["PID_FILE"]);
  ASSERT_EQ(::kill(first, SIGTERM), 0);
  ASSERT_TRUE(RunUntil([&] { return ::kill(first, 0) != 0; })) << "not reaped";
  ready("train", "");
  ASSERT_TRUE(RunUntil([&] { return Envs("train-").size() == 2; }));
  EXPECT_EQ(Envs("train-")[1]["HAS_COMPLETED_INITIAL_TRAINING"], "true");
  EXPECT_EQ(Envs("train-")[1]["CLOUD_KB_INDEX"], out + "/train/1/index.pkl");
}

// status.knowledgeBase of a v0.6+ GM (docs/protocol.md §H4.4), from each message's output
// models; stock lib/sedna reports (none of the keys) give zeros, a message without output models
// keeps the last one.
TEST(KnowledgeBaseTest, ComputedFromTheOutputModels) {
  struct Row {
    const char* name;
    std::string content;
    std::optional<std::string> want;
  };
  const std::string zeros =
      R"({"AIModels":{"numberOfAIModels":0},"AIClasses":{"numberOfAIClasses":0},)"
      R"("samples":{"numberOfLabeledUnseenSample":0,"numberOfUnseenSample":0}})";
  const Row rows[] = {
      {"ProtocolExample",
       R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","url":"/o/m",)"
       R"("classes":["road","sidewalk"],"current_metric":{"front_model":{"mIoU":0.61}},)"
       R"("number_of_labeled_unseen_sample":12}]}})",
       R"({"AIModels":{"numberOfAIModels":1,"listOfAIModels":[{"modelID":"front_model",)"
       R"("averagePrecision":0.61,"numberOfTrainSamples":12}]},"AIClasses":{"numberOfAIClasses":2,)"
       R"("listOfAIClasses":["road","sidewalk"]},"samples":{"numberOfLabeledUnseenSample":12,)"
       R"("numberOfUnseenSample":0}})"},
      {"StockLibSednaIsZeros",
       R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","url":"/o/m"}],)"
       R"("ownerInfo":null}})",
       zeros},
      {"EveryKeyOfEveryModel_FirstValueAsWritten_ClassesOfModel0",
       R"({"output":{"models":[{"url":"/a","classes":null,"current_metric":{"z":[0.5,0.9],)"
       R"("a":{"recall":0.25,"mIoU":0.75}},"number_of_labeled_unseen_sample":3},)"
       R"({"url":"/b","classes":["x"],"current_metric":{"k":0.125}}]}})",
       R"({"AIModels":{"numberOfAIModels":3,"listOfAIModels":[)"
       R"({"modelID":"z","averagePrecision":0.5,"numberOfTrainSamples":3},)"
       R"({"modelID":"a","averagePrecision":0.25,"numberOfTrainSamples":3},)"
       R"({"modelID":"k","averagePrecision":0.125,"numberOfTrainSamples":0}]},)"
       R"("AIClasses":{"numberOfAIClasses":0},)"
       R"("samples":{"numberOfLabeledUnseenSample":6,"numberOfUnseenSample":0}})"},
      {"NoOutputModelsKeepsTheLast", R"({"phase":"train","status":"ready","output":null})",
       std::nullopt},
      {"EmptyModelsKeepsTheLast", R"({"output":{"models":[]}})", std::nullopt},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    auto kb = local_gm_detail::KnowledgeBaseOf(r.content);
    ASSERT_EQ(kb.has_value(), r.want.has_value());
    if (kb) {
      EXPECT_EQ(*kb, NJ::parse(*r.want)) << kb->dump();
    }
  }
}

// End to end: the job object the local GM sends after a train report with the keys carries them.
TEST_F(LocalGmTest, G2LifelongKnowledgeBaseFromTheReports) {
  Start("auto", /*hot=*/false, /*ll=*/true);
  WaitJob("Train/Waiting");
  const std::string out = tmp + "/out";
  Upstream(R"({"phase":"train","status":"ready","input":{"dataURL":")" + out +
           R"(/data/train/1/data.txt","outputDir":")" + out + R"(/train/1"},"output":null})");
  WaitJob("Train/Running");
  Upstream(R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","url":")" +
           out +
           R"(/train/1/index.pkl","classes":["road","sidewalk"],)"
           R"("current_metric":{"front_model":{"mIoU":0.61}},)"
           R"("number_of_labeled_unseen_sample":12}],"ownerInfo":null}})");
  WaitJob("Eval/Waiting");
  const NJ kb = Jobs().back().object["status"]["knowledgeBase"];
  EXPECT_EQ(kb["AIModels"]["numberOfAIModels"], 1) << kb.dump();
  EXPECT_EQ(kb["AIModels"]["listOfAIModels"][0]["modelID"], "front_model") << kb.dump();
  EXPECT_EQ(kb["AIModels"]["listOfAIModels"][0]["averagePrecision"], 0.61) << kb.dump();
  EXPECT_EQ(kb["AIClasses"]["listOfAIClasses"], NJ::parse(R"(["road","sidewalk"])")) << kb.dump();
  EXPECT_EQ(kb["samples"]["numberOfLabeledUnseenSample"], 12) << kb.dump();
}

}  // namespace
}  // namespace sedna::app
