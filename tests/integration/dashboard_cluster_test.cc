// The round history, the dashboard feed and the per-job gauges in cluster mode: the real sedna-lc
// against the GM emulator runs one IL round (deployed), then the history is read from
// /api/history, /api/dashboard, /metrics, `sedna-lc status --history` on the stopped LC's
// database, and /api/history again after a restart.
#include <gtest/gtest.h>
#include <stdio.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;
using nlohmann::json;

class DashboardClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-dash-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + "/models/deploy_model/saved_model.pb", "OLD-DEPLOYED-MODEL");
    WriteFile(rootfs + "/data/train_data.txt", "");
    status_port = FreePort();
    StartLc(status_port);
  }

  UpstreamFrame NextJob() {
    auto f = gm->Next("IncrementalLearningJob");
    if (!f) throw std::runtime_error("no IncrementalLearningJob message from the LC");
    return *f;
  }
  void Sync(GmJob& job) {
    for (const Json& obj : IlDownstream(job)) gm->Send("insert", obj);
  }
  json Get(const std::string& path) {
    HttpResult r = HttpRequest(status_port, "GET", path, "", {});
    EXPECT_EQ(r.status, 200) << path << "\n" << r.raw;
    return json::parse(r.body, nullptr, false);
  }
  // One round as the GM and the workers play it: 1000 samples, trained, evaluated better than
  // the deployed model, deployed.
  void DeployedRound() {
    gm->Send("insert", DatasetObject());
    GmJob job(core::gm::JobKind::kIncremental, IlJobObject());
    Sync(job);
    AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
    job.Report(NextJob().content);  // Train Ready
    job.SetPod(Stage::kTrain, PodPhase::kRunning);
    Sync(job);
    stdfs::create_directories(rootfs + "/output/train/1");
    WriteFile(rootfs + "/output/train/1/model.pb", "NEW-MODEL-ROUND-1");
    PostWorker(
        "train-worker-h4k9q",
        R"({"name": "train-worker-h4k9q", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": 0.8113}}, {"format": "ckpt", "url": "/output/train/1"}]})");
    job.Report(NextJob().content);
    job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
    Sync(job);
    job.Report(NextJob().content);  // Eval Ready
    job.SetPod(Stage::kEval, PodPhase::kRunning);
    Sync(job);
    PostWorker(
        "eval-worker-2bq7d",
        R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"precision": [0.8, 0.6]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"precision": [0.5, 0.4]}}]})");
    job.Report(NextJob().content);  // the forwarded eval report
    UpstreamFrame deploy = NextJob();
    ASSERT_EQ(deploy.content.rfind(R"({"phase":"Deploy","status":"Ready",)", 0), 0u)
        << deploy.content;
  }
  void ExpectRound(const json& history) {
    ASSERT_TRUE(history.is_array() && history.size() == 1) << history.dump();
    const json& h = history[0];
    EXPECT_EQ(h["deploys"], 1);
    EXPECT_EQ(h["deployTarget"], "/models/deploy_model/saved_model.pb");
    ASSERT_EQ(h["rounds"].size(), 1u) << h.dump();
    const json& r = h["rounds"][0];
    EXPECT_EQ(r["round"], 1);
    EXPECT_EQ(r["samples"], 800);
    EXPECT_EQ(r["dataURL"], "/output/data/train/1/data.txt");
    EXPECT_EQ(r["trainStatus"], "completed");
    EXPECT_EQ(r["trainedModel"], "/output/train/1/model.pb");
    EXPECT_EQ(r["trainMetrics"]["loss"], 0.8113);
    EXPECT_EQ(r["evalStatus"], "completed");
    EXPECT_DOUBLE_EQ(r["newMetrics"]["precision"].get<double>(), 0.7);
    EXPECT_DOUBLE_EQ(r["deployedMetrics"]["precision"].get<double>(), 0.45);
    EXPECT_EQ(r["decision"], "deployed");
    EXPECT_NE(r["decisionReason"].get<std::string>().find("precision_delta"), std::string::npos)
        << r.dump();
    EXPECT_GT(r["firedMs"].get<int64_t>(), 0);
    EXPECT_GE(r["trainReadyMs"].get<int64_t>(), r["firedMs"].get<int64_t>());
    EXPECT_GE(r["deployedMs"].get<int64_t>(), r["evalDoneMs"].get<int64_t>());
  }

  uint16_t status_port = 0;
};

TEST_F(DashboardClusterTest, HistoryGaugesAndPageOfADeployedRound) {
  DeployedRound();
  ExpectRound(Get("/api/history?job=default/helmet-detection-demo"));
  EXPECT_EQ(Get("/api/history?job=other").size(), 0u);

  const std::string metrics = HttpRequest(status_port, "GET", "/metrics", "", {}).body;
  for (const char* want : {
           "sedna_lc_job_round{job=\"default/helmet-detection-demo\",kind=\"IL\"} 2\n",
           "sedna_lc_job_deploys_total{job=\"default/helmet-detection-demo\",kind=\"IL\"} 1\n",
           "sedna_lc_job_eval_metric{job=\"default/helmet-detection-demo\",kind=\"IL\","
           "metric=\"precision\",model=\"new\"} 0.7\n",
           "sedna_lc_job_eval_metric{job=\"default/helmet-detection-demo\",kind=\"IL\","
           "metric=\"precision\",model=\"deployed\"} 0.45\n",
       }) {
    EXPECT_NE(metrics.find(want), std::string::npos) << want << "\n" << metrics;
  }

  HttpResult page = HttpRequest(status_port, "GET", "/", "", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.raw.find("Content-Type: text/html"), std::string::npos) << page.raw.substr(0, 300);
  EXPECT_NE(page.body.find("<title>sedna-lc dashboard</title>"), std::string::npos);
  {  // the page served is dashboard_page.html, byte for byte
    std::ifstream in(
        std::string(SEDNA_SOURCE_DIR) + "/src/app/cluster/observation/dashboard_page.html",
        std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(file.empty());
    EXPECT_EQ(page.body, file);
  }

  // The kept versions are listed on the pool: a later poll has them (the deploy kept the old
  // model as version 1).
  json feed;
  for (int i = 0; i < 100; ++i) {
    feed = Get("/api/dashboard");
    if (!feed["jobs"][0]["versions"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(feed["standalone"], false);
  EXPECT_EQ(feed["gmConnected"], true);
  ASSERT_EQ(feed["jobs"].size(), 1u);
  EXPECT_EQ(feed["jobs"][0]["history"]["rounds"].size(), 1u);
  ASSERT_EQ(feed["jobs"][0]["versions"].size(), 1u) << feed.dump();
  EXPECT_EQ(feed["jobs"][0]["versions"][0]["command"],
            "sedna-lc rollback-model /models/deploy_model/saved_model.pb --version 1");

  // After a stop: from the database, then from the restarted LC.
  ASSERT_EQ(lc->Stop(), 0);
  const std::string cmd =
      lc_binary + " status --history helmet-detection-demo --status-port 0 --db " + db + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << out;
  }
  EXPECT_NE(out.find("\n1      800      "), std::string::npos) << out;
  EXPECT_NE(out.find("deployed"), std::string::npos) << out;
  StartLc(status_port);
  ExpectRound(Get("/api/history?job=helmet-detection-demo"));
}

}  // namespace
}  // namespace sedna::testing
