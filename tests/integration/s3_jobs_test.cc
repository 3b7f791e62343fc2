// Jobs with datasets, outputs and models on S3 (sedna-protocol.md §2.5, §7.2, §7.4, §9.3): the
// real sedna-lc binary against the GM emulator and a real S3 server (moto_server, signature
// checking on). The GM emulator puts the sedna.io/credential annotation on every object, as
// Sedna's GM does for objects with spec.credentialName.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "adapters/s3/s3_client.h"
#include "core/split.h"
#include "fault_proxy.h"
#include "gm_emulator.h"
#include "lc_process.h"
#include "moto_server.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

constexpr const char* kOk = "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}";
constexpr const char* kBucket = "kubeedge";

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

  void StartLc() {
    lc = std::make_unique<LcProcess>(
        std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
        std::map<std::string, std::string>{{"GM_ADDRESS", gm->address()},
                                           {"NODENAME", "edge-node"},
                                           {"BIND_PORT", std::to_string(port)},
                                           {"ROOTFS_MOUNT_DIR", rootfs}},
        std::vector<std::string>{"--db", tmp + "/db/database.db", "--status-port", "0",
                                 "--log-level", "debug", "--s3-timeout-ms", "3000", "--s3-retries",
                                 "1"},
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

  // The annotation value the GM injects (§2.5): Go's json.Marshal of the Secret's map.
  std::string Credential(const std::string& secret) const {
    return Json{{"ACCESS_KEY_ID", moto_->access_key()},
                {"SECRET_ACCESS_KEY", secret},
                {"s3-endpoint", endpoint_},
                {"s3-usehttps", "0"}}
        .dump();
  }

  Json Meta(const std::string& name, const std::string& secret = "") const {
    return Json{
        {"name", name},
        {"namespace", "default"},
        {"uid", "7b3c2f0e-1111-4c3a-9c1e-000000000001"},
        {"annotations",
         {{"sedna.io/credential", Credential(secret.empty() ? moto_->secret_key() : secret)}}}};
  }

  Json DatasetObject(const std::string& format = "txt", const std::string& secret = "") const {
    return Json{{"kind", "Dataset"},
                {"apiVersion", "sedna.io/v1alpha1"},
                {"metadata", Meta("s3-dataset", secret)},
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

  Json IlJobObject(const std::string& output_dir) const {
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
               {{"operator", ">"}, {"threshold", 500}, {"metric", "num_of_samples"}}}}}}},
          {"deploySpec",
           {{"model", {{"name", "deploy-model"}}},
            {"trigger",
             {{"condition",
               {{"operator", ">"}, {"threshold", 0.1}, {"metric", "precision_delta[0]"}}}}}}},
          {"credentialName", "mysecret"},
          {"outputDir", output_dir}}}};
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

  // Waits for numberOfSamples == n; every count on the way must be below it.
  void WaitSampleCount(int64_t n) {
    for (;;) {
      auto f = gm->Next("Dataset", 30s);
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
  uint16_t port = 0;
  std::unique_ptr<GmEmulator> gm;
  std::unique_ptr<LcProcess> lc;
};

// A full IL round with the dataset, the outputs and both models on S3: the index is polled, the
// round files and their dataIndex.txt are uploaded, the Ready messages carry dataIndexURL
// (§3.3 IL-1s), and the deploy is a server-side copy.
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
                R"(/data/eval/2/data.txt","dataIndexURL":")" + out +
                R"(/data/eval/2/dataIndex.txt"},"output":null})");
  EXPECT_EQ(Get("output/data/eval/2/data.txt"), r1.eval);
  EXPECT_EQ(Get("output/data/eval/2/dataIndex.txt"), Url("data/helmet/") + "\n" + r1.eval_index);
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
                out + R"(/train/1/model.pb"}]},"output":null})");
  EXPECT_EQ(Get("models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  EXPECT_EQ(lc->Stop(), 0);
  // B23: no credential in the database.
  const std::string db = ReadFile(tmp + "/db/database.db") + ReadFile(tmp + "/db/database.db-wal");
  EXPECT_EQ(db.find(moto_->secret_key()), std::string::npos);
  EXPECT_EQ(lc->Log().find(moto_->secret_key()), std::string::npos) << "secret in the log";
}

}  // namespace
}  // namespace sedna::testing
