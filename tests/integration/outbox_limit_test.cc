// The durable outbox under a GM outage: messages produced while the GM is away are delivered once,
// in order, after it returns; above --outbox-max-bytes worker reports are refused with 503 (the
// worker retries) and nothing already queued is dropped. Informational reports (inference
// results) have a quota of their own, a quarter of the bound, so that they never crowd out a
// train or eval completion.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "cluster_fixture.h"
#include "gm_emulator.h"
#include "lc_process.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

// A worker message for the joint-inference service: informational unless kind is train or eval
// and status completed or failed.
std::string Report(int i, const std::string& kind = "inference") {
  return R"({"name": "ji-worker", "namespace": "default", "ownerName": "ji", "ownerKind": "jointinferenceservice", "kind": ")" +
         kind +
         R"(", "status": "completed", "results": [{"format": "pb", "url": "/models/m.pb", "metrics": {"seq": )" +
         std::to_string(i) + R"(, "precision": 0.70}}]})";
}

TEST(OutboxLimitTest, W1_OutageQueuesInOrderAndLimitRefusesWith503) {
  const std::string tmp = MakeTempDir("sedna-outbox-");
  auto gm = std::make_unique<GmEmulator>();
  const uint16_t gm_port = gm->server().port();
  const uint16_t port = FreePort();
  LcProcess lc(
      std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
      {{"GM_ADDRESS", gm->address()}, {"NODENAME", "edge"}, {"BIND_PORT", std::to_string(port)}},
      {"--db", tmp + "/db/database.db", "--status-port", "0", "--backoff-max-ms", "200",
       "--outbox-max-bytes", "4000"},
      tmp + "/lc.log");
  ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(20))) << lc.Log();
  gm->Send("insert", Json{{"kind", "JointInferenceService"},
                          {"apiVersion", "sedna.io/v1alpha1"},
                          {"metadata", {{"name", "ji"}, {"namespace", "default"}}},
                          {"spec", Json::object()}});
  // One report while connected proves the route before the outage. The insert and the POST race
  // (a report for a service the LC has not applied yet is dropped), so it is re-posted until one
  // arrives; a forwarded frame arrives within milliseconds, far inside the 2 s wait.
  std::optional<UpstreamFrame> first;
  for (int attempt = 0; attempt < 10 && !first; ++attempt) {
    ASSERT_EQ(HttpRequest(port, "POST", "/sedna/workers/ji-worker/info", Report(0)).status, 200);
    first = gm->Next("jointinferenceservice", std::chrono::seconds(2));
  }
  ASSERT_TRUE(first) << lc.Log();
  EXPECT_FALSE(gm->Next("jointinferenceservice", std::chrono::milliseconds(300)))
      << "report 0 forwarded twice";
  EXPECT_NE(first->content.find("\"seq\":0"), std::string::npos);

  gm.reset();  // the GM goes away
  int accepted = 1, refused = 0;
  for (int i = 1; i <= 40; ++i) {
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/ji-worker/info", Report(i));
    if (r.status == 200) {
      ASSERT_EQ(refused, 0) << "accepted after a refusal at " << i;
      ++accepted;
    } else {
      EXPECT_EQ(r.status, 503) << r.raw;
      EXPECT_NE(r.body.find("outbox is full for informational reports"), std::string::npos)
          << r.body;
      ++refused;
    }
  }
  EXPECT_GT(accepted, 2) << "the outbox took messages while the GM was away";
  EXPECT_GT(refused, 0) << "the informational quota (1000 of the 4000 bytes) was reached";
  EXPECT_NE(lc.Log().find("outbox full for informational frames"), std::string::npos);
  std::vector<int> queued;
  for (int i = 1; i < accepted; ++i) queued.push_back(i);

  // Completions still get in, up to the bound, which the informational frames do not count
  // against; then they too are refused.
  int completions = 0;
  refused = 0;
  for (int i = 41; i <= 80; ++i) {
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/ji-worker/info", Report(i, "train"));
    if (r.status == 200) {
      ASSERT_EQ(refused, 0) << "accepted after a refusal at " << i;
      ++completions;
      queued.push_back(i);
    } else {
      EXPECT_EQ(r.status, 503) << r.raw;
      EXPECT_NE(r.body.find("the LC's outbox is full; retry later"), std::string::npos) << r.body;
      ++refused;
    }
  }
  EXPECT_GT(completions, 2) << "completions were refused because of informational frames";
  EXPECT_GT(refused, 0) << "the 4000-byte limit was reached";
  EXPECT_NE(lc.Log().find("outbox full ("), std::string::npos);

  // The GM is back on the same address (retry while the old server socket drains).
  for (int attempt = 0; !gm && attempt < 100; ++attempt) {
    try {
      gm = std::make_unique<GmEmulator>(gm_port);
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_TRUE(gm) << "port " << gm_port << " never became free";
  ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(20))) << lc.Log();
  for (int i : queued) {
    auto f = gm->Next("jointinferenceservice");
    ASSERT_TRUE(f) << "message " << i << " missing\n" << lc.Log();
    EXPECT_NE(f->content.find("\"seq\":" + std::to_string(i) + "}"), std::string::npos)
        << "out of order: " << f->content;
    EXPECT_NE(f->content.find("\"precision\":0.70"), std::string::npos) << "number text kept";
  }
  EXPECT_FALSE(gm->Next("jointinferenceservice", std::chrono::milliseconds(300)))
      << "a message was delivered twice";
  // Drained: reports are accepted again.
  EXPECT_EQ(HttpRequest(port, "POST", "/sedna/workers/ji-worker/info", Report(99)).status, 200);
  auto last = gm->Next("jointinferenceservice");
  ASSERT_TRUE(last);
  EXPECT_NE(last->content.find("\"seq\":99"), std::string::npos);
  EXPECT_EQ(lc.Stop(), 0);
  std::filesystem::remove_all(tmp);
}

// A GM that goes away and comes back on the same port, for a ClusterFixture test.
class OutboxQuotaTest : public IlJobFixture {
 protected:
  void GmAway() {
    gm_port_ = gm->server().port();
    gm.reset();
  }
  void GmBack() {
    for (int attempt = 0; !gm && attempt < 100; ++attempt) {
      try {
        gm = std::make_unique<GmEmulator>(gm_port_);
      } catch (const std::exception&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the old socket drains
      }
    }
    ASSERT_TRUE(gm) << "port " << gm_port_ << " never became free";
    ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(20))) << lc->Log();
  }
  uint16_t gm_port_ = 0;
};

// An inference report as a forger on the node network sends it: ~1 MB of ownerInfo.
std::string ForgedInferenceReport(int i) {
  return Json{{"name", "inference-worker-" + std::to_string(i)},
              {"namespace", "default"},
              {"ownerName", kIlJobName},
              {"ownerKind", "incrementallearningjob"},
              {"kind", "inference"},
              {"status", "completed"},
              {"ownerInfo", {{"pad", std::string(1000000, 'x')}}}}
      .dump();
}

std::string TrainCompleted(const std::string& worker) {
  return Json{{"name", worker},
              {"namespace", "default"},
              {"ownerName", kIlJobName},
              {"ownerKind", "incrementallearningjob"},
              {"kind", "train"},
              {"status", "completed"},
              {"results", Json::array({{{"format", "pb"},
                                        {"url", "/output/train/1/model.pb"},
                                        {"metrics", {{"loss", 0.25}}}}})}}
      .dump();
}

// [D:I21.8]a: during a GM outage, 51 forged 1 MB inference reports filled the 64 MiB outbox
// and the real train-completed report got 503. Here the bound is 8 MiB: the forged reports are
// refused once they hold their quarter (2 MiB), with a 503 of their own, and the train completion
// is accepted and delivered once the GM is back.
TEST_F(OutboxQuotaTest, InformationalReportsCannotCrowdOutATrainCompletion) {
  MakeWorld("sedna-quota-");
  std::filesystem::create_directories(rootfs + "/data");
  WriteFile(rootfs + kIlIndexUrl, "");
  WriteFile(rootfs + kBarrierIndexUrl, "barrier_images/1.jpg 1\n");
  StartLc(0, {"--outbox-max-bytes", std::to_string(8 << 20), "--backoff-max-ms", "200"});
  gm->Send("insert", DatasetObject());
  job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
  Sync();
  Barrier();
  std::string lines;
  for (const auto& l : IndexLineList(1, 1000)) lines += l + "\n";
  AppendFile(rootfs + kIlIndexUrl, lines);
  WaitSampleCount(1000);
  const UpstreamFrame ready = NextJob();  // Train Ready: round 1 waits for its train report
  ASSERT_EQ(ready.body.value("phase", ""), "Train") << ready.content;

  GmAway();
  int accepted = 0, refused = 0;
  for (int i = 0; i < 51 && refused == 0; ++i) {
    HttpResult r =
        HttpRequest(port, "POST", "/sedna/workers/inference-worker-" + std::to_string(i) + "/info",
                    ForgedInferenceReport(i));
    if (r.status == 200) {
      ++accepted;
      continue;
    }
    ASSERT_EQ(r.status, 503) << r.raw;
    EXPECT_NE(r.body.find("outbox is full for informational reports"), std::string::npos) << r.body;
    ++refused;
  }
  EXPECT_EQ(refused, 1) << "51 forged reports of 1 MB filled no quota";
  // A frame is ~1.33 MB (base64): two fit under the 2 MiB share, the third goes over it.
  EXPECT_LE(accepted, 3);
  EXPECT_NE(lc->Log().find("outbox full for informational frames"), std::string::npos);

  HttpResult train = HttpRequest(port, "POST", "/sedna/workers/train-worker-h4k9q/info",
                                 TrainCompleted("train-worker-h4k9q"));
  EXPECT_EQ(train.status, 200) << "the train completion was refused: " << train.raw;
  // Still refused: informational reports, until the GM drains them.
  EXPECT_EQ(HttpRequest(port, "POST", "/sedna/workers/inference-worker-99/info",
                        ForgedInferenceReport(99))
                .status,
            503);

  GmBack();
  int forged = 0;
  bool completed = false;
  while (!completed) {
    auto f = gm->Next("IncrementalLearningJob");
    ASSERT_TRUE(f) << "the train completion never arrived (" << forged << " forged before)\n"
                   << lc->Log();
    if (f->body.value("phase", "") == "inference") {
      ++forged;
    } else if (f->body.value("phase", "") == "train") {
      EXPECT_EQ(f->body.value("status", ""), "completed") << f->content;
      completed = true;
    }
  }
  EXPECT_EQ(forged, accepted) << "every accepted report is delivered, in order, before it";
  // Drained: informational reports are accepted again.
  EXPECT_EQ(HttpRequest(port, "POST", "/sedna/workers/inference-worker-100/info",
                        ForgedInferenceReport(100))
                .status,
            200);
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
