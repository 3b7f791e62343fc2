// Jobs with datasets, outputs and models on S3 (docs/protocol.md §P2.5, §P7.2, §P7.4, §P9.3): the
// real sedna-lc binary against the GM emulator and a real S3 server (moto_server, signature
// checking on). The GM emulator puts the sedna.io/credential annotation on every object, as
// Sedna's GM does for objects with spec.credentialName.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <sstream>
#include <thread>

#include "adapters/s3/s3_client.h"
#include "core/split.h"
#include "fault_proxy.h"
#include "gm_emulator.h"
#include "lc_process.h"
#include "moto_server.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

constexpr const char* kBucket = "kubeedge";
constexpr const char* kDatasetName = "default/s3-dataset";  // as every LC log line names it

std::string Line(int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "train_images/%06d.jpg %d,%d,1", n, n % 97, n % 89);
  return buf;
}

std::string Lines(int from, int to) {
  std::string s;
  for (int n = from; n <= to; ++n) s += Line(n) + "\n";
  return s;
}

// Train and eval lines of samples from..to (running-totals split), and their dataIndex.txt
// bodies (first token of each line).
struct SplitFiles {
  std::string train, eval, train_index, eval_index;
};
SplitFiles Split(int from, int to, double p) {
  SplitFiles s;
  for (int n = from; n <= to; ++n) {
    const std::string l = Line(n);
    const bool train = core::IsTrainSample(p, n);
    (train ? s.train : s.eval) += l + "\n";
    (train ? s.train_index : s.eval_index) += l.substr(0, l.find(' ')) + "\n";
  }
  return s;
}

// The header line plus the rows from..to that the running-totals split sends to train (or eval).
std::string CsvSplit(int from, int to, double p, bool train) {
  return std::string(kCsvHeader) + "\n" + CsvSplitRows(from, to, p, train);
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class S3JobsTest : public ::testing::Test {
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
    bucket_ = std::string(kBucket) + "-" + std::to_string(++buckets_);
    ASSERT_TRUE(moto_->CreateBucket(bucket_).ok());
    tmp = MakeTempDir("sedna-s3jobs-");
    rootfs = tmp + "/rootfs";
    stdfs::create_directories(rootfs);
    gm = std::make_unique<GmEmulator>();
    port = FreePort();
    endpoint_ = moto_->endpoint();
  }

  // with_status: serve /metrics on a free port (status_port) instead of --status-port 0.
  void StartLc(bool with_status = false) {
    status_port = with_status ? FreePort() : 0;
    lc = std::make_unique<LcProcess>(
        std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
        std::map<std::string, std::string>{{"GM_ADDRESS", gm->address()},
                                           {"NODENAME", "edge-node"},
                                           {"BIND_PORT", std::to_string(port)},
                                           {"ROOTFS_MOUNT_DIR", rootfs}},
        std::vector<std::string>{"--db", tmp + "/db/database.db", "--status-port",
                                 std::to_string(status_port), "--log-level", "debug",
                                 "--s3-timeout-ms", "3000", "--s3-retries", "1", "--deploy-wait",
                                 "0.2"},
        tmp + "/lc.log");
    ASSERT_TRUE(gm->server().WaitForConnection(20s)) << lc->Log();
  }

  void TearDown() override {
    if (HasFailure() && lc) std::cerr << "---- sedna-lc log ----\n" << lc->Log();
    lc.reset();
    gm.reset();
    if (!tmp.empty()) stdfs::remove_all(tmp);
  }

  std::string Url(const std::string& key) const { return "s3://" + bucket_ + "/" + key; }

  // The annotation value the GM injects (§P2.5): Go's json.Marshal of the Secret's map. An empty
  // endpoint is moto's own; a FaultProxy's puts the proxy between the LC and moto.
  std::string Credential(const std::string& secret, const std::string& endpoint = "") const {
    return Json{{"ACCESS_KEY_ID", moto_->access_key()},
                {"SECRET_ACCESS_KEY", secret},
                {"s3-endpoint", endpoint.empty() ? endpoint_ : endpoint},
                {"s3-usehttps", "0"}}
        .dump();
  }

  Json Meta(const std::string& name, const std::string& secret = "",
            const std::string& endpoint = "") const {
    return Json{{"name", name},
                {"namespace", "default"},
                {"uid", "7b3c2f0e-1111-4c3a-9c1e-000000000001"},
                {"annotations",
                 {{"sedna.io/credential",
                   Credential(secret.empty() ? moto_->secret_key() : secret, endpoint)}}}};
  }

  Json DatasetObject(const std::string& format = "txt", const std::string& secret = "",
                     const std::string& endpoint = "") const {
    return Json{{"kind", "Dataset"},
                {"apiVersion", "sedna.io/v1alpha1"},
                {"metadata", Meta("s3-dataset", secret, endpoint)},
                {"spec",
                 {{"url", Url("data/helmet/train_data." + format)},
                  {"format", format},
                  {"nodeName", "edge-node"},
                  {"credentialName", "mysecret"}}},
                {"status", {{"numberOfSamples", 0}}}};
  }

  Json ModelObject(const std::string& name, const std::string& url,
                   const std::string& format) const {
    return Json{{"kind", "Model"},
                {"apiVersion", "sedna.io/v1alpha1"},
                {"metadata", Meta(name)},
                {"spec", {{"url", url}, {"format", format}, {"credentialName", "mysecret"}}},
                {"status", Json::object()}};
  }

  Json IlJobObject(const std::string& output_dir, double threshold = 500) const {
    return Json{
        {"kind", "IncrementalLearningJob"},
        {"apiVersion", "sedna.io/v1alpha1"},
        {"metadata", Meta("helmet")},
        {"spec",
         {{"dataset", {{"name", "s3-dataset"}, {"trainProb", 0.8}}},
          {"initialModel", {{"name", "initial-model"}}},
          {"trainSpec",
           {{"trigger",
             {{"checkPeriodSeconds", 1},
              {"condition",
               {{"operator", ">"}, {"threshold", threshold}, {"metric", "num_of_samples"}}}}}}},
          {"deploySpec",
           {{"model", {{"name", "deploy-model"}}},
            {"trigger",
             {{"condition",
               {{"operator", ">"}, {"threshold", 0.1}, {"metric", "precision_delta[0]"}}}}}}},
          {"credentialName", "mysecret"},
          {"outputDir", output_dir}}}};
  }

  // The §P2.4 lifelong-learning job (trigger: more than 300 train samples, checked every second),
  // its S3 requests sent to `endpoint` ("" = moto's).
  Json LlJobObject(const std::string& output_dir, const std::string& endpoint = "") const {
    Json job = sedna::testing::LlJobObject(
        {.dataset = "s3-dataset", .check_period_seconds = 1, .output_dir = output_dir});
    job["metadata"] = Meta("atcii-classifier-demo", "", endpoint);
    job["spec"]["credentialName"] = "mysecret";
    return job;
  }

  void Put(const std::string& key, const std::string& data) {
    s3::Client c(moto_->credentials());
    Status s = c.PutBytes({bucket_, key}, data);
    ASSERT_TRUE(s.ok()) << s.message();
  }

  std::string Get(const std::string& key) {
    s3::Client c(moto_->credentials());
    std::string out;
    Status s = c.Get({bucket_, key}, 0, -1, [&](std::string_view chunk) {
      out.append(chunk);
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << key << ": " << s.message();
    return out;
  }

  UpstreamFrame NextJob(const std::string& kind = "IncrementalLearningJob") {
    auto f = gm->Next(kind, 30s);
    if (!f) throw std::runtime_error("no " + kind + " message from the LC");
    return *f;
  }

  // Every key under `prefix` in this test's bucket (or `bucket`). No '/' in the prefix: moto's
  // signature check mishandles %2F in a query (see s3_client_test.cc).
  std::vector<std::string> Keys(const std::string& prefix, const std::string& bucket = "") {
    s3::Client c(moto_->credentials());
    auto r = c.List(bucket.empty() ? bucket_ : bucket, prefix);
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? *r : std::vector<std::string>{};
  }

  // The next count of Dataset `name`; counts of other Datasets (barriers) are kept for later.
  std::optional<UpstreamFrame> NextDataset(const std::string& name,
                                           std::chrono::milliseconds timeout = 30s) {
    for (auto it = held.begin(); it != held.end(); ++it) {
      if (it->header.resource_name == name) {
        UpstreamFrame f = std::move(*it);
        held.erase(it);
        return f;
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto f = gm->Next("Dataset", std::max(left, std::chrono::milliseconds(0)));
      if (!f) return std::nullopt;
      if (f->header.resource_name == name) return f;
      held.push_back(std::move(*f));
    }
  }

  // A round trip through the websocket: when the count of a new host-path Dataset arrives, every
  // frame sent before it was handled and every upstream frame queued before it was delivered.
  void Barrier() {
    const std::string name = "barrier-" + std::to_string(++barriers);
    stdfs::create_directories(rootfs + "/barrier");
    WriteFile(rootfs + "/barrier/index.txt", "barrier_images/1.jpg 1\n");
    gm->Send("insert",
             Json{{"kind", "Dataset"},
                  {"apiVersion", "sedna.io/v1alpha1"},
                  {"metadata", {{"name", name}, {"namespace", "default"}}},
                  {"spec",
                   {{"url", "/barrier/index.txt"}, {"format", "txt"}, {"nodeName", "edge-node"}}},
                  {"status", {{"numberOfSamples", 0}}}});
    ASSERT_TRUE(NextDataset(name)) << "no answer to " << name;
  }

  // No further message of `kind`: after a barrier and a short grace for file work in flight.
  void ExpectNoJobMessage(const std::string& kind, const std::string& why) {
    Barrier();
    auto extra = gm->Next(kind, 500ms);
    EXPECT_FALSE(extra) << why << ": " << extra->content;
  }

  // The first line of the LC log containing `text` ("" if none).
  std::string LogLine(const std::string& text) {
    std::istringstream in(lc->Log());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(text) != std::string::npos) return line;
    }
    return "";
  }

  // A counter from GET /metrics (StartLc(true)); -1 if absent.
  int64_t Metric(const std::string& name) {
    HttpResult r = HttpRequest(status_port, "GET", "/metrics", "", {});
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(name + " ", 0) == 0) return std::stoll(line.substr(name.size() + 1));
    }
    return -1;
  }

  // Waits until the LC has finished `n` more S3 index syncs (failed ones included) than `from`.
  bool WaitPolls(int64_t from, int64_t n, std::chrono::seconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Metric("sedna_lc_s3_index_polls_total") >= from + n) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // ---- the GM's side of each LL report (§P4.2), re-sending the job after every change

  void Sync(GmJob& job) {
    ASSERT_TRUE(job.Downstream().send_job);
    gm->Send("insert", job.Object());
  }
  void GmCreatesPod(GmJob& job, const UpstreamFrame& ready, Stage stage) {
    auto actions = job.Report(ready.content);
    ASSERT_EQ(actions.size(), 1u);
    auto* create = std::get_if<core::gm::CreatePod>(&actions[0]);
    ASSERT_TRUE(create);
    EXPECT_EQ(create->stage, stage);
    Sync(job);
    job.SetPod(stage, PodPhase::kRunning);
    Sync(job);
  }
  void GmStageCompleted(GmJob& job, const UpstreamFrame& completed, Stage stage,
                        const std::string& next) {
    job.Report(completed.content);
    EXPECT_EQ(job.LastCondition(), next);
    Sync(job);
    job.SetPod(stage, PodPhase::kSucceeded);
    Sync(job);
  }
  void GmDeployReady(GmJob& job, const UpstreamFrame& ll5) {
    auto actions = job.Report(ll5.content);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
    Sync(job);
    job.SetPod(Stage::kDeploy, PodPhase::kRunning);
    EXPECT_EQ(job.LastCondition(), "Train/Waiting");
    Sync(job);
  }

  // Waits for numberOfSamples == n; every count on the way must be below it.
  void WaitSampleCount(int64_t n) {
    for (;;) {
      auto f = NextDataset("s3-dataset");
      ASSERT_TRUE(f) << "numberOfSamples " << n << " never reported";
      const int64_t got = f->body.at("numberOfSamples").get<int64_t>();
      ASSERT_LE(got, n);
      if (got == n) return;
    }
  }

  // Waits until the LC log contains `text` (the log is the observable: there is no other event).
  bool WaitLog(const std::string& text, std::chrono::seconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (lc->Log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  std::string PostWorker(const std::string& name, const std::string& body) {
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", body);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  static inline MotoServer* moto_ = nullptr;
  static inline std::string problem_;
  static inline bool skip_ = false;
  static inline int buckets_ = 0;
  std::string bucket_, endpoint_;
  std::string tmp, rootfs;
  uint16_t port = 0, status_port = 0;
  int barriers = 0;
  std::vector<UpstreamFrame> held;  // counts of other Datasets, kept by NextDataset
  std::unique_ptr<GmEmulator> gm;
  std::unique_ptr<LcProcess> lc;
};

// A full IL round with the dataset, the outputs and both models on S3: the index is polled, the
// round files and their dataIndex.txt are uploaded, the Ready messages carry dataIndexURL
// (§P3.3 IL-1s), and the deploy is a server-side copy.
TEST_F(S3JobsTest, IncrementalLearningRoundOnS3) {
  StartLc();
  const std::string out = Url("output");
  Put("models/deploy_model/saved_model.pb", "OLD-DEPLOYED-MODEL-BYTES");
  Put("data/helmet/train_data.txt", "");
  gm->Send("insert", DatasetObject());
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject(out));
  gm->Send("insert", job.Object());
  gm->Send("insert", ModelObject("initial-model", Url("models/base_model"), "ckpt"));

  Put("data/helmet/train_data.txt", Lines(1, 1000));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.content,
            R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":")" +
                Url("models/base_model") + R"("}],"dataURL":")" + out +
                R"(/data/train/1/data.txt","dataIndexURL":")" + out +
                R"(/data/train/1/dataIndex.txt","outputDir":")" + out +
                R"(/train/1"},"output":null})");
  const SplitFiles r1 = Split(1, 1000, 0.8);
  EXPECT_EQ(Get("output/data/train/1/data.txt"), r1.train);
  EXPECT_EQ(Get("output/data/train/1/dataIndex.txt"), Url("data/helmet/") + "\n" + r1.train_index);
  EXPECT_FALSE(stdfs::exists(rootfs + "/" + bucket_)) << "nothing written under the rootfs";
  job.Report(il1.content);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);

  Put("output/train/1/model.pb", "NEW-MODEL-ROUND-1");
  EXPECT_EQ(
      PostWorker(
          "train-worker-s3",
          R"({"name": "train-worker-s3", "namespace": "default", "ownerName": "helmet", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": ")" +
              out +
              R"(/train/1/model.pb", "metrics": {"loss": 0.8}}, {"format": "ckpt", "url": ")" +
              out + R"(/train/1", "metrics": {"loss": 0.8}}]})"),
      kOk);
  job.Report(NextJob().content);  // IL-2
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job.LastCondition(), "Eval/Waiting");
  gm->Send("insert", job.Object());
  gm->Send("insert", ModelObject("deploy-model", Url("models/deploy_model/saved_model.pb"), "pb"));

  UpstreamFrame il3 = NextJob();
  EXPECT_EQ(il3.content,
            R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":")" + out +
                R"(/train/1/model.pb"},{"format":"pb","url":")" +
                Url("models/deploy_model/saved_model.pb") + R"("}],"dataURL":")" + out +
                R"(/data/eval/1/data.txt","dataIndexURL":")" + out +
                R"(/data/eval/1/dataIndex.txt"},"output":null})");
  EXPECT_EQ(Get("output/data/eval/1/data.txt"), r1.eval);
  EXPECT_EQ(Get("output/data/eval/1/dataIndex.txt"), Url("data/helmet/") + "\n" + r1.eval_index);
  job.Report(il3.content);
  job.SetPod(Stage::kEval, PodPhase::kRunning);
  PostWorker(
      "eval-worker-s3",
      R"({"name": "eval-worker-s3", "namespace": "default", "ownerName": "helmet", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": ")" +
          out +
          R"(/train/1/model.pb", "metrics": {"precision": [0.81, 0.74]}}, {"format": "pb", "url": ")" +
          Url("models/deploy_model/saved_model.pb") +
          R"(", "metrics": {"precision": [0.66, 0.71]}}]})");
  job.Report(NextJob().content);  // IL-4
  UpstreamFrame il5 = NextJob();
  EXPECT_EQ(il5.content,
            R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":")" +
                out + R"(/train/1/model.pb"},{"format":"pb","url":")" +
                Url("models/deploy_model/saved_model.pb") + R"("}]},"output":null})");
  EXPECT_EQ(Get("models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  EXPECT_EQ(lc->Stop(), 0);
  // [P:B23]: no credential in the database.
  const std::string db = ReadFile(tmp + "/db/database.db") + ReadFile(tmp + "/db/database.db-wal");
  EXPECT_EQ(db.find(moto_->secret_key()), std::string::npos);
  EXPECT_EQ(lc->Log().find(moto_->secret_key()), std::string::npos) << "secret in the log";
}

// A full LL version with a csv dataset and the outputs on S3: the csv rounds carry no
// dataIndexURL (§P3.4) and have no dataIndex.txt object, each data.csv starts with the header, and
// the deploy is one server-side COPY of the eval result (the job's S3 traffic goes through a
// relaying proxy, so the test sees every request the LC sent for the job).
TEST_F(S3JobsTest, LifelongLearningRoundOnS3) {
  FaultProxy relay(moto_->port());
  StartLc();
  const std::string out = Url("output");
  const std::string kLl = "LifelongLearningJob";
  Put("data/helmet/train_data.csv", std::string(kCsvHeader) + "\n");
  gm->Send("insert", DatasetObject("csv"));
  GmJob job(core::gm::JobKind::kLifelong, LlJobObject(out, relay.endpoint()));
  ASSERT_EQ(job.LastCondition(), "Train/Waiting");
  Sync(job);

  // 600 rows, 480 of them train samples (> 300): version 1.
  Put("data/helmet/train_data.csv", Csv(600));
  WaitSampleCount(600);
  UpstreamFrame ll1 = NextJob(kLl);
  EXPECT_EQ(ll1.header.resource_name, "atcii-classifier-demo");
  EXPECT_EQ(ll1.content, R"({"phase":"train","status":"ready","input":{"dataURL":")" + out +
                             R"(/data/train/1/data.csv","outputDir":")" + out +
                             R"(/train/1"},"output":null})");
  EXPECT_EQ(Get("output/data/train/1/data.csv"), CsvSplit(1, 600, 0.8, true));
  GmCreatesPod(job, ll1, Stage::kTrain);

  Put("output/train/1/index.pkl", "TRAIN-INDEX-V1");
  EXPECT_EQ(
      PostWorker(
          "train-worker-5xq2m",
          R"({"name": "train-worker-5xq2m", "namespace": "default", "ownerName": "atcii-classifier-demo", "ownerKind": "lifelonglearningjob", "kind": "train", "status": "completed", "results": [{"format": "pkl", "url": ")" +
              out + R"(/train/1/index.pkl", "metrics": {"summer_2": {"mlogloss": 0.91}}}]})"),
      kOk);
  UpstreamFrame ll2 = NextJob(kLl);
  EXPECT_EQ(
      ll2.content,
      R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","metrics":{"summer_2":{"mlogloss":0.91}},"url":")" +
          out + R"(/train/1/index.pkl"}],"ownerInfo":null}})");
  GmStageCompleted(job, ll2, Stage::kTrain, "Eval/Waiting");

  UpstreamFrame ll3 = NextJob(kLl);
  EXPECT_EQ(ll3.content,
            R"({"phase":"eval","status":"ready","input":{"models":[{"format":"pkl","url":")" + out +
                R"(/train/1/index.pkl"}],"dataURL":")" + out +
                R"(/data/eval/1/data.csv","outputDir":")" + out + R"(/eval/1"},"output":null})");
  EXPECT_EQ(Get("output/data/eval/1/data.csv"), CsvSplit(1, 600, 0.8, false));
  GmCreatesPod(job, ll3, Stage::kEval);

  // Bytes with a NUL and no trailing newline: the copy is exact.
  const std::string model1("EVAL-INDEX-V1\0\x01\x02-pickle-bytes-of-version-one", 45);
  Put("output/eval/1/index.pkl", model1);
  EXPECT_EQ(
      PostWorker(
          "eval-worker-2bq7d",
          R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "atcii-classifier-demo", "ownerKind": "lifelonglearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pkl", "url": ")" +
              out + R"(/eval/1/index.pkl", "metrics": {"precision_score": 0.62}}]})"),
      kOk);
  UpstreamFrame ll4 = NextJob(kLl);
  EXPECT_EQ(
      ll4.content,
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","metrics":{"precision_score":0.62},"url":")" +
          out + R"(/eval/1/index.pkl"}],"ownerInfo":null}})");
  // The deploy answers the GM's (Deploy, Waiting), not the eval report (docs/protocol.md §H3.2).
  GmStageCompleted(job, ll4, Stage::kEval, "Deploy/Waiting");
  UpstreamFrame ll5 = NextJob(kLl);
  EXPECT_EQ(ll5.content,
            R"({"phase":"deploy","status":"ready","input":{"models":[{"format":"pkl","url":")" +
                out + R"(/eval/1/index.pkl"}]},"output":null})");
  EXPECT_EQ(Get("output/deploy/index.pkl"), model1);
  // One server-side COPY: the model's bytes never passed through the LC.
  const std::string sent = relay.requests();
  EXPECT_NE(sent.find("PUT /" + bucket_ + "/output/deploy/index.pkl HTTP/1.1\r\n"),
            std::string::npos);
  EXPECT_NE(sent.find("x-amz-copy-source: /" + bucket_ + "/output/eval/1/index.pkl\r\n"),
            std::string::npos);
  EXPECT_EQ(sent.find("GET /" + bucket_ + "/output/eval/1/index.pkl"), std::string::npos);
  EXPECT_EQ(sent.find(model1), std::string::npos);
  GmDeployReady(job, ll5);
  ExpectNoJobMessage(kLl, "after version 1 was deployed and the job re-sent");

  // Exactly these objects: no dataIndex.txt for csv rounds, no staging leftovers.
  EXPECT_EQ(Keys("output"),
            (std::vector<std::string>{"output/data/eval/1/data.csv", "output/data/train/1/data.csv",
                                      "output/deploy/index.pkl", "output/eval/1/index.pkl",
                                      "output/train/1/index.pkl"}));
  EXPECT_FALSE(stdfs::exists(rootfs + "/output")) << "nothing written under the rootfs";
  EXPECT_EQ(lc->Stop(), 0);
  EXPECT_EQ(lc->Log().find(moto_->secret_key()), std::string::npos) << "secret in the log";
}

// The Dataset's credential has a wrong secret: the sync error names the Dataset and S3's code,
// never the secret, and no count is sent; once the GM re-sends the Dataset with the right secret
// the count arrives once, and the round's train file has every sample once.
TEST_F(S3JobsTest, WrongSecretIsReportedAndRetried) {
  StartLc();
  const std::string wrong = "WRONGwrongWRONGwrongWRONGwrongWRONGwrong";
  ASSERT_NE(wrong, moto_->secret_key());
  const std::string out = Url("output");
  Put("data/helmet/train_data.txt", Lines(1, 1000));
  // The job first, so that the Dataset is polled every second from its first sync on.
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject(out));
  gm->Send("insert", job.Object());  // the job's own credential is right
  gm->Send("insert", ModelObject("initial-model", Url("models/base_model"), "ckpt"));
  gm->Send("insert", DatasetObject("txt", wrong));

  ASSERT_TRUE(WaitLog("SignatureDoesNotMatch")) << "no signature error logged";
  const std::string line = LogLine("SignatureDoesNotMatch");
  EXPECT_NE(line.find(std::string("Dataset ") + kDatasetName + ": HEAD " +
                      Url("data/helmet/train_data.txt") + ": 403"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("; retrying every 1 s"), std::string::npos) << line;
  // Further polls fail the same way: no count, no round, and the problem is logged once.
  auto count = NextDataset("s3-dataset", 2500ms);
  EXPECT_FALSE(count) << "numberOfSamples sent with a wrong secret: " << count->content;
  EXPECT_FALSE(gm->Next("IncrementalLearningJob", 0ms));
  EXPECT_EQ(Occurrences(lc->Log(), "SignatureDoesNotMatch"), 1u);

  gm->Send("insert", DatasetObject("txt"));  // the GM re-sends it with the right secret
  auto first = NextDataset("s3-dataset");
  ASSERT_TRUE(first) << "no count after the right secret arrived";
  EXPECT_EQ(first->body.at("numberOfSamples").get<int64_t>(), 1000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.body.at("phase"), "Train");
  EXPECT_EQ(il1.body.at("status"), "Ready");
  EXPECT_EQ(il1.body.at("input").at("dataURL"), out + "/data/train/1/data.txt");
  const SplitFiles r1 = Split(1, 1000, 0.8);
  EXPECT_EQ(Get("output/data/train/1/data.txt"), r1.train);
  EXPECT_EQ(Get("output/data/train/1/dataIndex.txt"), Url("data/helmet/") + "\n" + r1.train_index);
  EXPECT_TRUE(WaitLog(std::string("Dataset ") + kDatasetName + ": S3 index readable again"));
  Barrier();
  auto again = NextDataset("s3-dataset", 1500ms);
  EXPECT_FALSE(again) << "count sent twice: " << again->content;
  EXPECT_EQ(lc->Stop(), 0);
  const std::string log = lc->Log();
  EXPECT_EQ(log.find(wrong), std::string::npos) << "wrong secret in the log";
  EXPECT_EQ(log.find(moto_->secret_key()), std::string::npos) << "secret in the log";
}

// outputDir on a bucket that does not exist yet: writing round 1 fails with NoSuchBucket and no
// Train Ready is sent; once the bucket exists, the core's retry (10 s later) writes the round.
TEST_F(S3JobsTest, MissingOutputBucketIsRetried) {
  StartLc();
  const std::string out_bucket = bucket_ + "-late";
  const std::string out = "s3://" + out_bucket + "/output";
  Put("data/helmet/train_data.txt", Lines(1, 1000));
  gm->Send("insert", DatasetObject());
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject(out));
  gm->Send("insert", job.Object());
  gm->Send("insert", ModelObject("initial-model", Url("models/base_model"), "ckpt"));
  WaitSampleCount(1000);

  ASSERT_TRUE(WaitLog("NoSuchBucket")) << "the failed write was not logged";
  const std::string line = LogLine("NoSuchBucket");
  EXPECT_NE(line.find("writing train samples for round 1 failed: PUT " + out +
                      "/data/train/1/dataIndex.txt: 404 NoSuchBucket"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("retrying in 10 s"), std::string::npos) << line;
  auto early = gm->Next("IncrementalLearningJob", 0ms);
  EXPECT_FALSE(early) << "Ready before the round file was written: " << early->content;

  ASSERT_TRUE(moto_->CreateBucket(out_bucket).ok());
  UpstreamFrame il1 = NextJob();  // up to 30 s: the retry comes 10 s after the failure
  EXPECT_EQ(il1.content,
            R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":")" +
                Url("models/base_model") + R"("}],"dataURL":")" + out +
                R"(/data/train/1/data.txt","dataIndexURL":")" + out +
                R"(/data/train/1/dataIndex.txt","outputDir":")" + out +
                R"(/train/1"},"output":null})");
  const SplitFiles r1 = Split(1, 1000, 0.8);
  s3::Client c(moto_->credentials());
  std::string data;
  ASSERT_TRUE(c.Get({out_bucket, "output/data/train/1/data.txt"}, 0, -1, [&](std::string_view b) {
                 data.append(b);
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(data, r1.train);
  EXPECT_EQ(Keys("output", out_bucket),
            (std::vector<std::string>{"output/data/train/1/data.txt",
                                      "output/data/train/1/dataIndex.txt"}));
  EXPECT_EQ(lc->Stop(), 0);
}

// The LC reaches the index through a FaultProxy. While the index grows, connections are first
// refused, then cut in the middle of every GET of the new bytes, then accepted and dropped
// unanswered, for a few polls each; nothing is counted meanwhile. Once the proxy relays again, the
// count is the total, the LC says the index is readable again, and the round that follows has every
// sample once in its train or eval file.
TEST_F(S3JobsTest, DroppedConnectionLosesNothing) {
  std::atomic<int> cut_after{-1};  // >= 0: every new connection is cut after that many bytes
  FaultProxy proxy(moto_->port(), [&](int) {
    FaultProxy::Plan plan;
    if (const int n = cut_after.load(); n >= 0) {
      plan.kind = FaultProxy::Plan::kCutAfter;
      plan.cut_after = static_cast<size_t>(n);
    }
    return plan;
  });
  StartLc(/*with_status=*/true);
  const std::string out = Url("output");
  const std::string index = Url("data/helmet/train_data.txt");
  const std::string who = std::string("Dataset ") + kDatasetName + ": ";
  Put("data/helmet/train_data.txt", Lines(1, 200));
  gm->Send("insert", DatasetObject("txt", "", proxy.endpoint()));
  // The job writes to moto directly; 2400 train samples (3000 lines) fire round 1.
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject(out, 2000));
  gm->Send("insert", job.Object());
  gm->Send("insert", ModelObject("initial-model", Url("models/base_model"), "ckpt"));
  WaitSampleCount(200);

  // 1. Refused: the HEAD cannot connect. (The index grows once the first failure is logged, so
  // no sync already connected before the refusal can see the new bytes.)
  proxy.SetMode(FaultProxy::Mode::kRefuse);
  ASSERT_TRUE(
      WaitLog(who + "HEAD " + index + ": connection to http://" + proxy.endpoint() + " failed"))
      << "the refused connection was not logged";
  Put("data/helmet/train_data.txt", Lines(1, 800));
  ASSERT_TRUE(WaitPolls(Metric("sedna_lc_s3_index_polls_total"), 3));
  auto counted = NextDataset("s3-dataset", 0ms);
  EXPECT_FALSE(counted) << "counted while refused: " << counted->content;

  // 2. Dropped: each connection is cut 4000 bytes into its answers (after the HEAD's, inside
  // the GET's body); the client's resumed attempt is cut again.
  cut_after = 4000;
  proxy.SetMode(FaultProxy::Mode::kNormal);
  Put("data/helmet/train_data.txt", Lines(1, 1500));
  ASSERT_TRUE(
      WaitLog(who + "GET " + index + ": connection to http://" + proxy.endpoint() + " failed"))
      << "the dropped connection was not logged";
  ASSERT_TRUE(WaitPolls(Metric("sedna_lc_s3_index_polls_total"), 3));
  counted = NextDataset("s3-dataset", 0ms);
  EXPECT_FALSE(counted) << "counted while connections were cut: " << counted->content;
  EXPECT_GT(proxy.bytes_to_client(), 0);

  // 3. Hung, then dropped: connections are accepted but never answered, and the test closes
  // each one as soon as it is open (DropConnections), for a few polls.
  proxy.SetMode(FaultProxy::Mode::kBlackhole);
  cut_after = -1;  // only after: no connection may be accepted to relay in between
  Put("data/helmet/train_data.txt", Lines(1, 2000));
  const std::string head_failed =
      who + "HEAD " + index + ": connection to http://" + proxy.endpoint() + " failed";
  const int64_t polls = Metric("sedna_lc_s3_index_polls_total");
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (int open = proxy.connections(); (Occurrences(lc->Log(), head_failed) < 2 ||
                                        Metric("sedna_lc_s3_index_polls_total") < polls + 3) &&
                                       std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(10ms)) {
    if (proxy.connections() > open) {
      open = proxy.connections();
      proxy.DropConnections();
    }
  }
  ASSERT_GE(Occurrences(lc->Log(), head_failed), 2u) << "the dropped connections were not logged";
  counted = NextDataset("s3-dataset", 0ms);
  EXPECT_FALSE(counted) << "counted while connections were dropped: " << counted->content;

  // 4. Relaying again: every line is counted once, the round follows.
  proxy.SetMode(FaultProxy::Mode::kNormal);
  WaitSampleCount(2000);
  EXPECT_TRUE(WaitLog(who + "S3 index readable again"));
  Put("data/helmet/train_data.txt", Lines(1, 3000));
  WaitSampleCount(3000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.body.at("input").at("dataURL"), out + "/data/train/1/data.txt");
  const SplitFiles all = Split(1, 3000, 0.8);
  EXPECT_EQ(Get("output/data/train/1/data.txt"), all.train);
  EXPECT_EQ(Get("output/data/train/1/dataIndex.txt"), Url("data/helmet/") + "\n" + all.train_index);
  job.Report(il1.content);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  Put("output/train/1/model.pb", "NEW-MODEL-ROUND-1");
  EXPECT_EQ(
      PostWorker(
          "train-worker-s3",
          R"({"name": "train-worker-s3", "namespace": "default", "ownerName": "helmet", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": ")" +
              out + R"(/train/1/model.pb", "metrics": {"loss": 0.8}}]})"),
      kOk);
  job.Report(NextJob().content);  // IL-2
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job.LastCondition(), "Eval/Waiting");
  gm->Send("insert", job.Object());
  gm->Send("insert", ModelObject("deploy-model", Url("models/deploy_model/saved_model.pb"), "pb"));
  UpstreamFrame il3 = NextJob();
  EXPECT_EQ(il3.body.at("phase"), "Eval");
  EXPECT_EQ(il3.body.at("input").at("dataURL"), out + "/data/eval/1/data.txt");
  // Each of the 3000 lines is in exactly one of the two files.
  EXPECT_EQ(Get("output/data/eval/1/data.txt"), all.eval);
  EXPECT_EQ(Occurrences(all.train, "\n") + Occurrences(all.eval, "\n"), 3000u);
  EXPECT_EQ(lc->Stop(), 0);
}

// The log line that starts an S3 index's polling names the index and the period. (Found failing:
// UpsertDataset reads `ds`, a reference into the decoded object, after moving that object into
// the entry, so the URL printed is empty; the same moved-from `ds` decides which jobs get a
// JobChanged step when their Dataset arrives, so none does.)
TEST_F(S3JobsTest, PollLogNamesTheIndex) {
  StartLc();
  Put("data/helmet/train_data.txt", Lines(1, 10));
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject(Url("output")));
  gm->Send("insert", job.Object());
  gm->Send("insert", DatasetObject());
  WaitSampleCount(10);
  EXPECT_NE(LogLine("Dataset default/s3-dataset: polling " + Url("data/helmet/train_data.txt") +
                    " every 1 s (mirrored in "),
            "")
      << lc->Log();
  EXPECT_EQ(lc->Stop(), 0);
}

// Bad S3 fields and credentials are rejected with the object and field named; the previous good
// version keeps running and nothing else stops.
TEST_F(S3JobsTest, BadS3FieldsAreRejectedWithTheFieldNamed) {
  StartLc();
  Put("data/helmet/train_data.txt", Lines(1, 10));
  GmJob good(core::gm::JobKind::kIncremental, IlJobObject(Url("output"), 1e9));
  gm->Send("insert", good.Object());  // checkPeriodSeconds 1: the Dataset is polled every second
  gm->Send("insert", DatasetObject());
  WaitSampleCount(10);
  auto with = [&](const std::string& field, const Json& value) {
    Json d = DatasetObject();
    if (field == "url") {
      d["spec"]["url"] = value;
    } else {
      d["metadata"]["annotations"]["sedna.io/credential"] = value;
    }
    return d;
  };
  const std::string who = "Dataset default/s3-dataset: ";
  gm->Send("insert", with("credential", "not json"));
  EXPECT_TRUE(WaitLog(who + "metadata.annotations[sedna.io/credential]: ")) << lc->Log();
  gm->Send("insert", with("credential", R"({"ACCESS_KEY_ID":"a","s3-endpoint":"h:1"})"));
  EXPECT_TRUE(WaitLog("\"SECRET_ACCESS_KEY\"")) << lc->Log();
  gm->Send("insert", with("url", "s3://"));
  EXPECT_TRUE(WaitLog(who + "spec.url: \"s3://\": ")) << lc->Log();
  gm->Send("insert", with("url", "s3://only-a-bucket"));
  EXPECT_TRUE(WaitLog("names a bucket, not an index object")) << lc->Log();
  gm->Send("insert", with("url", "ftp://h/index.txt"));
  EXPECT_TRUE(WaitLog(who + "spec.url: \"ftp://h/index.txt\": unsupported scheme")) << lc->Log();
  GmJob bad(core::gm::JobKind::kIncremental, IlJobObject("s3:///no-bucket"));
  gm->Send("insert", bad.Object());
  EXPECT_TRUE(
      WaitLog("IncrementalLearningJob default/helmet: rejected: spec.outputDir: "
              "\"s3:///no-bucket\""))
      << lc->Log();
  EXPECT_EQ(lc->Log().find("ACCESS_KEY_ID\":\"a"), std::string::npos) << "credential logged";
  // The previous good Dataset is still polled with its credential, for the previous good job.
  Put("data/helmet/train_data.txt", Lines(1, 25));
  WaitSampleCount(25);
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
