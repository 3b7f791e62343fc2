// End to end, one test per docs/protocol.md §P8.5 item that needs the whole daemon (the pure core
// has unit tests for [P:B1], [P:B2], [P:B4]-[P:B11] and [P:B19]): the real sedna-lc binary against
// a websocket GM on 127.0.0.1 that the test can stop and restart on the same port, worker POSTs,
// the SQLite file.
//
// Each test drives a situation where the Go LC misbehaves and asserts the observable difference:
// files on the rootfs, the upstream frames (content, order, count), the database bytes, the log.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <set>
#include <thread>

#include "db_query.h"
#include "gm_emulator.h"
#include "lc_process.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kJobName = "helmet-detection-demo";
constexpr const char* kDatasetName = "incremental-dataset";
constexpr const char* kIndex = "/data/train_data.txt";
constexpr const char* kTrainedModelUrl = "/output/train/1/model.pb";
constexpr const char* kDefaultDeployUrl = "/models/deploy_model/saved_model.pb";
constexpr const char* kOldModel = "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES";
// IL-5 as the v0.7.0 LC sends it: input.models = [trained, deploy model].
std::string Il5(const std::string& deploy_url) {
  return R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":")" +
         deploy_url + R"("}]},"output":null})";
}

// ---------------------------------------------------------------- objects

Json JointInferenceObject() {
  return Json{{"kind", "JointInferenceService"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta("helmet-detection-inference")},
              {"spec",
               {{"edgeWorker", {{"model", {{"name", "little-model"}}}}},
                {"cloudWorker", {{"model", {{"name", "big-model"}}}}}}}};
}

// The object as the GM sends it when spec.credentialName is set (§P2.5).
Json WithCredential(Json obj, const std::string& secret) {
  const Json cred{{"ACCESS_KEY_ID", "AKID-" + secret},
                  {"SECRET_ACCESS_KEY", secret},
                  {"s3-endpoint", "s3.example.com:9000"},
                  {"s3-usehttps", "0"}};
  obj["metadata"]["annotations"] = Json{{"sedna.io/credential", cred.dump()}, {"team", "edge"}};
  obj["spec"]["credentialName"] = "s3-secret";
  return obj;
}

// ---------------------------------------------------------------- samples and reports

std::string Join(const std::vector<std::string>& lines, size_t from = 0,
                 size_t to = std::string::npos) {
  std::string s;
  for (size_t i = from; i < std::min(to, lines.size()); ++i) s += lines[i] + "\n";
  return s;
}

// The first line of `text` that contains `what` ("" when none).
std::string FirstLineWith(const std::string& text, const std::string& what) {
  const size_t pos = text.find(what);
  if (pos == std::string::npos) return "";
  const size_t begin = text.rfind('\n', pos);
  const size_t from = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(from, text.find('\n', pos) - from);
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string Il1(const std::string& base_url) {
  return R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":")" +
         base_url +
         R"("}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"},"output":null})";
}

std::string Il3(const std::string& deploy_url) {
  return R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":")" +
         deploy_url + R"("}],"dataURL":"/output/data/eval/1/data.txt"},"output":null})";
}

std::string TrainReport(const std::string& worker, double loss) {
  Json m{{"loss", loss}};
  return Json{
      {"name", worker},
      {"namespace", "default"},
      {"ownerName", kJobName},
      {"ownerKind", "incrementallearningjob"},
      {"kind", "train"},
      {"status", "completed"},
      {"results", Json::array({{{"format", "pb"}, {"url", kTrainedModelUrl}, {"metrics", m}},
                               {{"format", "ckpt"}, {"url", "/output/train/1"}, {"metrics", m}}})}}
      .dump();
}

std::string EvalReport(const std::string& worker, const std::string& deploy_url) {
  return Json{
      {"name", worker},
      {"namespace", "default"},
      {"ownerName", kJobName},
      {"ownerKind", "incrementallearningjob"},
      {"kind", "eval"},
      {"status", "completed"},
      {"results",
       Json::array(
           {{{"format", "pb"},
             {"url", kTrainedModelUrl},
             {"metrics", {{"precision", {0.81, 0.74}}}}},
            {{"format", "pb"}, {"url", deploy_url}, {"metrics", {{"precision", {0.66, 0.71}}}}}})}}
      .dump();
}

// A forwarded train report (IL-2): "train"/"completed" and the loss it carried.
double ForwardedLoss(const UpstreamFrame& f) {
  if (f.body.value("phase", "") != "train" || f.body.value("status", "") != "completed") return -1;
  return f.body.at("output").at("models").at(0).at("metrics").at("loss").get<double>();
}

bool IsTrainReady(const UpstreamFrame& f) {
  return f.header.resource_kind == "IncrementalLearningJob" &&
         f.body.value("phase", "") == "Train" && f.body.value("status", "") == "Ready";
}

// For state in another process that has no event to await (the database, /metrics): polls.
template <class F>
bool WaitUntil(F pred, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// ---------------------------------------------------------------- a GM that can go away

// Like GmEmulator, but its websocket server can be stopped and started again on the same port
// (a GM outage), and every upstream frame can be read in arrival order.
class Gm {
 public:
  Gm() { Listen(0); }

  WsTestServer& server() { return *server_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void Shutdown() {
    if (server_) server_->Stop();
    server_.reset();
  }
  void Restart() { Listen(port_); }

  bool TrySend(const std::string& op, const Json& obj) {
    std::string kind = obj.at("kind").get<std::string>();
    for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const Json& meta = obj.at("metadata");
    wire::MessageHeader h{meta.value("namespace", "default"), kind, meta.at("name"), op};
    return server_ && server_->Send(wire::EncodeFrame(h, obj.dump()));
  }
  void Send(const std::string& op, const Json& obj) {
    if (!TrySend(op, obj)) throw std::runtime_error("GM: no LC connected");
  }

  // The next upstream frame, in arrival order (frames held by Next first).
  std::optional<UpstreamFrame> NextFrame(milliseconds timeout) {
    if (!held_.empty()) {
      UpstreamFrame f = std::move(held_.front());
      held_.pop_front();
      return f;
    }
    return Read(timeout);
  }

  // The next frame of `kind` (and `name` when not empty); others are held for later calls.
  std::optional<UpstreamFrame> Next(const std::string& kind, const std::string& name = "",
                                    milliseconds timeout = seconds(20)) {
    auto match = [&](const UpstreamFrame& f) {
      return f.header.resource_kind == kind && (name.empty() || f.header.resource_name == name);
    };
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (match(*it)) {
        UpstreamFrame f = std::move(*it);
        held_.erase(it);
        return f;
      }
    }
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      auto f = Read(std::max(left, milliseconds(0)));
      if (!f) return std::nullopt;
      if (match(*f)) return f;
      held_.push_back(std::move(*f));
    }
  }

 private:
  void Listen(uint16_t port) {
    server_ = WsTestServer::Start(port);
    if (!server_) throw std::runtime_error("GM: cannot listen on port " + std::to_string(port));
    port_ = server_->port();
  }

  std::optional<UpstreamFrame> Read(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (!server_) return std::nullopt;
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      auto text = server_->WaitForFrame(std::max(left, milliseconds(0)));
      if (!text) return std::nullopt;
      auto parsed = Json::parse(*text, nullptr, false);
      if (parsed.is_object() && !parsed.contains("header")) continue;  // §P1.2 first frame
      auto f = wire::DecodeFrame(*text);
      if (!f.ok()) throw std::runtime_error("GM: bad upstream frame: " + f.message());
      return UpstreamFrame{f->header, f->content, Json::parse(f->content), *text};
    }
  }

  std::unique_ptr<WsTestServer> server_;
  uint16_t port_ = 0;
  std::deque<UpstreamFrame> held_;
};

// ---------------------------------------------------------------- fixture

struct LcOptions {
  bool with_gm = true;
  std::vector<std::string> args;           // extra flags
  std::map<std::string, std::string> env;  // extra environment
};

class IlBugsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp = MakeTempDir("sedna-bugs-");
    rootfs = tmp + "/rootfs";
    db = tmp + "/db/database.db";
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + kBaseModelUrl);
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + kDefaultDeployUrl, kOldModel);
    WriteFile(rootfs + kIndex, "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    gm = std::make_unique<Gm>();
    port = FreePort();
    status_port = FreePort();
  }

  void TearDown() override {
    if (HasFailure() && lc) std::cerr << "---- sedna-lc log ----\n" << lc->Log();
    lc.reset();
    gm.reset();
    if (std::getenv("SEDNA_KEEP_TMP")) {
      std::cerr << "kept " << tmp << "\n";
    } else {
      stdfs::remove_all(tmp);
    }
  }

  void StartLc(const LcOptions& o = {}) {
    std::map<std::string, std::string> env{{"NODENAME", "edge-node"},
                                           {"BIND_PORT", std::to_string(port)},
                                           {"ROOTFS_MOUNT_DIR", rootfs}};
    if (o.with_gm) env["GM_ADDRESS"] = gm->address();
    for (const auto& [k, v] : o.env) env[k] = v;
    std::vector<std::string> args{
        "--db", db, "--status-port", std::to_string(status_port), "--log-level", "debug"};
    args.insert(args.end(), o.args.begin(), o.args.end());
    // The emulated G1 GM never sends (Deploy, Waiting): the decision comes --deploy-wait after
    // the eval forward (docs/protocol.md §H3.2); short here unless the test sets it.
    if (std::find(args.begin(), args.end(), "--deploy-wait") == args.end()) {
      args.insert(args.end(), {"--deploy-wait", "0.2"});
    }
    if (lc) AppendFile(tmp + "/lc.log", "---- restarting sedna-lc ----\n");
    lc = std::make_unique<LcProcess>(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", env, args,
                                     tmp + "/lc.log");
    if (o.with_gm) {
      ASSERT_TRUE(gm->server().WaitForConnection(seconds(20))) << lc->Log();
    }
  }

  // Sends the job and the model §P4.3 says goes with it, when the GM would.
  void Sync() {
    for (const Json& obj : IlDownstream(*job, deploy_url)) gm->Send("insert", obj);
  }

  UpstreamFrame NextJob() {
    auto f = gm->Next("IncrementalLearningJob");
    if (!f) throw std::runtime_error("no IncrementalLearningJob message from the LC");
    EXPECT_EQ(f->header.resource_name, kJobName);
    EXPECT_EQ(f->header.operation, "status");
    return *f;
  }

  int64_t NextCount(const std::string& name = kDatasetName) {
    auto f = gm->Next("Dataset", name);
    if (!f) throw std::runtime_error("no numberOfSamples for Dataset " + name);
    return f->body.at("numberOfSamples").get<int64_t>();
  }

  void WaitSampleCount(int64_t n) {
    for (;;) {
      int64_t got = NextCount();
      if (got >= n) {
        EXPECT_EQ(got, n) << "samples counted more than once";
        return;
      }
    }
  }

  // A round trip through the websocket: when the barrier Dataset's count arrives, every frame
  // sent before it was handled and every upstream frame queued before it has arrived.
  bool TryBarrier(milliseconds timeout = seconds(20)) {
    const std::string name = "barrier-" + std::to_string(++barriers);
    if (!gm->TrySend("insert", DatasetObject(name, "/data/barrier.txt"))) return false;
    return gm->Next("Dataset", name, timeout).has_value();
  }
  void Barrier() { ASSERT_TRUE(TryBarrier()) << "no answer to barrier-" << barriers; }

  std::string PostWorker(const std::string& name, const std::string& body) {
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", body);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  // A gauge or counter from /metrics; -1 when unreadable.
  int64_t Metric(const std::string& name) {
    HttpResult r = HttpRequest(status_port, "GET", "/metrics", "", {});
    const std::string key = "\n" + name + " ";
    auto pos = r.body.find(key);
    if (r.status != 200 || pos == std::string::npos) return -1;
    return std::atoll(r.body.c_str() + pos + key.size());
  }

  // The upstream frames waiting in the outbox, oldest first.
  std::vector<std::string> OutboxFrames() {
    std::vector<std::string> v;
    for (auto& row : Query(db, "SELECT frame FROM lc_outbox ORDER BY id")) v.push_back(row[0]);
    return v;
  }

  static UpstreamFrame Decode(const std::string& text) {
    auto f = wire::DecodeFrame(text);
    if (!f.ok()) throw std::runtime_error("bad frame in the outbox: " + f.message());
    return UpstreamFrame{f->header, f->content, Json::parse(f->content), text};
  }

  // Dataset, job and initial model in; 1000 samples; IL-1 answered; GM at (Train, Running).
  void RunToTrainRunning() {
    gm->Send("insert", DatasetObject());
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    Barrier();
    AppendFile(rootfs + kIndex, Join(IndexLineList(1, 1000)));
    WaitSampleCount(1000);
    UpstreamFrame il1 = NextJob();
    ASSERT_EQ(il1.content, Il1(kBaseModelUrl));
    job->Report(il1.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Running");
    Sync();
  }

  // From (Train, Running) to IL-5: the trained model holds `trained_bytes`, the eval worker
  // reports it better than the deployed one, so the LC deploys it to `deploy_url`.
  void TrainEvalDeploy(const std::string& trained_bytes) {
    stdfs::create_directories(rootfs + "/output/train/1");
    WriteFile(rootfs + kTrainedModelUrl, trained_bytes);
    ASSERT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);
    UpstreamFrame il2 = NextJob();
    ASSERT_EQ(ForwardedLoss(il2), 0.5) << il2.content;
    job->Report(il2.content);
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame il3 = NextJob();
    ASSERT_EQ(il3.content, Il3(deploy_url));
    job->Report(il3.content);
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    Sync();
    ASSERT_EQ(PostWorker("eval-worker-2bq7d", EvalReport("eval-worker-2bq7d", deploy_url)), kOk);
    UpstreamFrame il4 = NextJob();
    EXPECT_EQ(il4.body.value("phase", ""), "eval") << il4.content;
    UpstreamFrame il5 = NextJob();
    ASSERT_EQ(il5.content, Il5(deploy_url));
    job->Report(il4.content);
    auto actions = job->Report(il5.content);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
    job->SetPod(Stage::kDeploy, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
  }

  std::string tmp, rootfs, db;
  std::string deploy_url = kDefaultDeployUrl;
  uint16_t port = 0, status_port = 0;
  int barriers = 0;
  std::unique_ptr<Gm> gm;
  std::unique_ptr<LcProcess> lc;
  std::unique_ptr<GmJob> job;
};

// ---------------------------------------------------------------- [P:B12], [P:B13]: the deploy
// copy

TEST_F(IlBugsTest, B12_DeployTargetGetsRootfsPrefix) {
  // A deploy Model URL under a directory that exists nowhere on this machine except below the
  // rootfs: the Go LC copies to the unprefixed path, i.e. into its own container filesystem.
  const std::string top = "/" + stdfs::path(tmp).filename().string();
  ASSERT_FALSE(stdfs::exists(top));
  deploy_url = top + "/deploy_model/saved_model.pb";
  stdfs::create_directories(rootfs + top + "/deploy_model");
  WriteFile(rootfs + deploy_url, kOldModel);
  StartLc();
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  ASSERT_NO_FATAL_FAILURE(TrainEvalDeploy("NEW-MODEL-ROUND-1"));
  EXPECT_EQ(ReadFile(rootfs + deploy_url), "NEW-MODEL-ROUND-1")
      << "the host's deploy model (" << rootfs + deploy_url << ") was not replaced";
  const bool leaked = stdfs::exists(top);
  EXPECT_FALSE(leaked) << "the deploy copy was written at the unprefixed path " << deploy_url;
  if (leaked) stdfs::remove_all(top);
  // The source, too, was read through the prefix: the trained model is still where it was.
  EXPECT_EQ(ReadFile(rootfs + kTrainedModelUrl), "NEW-MODEL-ROUND-1");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlBugsTest, B13_ShorterModelReplacesLongerCompletely) {
  // The deployed model is 1 MiB; the new one is 15 bytes. Go opens the target without O_TRUNC
  // and leaves 1 MiB - 15 bytes of the old model behind the new bytes.
  const std::string old_model(1 << 20, 'O');
  WriteFile(rootfs + kDefaultDeployUrl, old_model);
  StartLc();
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  ASSERT_NO_FATAL_FAILURE(TrainEvalDeploy("SHORT-NEW-MODEL"));
  const std::string target = rootfs + kDefaultDeployUrl;
  EXPECT_EQ(stdfs::file_size(target), 15u);
  EXPECT_EQ(ReadFile(target), "SHORT-NEW-MODEL");
  // Nothing else beside it (no temp file left by the atomic replace) but the hidden directory
  // where the replaced model is kept as version 1, whole (docs/design-notes.md, Model versions).
  std::vector<std::string> entries;
  for (const auto& e : stdfs::directory_iterator(rootfs + "/models/deploy_model")) {
    entries.push_back(e.path().filename().string());
  }
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{".sedna-versions", "saved_model.pb"}));
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/.sedna-versions/saved_model.pb.1"), old_model);
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- [P:B16], [P:B17]: deletes

TEST_F(IlBugsTest, B16_DeleteWhileWorkInFlight) {
  // Each incarnation of the job names its own initial model, so a Train Ready tells which
  // incarnation sent it.
  constexpr int kIncarnations = 6;
  auto base = [](int k) { return "/models/base_model_" + std::to_string(k); };
  auto job_object = [](int k) {
    return GmJob(core::gm::JobKind::kIncremental,
                 IlJobObject({.initial_model = "initial-model-" + std::to_string(k)}))
        .Object();
  };
  StartLc();
  for (int k = 1; k <= kIncarnations; ++k) {
    gm->Send("insert", ModelObject("initial-model-" + std::to_string(k), base(k), "ckpt"));
  }
  gm->Send("insert", DatasetObject());
  gm->Send("insert", job_object(1));
  Barrier();
  // ~3 MB of samples, so that writing round 1's train file (on the LC's pool) takes a while.
  const auto lines = IndexLineList(1, 1000, "train_images", 3000);
  AppendFile(rootfs + kIndex, Join(lines));
  WaitSampleCount(1000);
  // The loop turn that counted the samples also ingested them and fired the train trigger: the
  // train file is being written now. Delete the job under it, twice (Go: nil deref in
  // startJob, double close of Done).
  gm->Send("delete", job_object(1));
  gm->Send("delete", job_object(1));
  // Re-created jobs fire at once (a fresh job ingests the whole index) and are deleted by the
  // next frames, while their write runs.
  for (int k = 2; k < kIncarnations; ++k) {
    gm->Send("insert", job_object(k));
    gm->Send("delete", job_object(k));
    gm->Send("delete", job_object(k));
  }
  gm->Send("insert", job_object(kIncarnations));

  // Train Readys: all for round 1, each from an incarnation's own base model, at most one per
  // incarnation, in order; the last one from the surviving incarnation.
  int last = 0;
  while (last != kIncarnations) {
    UpstreamFrame f = NextJob();
    int k = 0;
    for (int i = 1; i <= kIncarnations; ++i) {
      if (f.content == Il1(base(i))) k = i;
    }
    ASSERT_GT(k, last) << "unexpected job message: " << f.content;
    last = k;
  }
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", "", milliseconds(0));
  EXPECT_FALSE(extra) << "late message from a deleted incarnation: " << extra->content;
  // Every incarnation started from a fresh state on the whole index: same round-1 train file.
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(lines).first);

  // The surviving job works: its train worker's report is forwarded.
  job = std::make_unique<GmJob>(
      core::gm::JobKind::kIncremental,
      IlJobObject({.initial_model = "initial-model-" + std::to_string(kIncarnations)}));
  job->Report(Il1(base(kIncarnations)));
  job->SetPod(Stage::kTrain, PodPhase::kRunning);
  gm->Send("insert", job->Object());
  EXPECT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);
  EXPECT_EQ(ForwardedLoss(NextJob()), 0.5);
  EXPECT_EQ(lc->Stop(), 0) << "sedna-lc did not exit cleanly (crashed?)";
}

TEST_F(IlBugsTest, B17_DoubleDeleteNoCrash) {
  StartLc();
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  // Every delete twice, back to back (Go: double close of Done -> panic), plus deletes of
  // objects this LC never saw.
  Json unknown_job = IlJobObject();
  unknown_job["metadata"]["name"] = "never-inserted";
  for (int i = 0; i < 2; ++i) {
    gm->Send("delete", job->Object());
    gm->Send("delete", DatasetObject());
    gm->Send("delete", ModelObject("initial-model", kBaseModelUrl, "ckpt"));
    gm->Send("delete", unknown_job);
    gm->Send("delete", DatasetObject("never-inserted", "/data/none.txt"));
  }
  Barrier();
  // Gone from the database too.
  auto rows = Query(db, "SELECT name FROM resources WHERE name NOT LIKE '%/barrier-%'");
  EXPECT_TRUE(rows.empty()) << rows.size() << " resource row(s) left, first " << rows[0][0];
  rows = Query(db, "SELECT scope, key FROM lc_state WHERE key NOT LIKE '%/barrier-%'");
  EXPECT_TRUE(rows.empty()) << rows.size() << " state row(s) left, first " << rows[0][0] << " "
                            << rows[0][1];
  // A worker of the deleted job: accepted, not forwarded (the job is unknown).
  EXPECT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);

  // Re-inserted, the job is a new job (made again, so a new metadata.uid): fresh state, round 1
  // again on the whole index. The old job's worker report, kept as early for the key, is not
  // this job's and is dropped (early_reports.h).
  gm->Send("insert", DatasetObject());
  EXPECT_EQ(NextCount(), 1000) << "the re-created Dataset counts its index from the start";
  IlJobSpec recreated;
  recreated.uid = "7b3c2f0e-1111-4c3a-9c1e-0000000000b7";
  job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject(recreated));
  Sync();
  UpstreamFrame il1 = NextJob();  // not the dropped worker report
  EXPECT_EQ(il1.content, Il1(kBaseModelUrl));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"),
            Split(IndexLineList(1, 1000)).first);
  job->Report(il1.content);
  job->SetPod(Stage::kTrain, PodPhase::kRunning);
  Sync();
  EXPECT_EQ(PostWorker("train-worker-x9y8z", TrainReport("train-worker-x9y8z", 1.5)), kOk);
  EXPECT_EQ(ForwardedLoss(NextJob()), 1.5);
  EXPECT_EQ(lc->Stop(), 0) << "sedna-lc did not exit cleanly (crashed?)";
}

// ---------------------------------------------------------------- [P:B24]: arrival order

TEST_F(IlBugsTest, B24_FramesAppliedInArrivalOrder) {
  // 50 versions of the job, sent back to back; version k names initial model k. The train
  // trigger fires only after all of them (no samples yet), so the Train Ready's base model says
  // which version the LC holds: it must be the newest, whatever the LC did in between.
  constexpr int kVersions = 50;
  StartLc();
  for (int k = 1; k <= kVersions; ++k) {
    gm->Send("insert", ModelObject("initial-model-" + std::to_string(k),
                                   "/models/base_model_" + std::to_string(k), "ckpt"));
  }
  gm->Send("insert", DatasetObject());
  for (int k = 1; k <= kVersions; ++k) {
    Json obj = GmJob(core::gm::JobKind::kIncremental,
                     IlJobObject({.initial_model = "initial-model-" + std::to_string(k)}))
                   .Object();
    obj["metadata"]["resourceVersion"] = std::to_string(12345 + k);
    gm->Send("insert", obj);
  }
  Barrier();
  AppendFile(rootfs + kIndex, Join(IndexLineList(1, 1000)));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.content, Il1("/models/base_model_" + std::to_string(kVersions)))
      << "the LC acted on an older version of the job";
  // The stored object is the newest version, too.
  auto rows = Query(db, "SELECT spec FROM resources WHERE name = 'default/incrementallearningjob/" +
                            std::string(kJobName) + "'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0][0].find("\"initial-model-50\""), std::string::npos) << rows[0][0];
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", "", milliseconds(0));
  EXPECT_FALSE(extra) << extra->content;
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- [P:B26], [P:B28]: dataset
// changes

class IlDatasetChangeTest : public IlBugsTest {
 protected:
  // Index A with a1..a100 loaded by the job (80 train samples: below the trigger).
  void StartOnIndexA() {
    WriteFile(rootfs + "/data/a.txt", Join(a, 0, 100));
    StartLc();
    gm->Send("insert", DatasetObject(kDatasetName, "/data/a.txt"));
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    Sync();
    Barrier();
    ASSERT_EQ(NextCount(), 100);
  }

  // Index B has b1..b500; then a101..a200 go to the old index (no longer the dataset's) and
  // b501..b700 to the new one. The job's samples are a1..a100 then b1..b700: 640 train samples,
  // the trigger fires once b is complete.
  void FeedIndexBAndCheck() {
    EXPECT_EQ(NextCount(), 500) << "numberOfSamples counts the new index from its start";
    Barrier();
    AppendFile(rootfs + "/data/a.txt", Join(a, 100, 200));
    AppendFile(rootfs + "/data/b.txt", Join(b, 500, 700));
    EXPECT_EQ(NextCount(), 700);
    UpstreamFrame il1 = NextJob();
    EXPECT_EQ(il1.content, Il1(kBaseModelUrl));
    const auto expected = Split(Concat(std::vector<std::string>(a.begin(), a.begin() + 100), b));
    const std::string got = ReadFile(rootfs + "/output/data/train/1/data.txt");
    EXPECT_TRUE(got == expected.first)
        << "train file of round 1 has " << std::count(got.begin(), got.end(), '\n')
        << " lines, expected 640 (a1..a100 then b1..b700, split by running totals); its first "
           "line from the new index: "
        << FirstLineWith(got, "b_images");
    EXPECT_EQ(got.find("a_images/000101.jpg"), std::string::npos)
        << "samples of the old index were ingested after the change";
    // b1 is sample 101 overall, an eval sample by the split; b2 (sample 102) is the first train
    // one.
    EXPECT_NE(got.find("b_images/000002.jpg"), std::string::npos)
        << "the first samples of the new index were skipped";
    EXPECT_EQ(lc->Stop(), 0);
  }

  const std::vector<std::string> a = IndexLineList(1, 200, "a_images");
  const std::vector<std::string> b = IndexLineList(1, 700, "b_images");
};

TEST_F(IlDatasetChangeTest, B26_DatasetUrlChangeFollowed) {
  ASSERT_NO_FATAL_FAILURE(StartOnIndexA());
  WriteFile(rootfs + "/data/b.txt", Join(b, 0, 500));
  gm->Send("insert", DatasetObject(kDatasetName, "/data/b.txt"));  // same Dataset, new spec.url
  FeedIndexBAndCheck();
}

TEST_F(IlDatasetChangeTest, B28_DatasetRecreatedWithNewIndex) {
  ASSERT_NO_FATAL_FAILURE(StartOnIndexA());
  gm->Send("delete", DatasetObject(kDatasetName, "/data/a.txt"));
  Barrier();
  WriteFile(rootfs + "/data/b.txt", Join(b, 0, 500));
  gm->Send("insert", DatasetObject(kDatasetName, "/data/b.txt"));  // re-created elsewhere
  FeedIndexBAndCheck();
}

// ---------------------------------------------------------------- unterminated last line

// design-notes §D4: an unterminated last line counts once the file has stayed unchanged for one
// poll period. The GM re-sends the Dataset and the job every 30-60 s (§P1.6); those re-sends must
// not keep postponing the poll (they did: every one re-armed it a full period later).
TEST_F(IlBugsTest, UnterminatedLastLineCountsWhileTheGmKeepsResending) {
  WriteFile(rootfs + kIndex, "x/1.jpg 1\nx/2.jpg 2\nx/3.jpg 3");
  StartLc();
  IlJobSpec spec;
  spec.check_period_seconds = 2;  // the Dataset's poll period
  const Json job_object = IlJobObject(spec);
  job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, job_object);
  gm->Send("insert", DatasetObject());
  Sync();
  ASSERT_EQ(NextCount(), 2) << "the complete lines count at once";
  // Re-send both every 400 ms (5 per poll period) for up to 12 s, until the third line counts.
  const auto give_up = std::chrono::steady_clock::now() + seconds(12);
  std::optional<int64_t> third;
  while (!third && std::chrono::steady_clock::now() < give_up) {
    gm->Send("update", DatasetObject());
    gm->Send("update", job_object);
    if (auto f = gm->Next("Dataset", kDatasetName, milliseconds(400))) {
      third = f->body.at("numberOfSamples").get<int64_t>();
    }
  }
  ASSERT_TRUE(third) << "the unterminated last line never counted while the GM re-sent";
  EXPECT_EQ(*third, 3);
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- [P:B23]: credentials

TEST_F(IlBugsTest, B23_CredentialNotPersisted) {
  const std::string token = stdfs::path(tmp).filename().string().substr(11);
  const std::vector<std::string> secrets{"S3CR3T-ONE-" + token, "S3CR3T-TWO-" + token};
  StartLc();
  for (const auto& secret : secrets) {  // insert, then update with another secret
    gm->Send("insert", WithCredential(DatasetObject(), secret));
    gm->Send("insert", WithCredential(ModelObject("initial-model", kBaseModelUrl, "ckpt"), secret));
    gm->Send("insert",
             WithCredential(ModelObject("deploy-model", kDefaultDeployUrl, "pb"), secret));
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    gm->Send("insert", WithCredential(job->Object(), secret));
    gm->Send("insert", WithCredential(JointInferenceObject(), secret));
    Barrier();
  }
  // Some job state and outbox traffic, too.
  AppendFile(rootfs + kIndex, Join(IndexLineList(1, 1000)));
  WaitSampleCount(1000);
  EXPECT_EQ(NextJob().content, Il1(kBaseModelUrl));
  Barrier();

  auto contains_secret = [&](const std::string& s) {
    for (const auto& secret : secrets) {
      if (s.find(secret) != std::string::npos) return true;
    }
    return false;
  };
  const std::set<std::string> names{"default/dataset/incremental-dataset",
                                    "default/model/initial-model", "default/model/deploy-model",
                                    "default/incrementallearningjob/helmet-detection-demo",
                                    "default/jointinferenceservice/helmet-detection-inference"};
  std::set<std::string> seen;
  for (const auto& row : Query(db, "SELECT name, type_meta, object_meta, spec FROM resources")) {
    seen.insert(row[0]);
    for (const auto& col : row) EXPECT_FALSE(contains_secret(col)) << row[0] << ": " << col;
    auto meta = Json::parse(row[2], nullptr, false);
    if (meta.is_object() && meta.contains("annotations")) {
      EXPECT_FALSE(meta["annotations"].contains("sedna.io/credential")) << row[0] << ": " << row[2];
    }
  }
  for (const auto& n : names) EXPECT_TRUE(seen.count(n)) << n << " not stored";
  for (const auto& row : Query(db, "SELECT scope, key, value FROM lc_state")) {
    EXPECT_FALSE(contains_secret(row[2])) << "lc_state " << row[0] << " " << row[1];
  }
  for (const auto& frame : OutboxFrames()) {
    EXPECT_FALSE(contains_secret(frame) || contains_secret(Decode(frame).content)) << frame;
  }
  // Every byte of the database, including pages not (or no longer) reachable by SQL.
  auto check_files = [&](const char* when) {
    for (const std::string& f : {db, db + "-wal", db + "-journal"}) {
      if (!stdfs::exists(f)) continue;
      const std::string bytes = ReadFile(f);
      EXPECT_FALSE(contains_secret(bytes)) << "credential in " << f << " (" << when << ")";
    }
  };
  check_files("daemon running");
  EXPECT_FALSE(contains_secret(lc->Log())) << "credential in the log";
  EXPECT_EQ(lc->Stop(), 0);
  check_files("after shutdown");
}

// ---------------------------------------------------------------- [P:B15]: restart without a GM

TEST_F(IlBugsTest, B15_ReloadWithoutGm) {
  StartLc();
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  Barrier();
  ASSERT_EQ(lc->Stop(), 0);

  // No GM at all: not running, and the LC is not told of one.
  gm->Shutdown();
  AppendFile(rootfs + kIndex, Join(IndexLineList(1001, 1700)));
  ASSERT_NO_FATAL_FAILURE(StartLc({.with_gm = false}));
  // The job was reloaded from SQLite: its train worker's report is accepted and queued (in the
  // intake journal before the 200, committed to the outbox within --report-batch-ms).
  EXPECT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);
  auto forwarded = [&] {
    for (const auto& f : OutboxFrames()) {
      if (ForwardedLoss(Decode(f)) == 0.5) return true;
    }
    return false;
  };
  EXPECT_TRUE(WaitUntil(forwarded, seconds(10))) << "the train report is not in the outbox";
  // The samples appended while it was down are counted (once) and queued as well.
  auto has_count = [&] {
    for (const auto& f : OutboxFrames()) {
      if (Decode(f).content == R"({"numberOfSamples":1700})") return true;
    }
    return false;
  };
  EXPECT_TRUE(WaitUntil(has_count, seconds(10))) << "numberOfSamples 1700 never queued";
  const std::vector<std::string> queued = OutboxFrames();
  EXPECT_EQ(queued.size(), 2u);
  EXPECT_NE(lc->Log().find("GM_ADDRESS is not set"), std::string::npos);
  ASSERT_EQ(lc->Stop(), 0);

  // With the GM back: exactly the queued frames, in order, then the round carries on.
  gm->Restart();
  ASSERT_NO_FATAL_FAILURE(StartLc());
  for (size_t i = 0; i < queued.size(); ++i) {
    auto f = gm->NextFrame(seconds(20));
    ASSERT_TRUE(f) << "queued frame " << i << " never arrived";
    EXPECT_EQ(f->raw, queued[i]) << "frame " << i;
  }
  // The report and the count are committed by different events (the intake's batch, the
  // catch-up pass on the pool), so either may be queued first.
  UpstreamFrame il2;
  for (const auto& f : queued) {
    if (ForwardedLoss(Decode(f)) == 0.5) il2 = Decode(f);
  }
  ASSERT_EQ(ForwardedLoss(il2), 0.5);
  job->Report(il2.content);
  job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  EXPECT_EQ(NextJob().content, Il3(kDefaultDeployUrl));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.txt"),
            Split(IndexLineList(1, 1000)).second);
  Barrier();
  auto extra = gm->NextFrame(milliseconds(0));
  EXPECT_FALSE(extra) << "extra frame: " << extra->content;
  EXPECT_EQ(lc->Stop(), 0);
}

// With --report-batch-ms 0 a report is committed before its reply, as without the journal.
TEST_F(IlBugsTest, ReportBatchZeroCommitsBeforeTheReply) {
  StartLc({.args = {"--report-batch-ms", "0", "--backoff-max-ms", "300"}});
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  Barrier();
  gm->Shutdown();  // the forwarded frame stays in the outbox
  ASSERT_TRUE(WaitUntil([&] { return Metric("sedna_lc_gm_connected") == 0; }, seconds(10)));
  EXPECT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);
  bool forwarded = false;
  for (const auto& f : OutboxFrames()) forwarded |= ForwardedLoss(Decode(f)) == 0.5;
  EXPECT_TRUE(forwarded) << "the train report was not committed before the 200";
  EXPECT_EQ(Metric("sedna_lc_reports_pending"), 0);
  EXPECT_EQ(lc->Stop(), 0);
}

// A batch of acknowledged reports whose commit fails (another process holds the database's write
// lock; the LC waits out its 5 s busy timeout) stays pending and is retried, and a later event of
// the job waits behind it: here the GM moves the job to Eval/Waiting meanwhile, and the LC must
// not answer it before it has the trained model from the train report (it would send Eval Failed
// or evaluate the wrong model).
TEST_F(IlBugsTest, ReportBatchThatCannotCommitStaysFirst) {
  StartLc();
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  Barrier();
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + kTrainedModelUrl, "NEW-MODEL-ROUND-1");
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  sqlite3_busy_timeout(holder, 5000);  // the LC may be committing or checkpointing right now
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);
  auto logged = [&](const char* what) {
    return WaitUntil([&] { return lc->Log().find(what) != std::string::npos; }, seconds(60));
  };
  EXPECT_TRUE(logged("events for jobs wait behind them")) << "the failed batch was not reported";
  job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  EXPECT_TRUE(logged("update: waits behind 1 acknowledged worker report(s)"));
  // A report now would overtake the waiting update: refused, the worker retries.
  HttpResult late = HttpRequest(port, "POST", "/sedna/workers/train-worker-h4k9q/info",
                                TrainReport("train-worker-h4k9q", 0.7),
                                {"Content-Type: application/json"}, 20000);
  EXPECT_EQ(late.status, 500) << late.raw;
  ASSERT_EQ(sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(holder);

  // The retry commits the report (its forward first), then the GM's frame is applied: Eval Ready
  // names the model the report carried.
  UpstreamFrame il2 = NextJob();
  ASSERT_EQ(ForwardedLoss(il2), 0.5) << il2.content;
  EXPECT_EQ(NextJob().content, Il3(kDefaultDeployUrl));
  EXPECT_TRUE(WaitUntil([&] { return Metric("sedna_lc_reports_pending") == 0; }, seconds(10)));
  EXPECT_NE(lc->Log().find("worker reports: the delayed batch is committed"), std::string::npos);
  EXPECT_EQ(lc->Stop(), 0);
}

// /readyz answers 503, naming the reason, while database commits fail, and 200 again once one
// succeeds ([D:I15]: it stayed 200 while nothing could be committed).
TEST_F(IlBugsTest, ReadyzIs503WhileCommitsFailAndRecovers) {
  StartLc();
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  Barrier();
  stdfs::create_directories(rootfs + "/output/train/1");
  EXPECT_EQ(HttpRequest(status_port, "GET", "/readyz", "", {}).status, 200);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  sqlite3_busy_timeout(holder, 5000);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(PostWorker("train-worker-h4k9q", TrainReport("train-worker-h4k9q", 0.5)), kOk);
  HttpResult r;
  EXPECT_TRUE(WaitUntil(
      [&] {
        r = HttpRequest(status_port, "GET", "/readyz", "", {});
        return r.status == 503;
      },
      seconds(60)))
      << "/readyz stayed " << r.status << " while the batch could not commit";
  EXPECT_NE(r.body.find("database commits fail"), std::string::npos) << r.body;
  EXPECT_NE(lc->Log().find("/readyz answers 503"), std::string::npos);
  ASSERT_EQ(sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(holder);
  EXPECT_TRUE(
      WaitUntil([&] { return HttpRequest(status_port, "GET", "/readyz", "", {}).status == 200; },
                seconds(20)))
      << "/readyz did not recover after the retry committed";
  EXPECT_NE(lc->Log().find("database commits work again"), std::string::npos);
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- [P:W1], [P:B21]: GM outage

TEST_F(IlBugsTest, W1_B21_GmOutage) {
  constexpr int kReports = 150;  // more than Go's 100-slot queues
  ASSERT_NO_FATAL_FAILURE(StartLc({.args = {"--backoff-max-ms", "300"}}));
  gm->Send("insert", DatasetObject());
  job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
  Sync();
  Barrier();

  gm->Shutdown();
  ASSERT_TRUE(WaitUntil([&] { return Metric("sedna_lc_gm_connected") == 0; }, seconds(10)))
      << "the LC did not notice that the GM went away";
  // Samples keep being ingested and the train trigger keeps working.
  const auto lines = IndexLineList(1, 1000);
  AppendFile(rootfs + kIndex, Join(lines));
  auto ready_queued = [&] {
    for (const auto& f : OutboxFrames()) {
      if (IsTrainReady(Decode(f))) return true;
    }
    return false;
  };
  ASSERT_TRUE(WaitUntil(ready_queued, seconds(20))) << "no Train Ready produced during the outage";
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(lines).first);
  // Workers are answered at once, however long the GM is away.
  int64_t slowest_ms = 0;
  for (int i = 0; i < kReports; ++i) {
    const std::string name = "train-worker-" + std::to_string(i);
    const auto t0 = Clock::now();
    HttpResult r =
        HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", TrainReport(name, i + 0.5),
                    {"Content-Type: application/json"}, 1000);
    const int64_t ms = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
    slowest_ms = std::max(slowest_ms, ms);
    ASSERT_EQ(r.status, 200) << "report " << i << ": " << r.raw;
  }
  EXPECT_LT(slowest_ms, 1000) << "a worker POST took " << slowest_ms << " ms during the outage";
  ASSERT_TRUE(WaitUntil([&] { return Metric("sedna_lc_reports_pending") == 0; }, seconds(10)))
      << "acknowledged reports never committed";
  const std::vector<std::string> produced = OutboxFrames();
  EXPECT_EQ(Metric("sedna_lc_outbox_messages"), static_cast<int64_t>(produced.size()));
  EXPECT_EQ(Metric("sedna_lc_gm_connected"), 0);

  // The GM is back on the same address: every message once, in the order produced.
  gm->Restart();
  ASSERT_TRUE(gm->server().WaitForConnection(seconds(10))) << "no reconnection";
  std::vector<UpstreamFrame> got;
  for (size_t i = 0; i < produced.size(); ++i) {
    auto f = gm->NextFrame(seconds(20));
    ASSERT_TRUE(f) << "frame " << i << " of " << produced.size() << " never arrived";
    EXPECT_EQ(f->raw, produced[i]) << "frame " << i;
    got.push_back(std::move(*f));
  }
  // What they are: the counts, the Train Ready, then the reports in POST order.
  std::vector<std::string> job_msgs;
  int64_t last_count = -1;
  for (const auto& f : got) {
    if (f.header.resource_kind == "Dataset") {
      last_count = f.body.at("numberOfSamples").get<int64_t>();
    } else if (IsTrainReady(f)) {
      EXPECT_EQ(f.content, Il1(kBaseModelUrl));
      job_msgs.push_back("ready");
    } else {
      job_msgs.push_back(std::to_string(ForwardedLoss(f)));
    }
  }
  std::vector<std::string> expected{"ready"};
  for (int i = 0; i < kReports; ++i) expected.push_back(std::to_string(i + 0.5));
  EXPECT_EQ(job_msgs, expected);
  EXPECT_EQ(last_count, 1000);
  Barrier();
  auto extra = gm->NextFrame(milliseconds(0));
  EXPECT_FALSE(extra) << "duplicate or extra frame: " << extra->raw;
  EXPECT_EQ(Metric("sedna_lc_outbox_messages"), 0);
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- half-open GM connection

TEST_F(IlBugsTest, HalfOpenDetectedByPing) {
  ASSERT_NO_FATAL_FAILURE(StartLc({.args = {"--ping-interval-ms", "200", "--ping-timeout-ms", "300",
                                            "--backoff-max-ms", "300"}}));
  Barrier();
  // The GM stops reading: TCP stays up, pings go unanswered (Go: the LC waits forever).
  const auto t0 = Clock::now();
  gm->server().SetUnresponsive(true);
  ASSERT_TRUE(gm->server().WaitForConnection(seconds(5))) << "no reconnection within 5 s";
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
  EXPECT_LT(took, seconds(5));
  EXPECT_NE(lc->Log().find("ping timeout"), std::string::npos);
  // Once the GM answers again, the link carries frames both ways. (A barrier sent to a
  // connection the LC has just given up is lost; try again on the next one.)
  gm->server().SetUnresponsive(false);
  bool answered = false;
  for (int attempt = 0; attempt < 5 && !answered; ++attempt) {
    answered = TryBarrier(seconds(3));
    if (!answered) gm->server().WaitForConnection(seconds(2));
  }
  EXPECT_TRUE(answered);
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- [P:B22]: temp dirs

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::set<std::string> TmpEntries() {
  std::set<std::string> s;
  std::error_code ec;
  for (stdfs::directory_iterator it("/tmp", ec), end; !ec && it != end; it.increment(ec)) {
    s.insert(it->path().filename().string());
  }
  return s;
}

// A directory holding what the LC writes (sample files, models).
bool HoldsLcFiles(const stdfs::path& dir) {
  std::error_code ec;
  for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n == "data.txt" || n == "data.csv" || n == "dataIndex.txt" ||
        n.find(".pb") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST_F(IlBugsTest, B22_NoTempDirsLeft) {
  const std::string own_tmpdir = tmp + "/tmpdir";  // TMPDIR for the LC
  stdfs::create_directories(own_tmpdir);
  const std::set<std::string> before = TmpEntries();
  ASSERT_NO_FATAL_FAILURE(StartLc({.env = {{"TMPDIR", own_tmpdir}}}));
  ASSERT_NO_FATAL_FAILURE(RunToTrainRunning());
  ASSERT_NO_FATAL_FAILURE(TrainEvalDeploy("NEW-MODEL-ROUND-1"));
  Barrier();
  EXPECT_EQ(lc->Stop(), 0);

  // /tmp is shared with other processes: a new entry counts when it is ours and looks like the
  // Go LC's /tmp/<random int63> or holds what the LC writes.
  std::vector<std::string> leaked;
  for (const auto& name : TmpEntries()) {
    if (before.count(name)) continue;
    const stdfs::path p = stdfs::path("/tmp") / name;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    if (AllDigits(name) || HoldsLcFiles(p)) leaked.push_back(p.string());
  }
  EXPECT_TRUE(leaked.empty()) << "new directories in /tmp: " << ::testing::PrintToString(leaked);
  EXPECT_TRUE(stdfs::is_empty(own_tmpdir)) << "the LC left files in its TMPDIR";
  // No temp file left anywhere the LC writes (rootfs outputs, deploy target, database, spool).
  std::vector<std::string> temps;
  for (const auto& e : stdfs::recursive_directory_iterator(tmp)) {
    const std::string n = e.path().filename().string();
    if (n.find(".tmp") != std::string::npos) temps.push_back(e.path().string());
  }
  EXPECT_TRUE(temps.empty()) << ::testing::PrintToString(temps);
}

}  // namespace
}  // namespace sedna::testing
