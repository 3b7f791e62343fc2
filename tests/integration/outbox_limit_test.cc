// The durable outbox under a GM outage: messages produced while the GM is away are delivered once,
// in order, after it returns; above --outbox-max-bytes worker reports are refused with 503 (the
// worker retries) and nothing already queued is dropped.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <thread>

#include "gm_emulator.h"
#include "lc_process.h"

namespace sedna::testing {
namespace {

std::string Report(int i) {
  return R"({"name": "ji-worker", "namespace": "default", "ownerName": "ji", "ownerKind": "jointinferenceservice", "kind": "inference", "status": "completed", "results": [{"format": "pb", "url": "/models/m.pb", "metrics": {"seq": )" +
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
      EXPECT_NE(r.body.find("outbox is full"), std::string::npos) << r.body;
      ++refused;
    }
  }
  EXPECT_GT(accepted, 2) << "the outbox took messages while the GM was away";
  EXPECT_GT(refused, 0) << "the 4000-byte limit was reached";
  EXPECT_NE(lc.Log().find("outbox full"), std::string::npos);

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
  for (int i = 1; i < accepted; ++i) {
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

}  // namespace
}  // namespace sedna::testing
