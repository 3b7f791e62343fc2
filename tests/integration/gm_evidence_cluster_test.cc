// The GM evidence (docs/protocol.md §H3.1) end to end: the real sedna-lc against the GM
// emulator shows on /status, in `sedna-lc status` and in its log what the GM's objects on this
// connection said about the GM's generation, and forgets it on a new connection.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cluster_fixture.h"
#include "objects.h"

namespace sedna::testing {
namespace {

class GmEvidenceClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-gm-evidence-");
    std::filesystem::create_directories(rootfs + "/data");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    status_port = FreePort();
    StartLc(status_port);
  }

  Json Gm() {
    HttpResult r = HttpRequest(status_port, "GET", "/status", "", {});
    EXPECT_EQ(r.status, 200) << r.raw;
    Json doc = Json::parse(r.body, nullptr, false);
    EXPECT_TRUE(doc.is_object() && doc.contains("gm")) << r.body;
    return doc.is_object() && doc.contains("gm") ? doc["gm"] : Json();
  }

  // `sedna-lc status` against the daemon; its output.
  std::string StatusCommand() {
    LcProcess p(lc_binary, {{"NODENAME", "edge-node"}},
                {"status", "--status-port", std::to_string(status_port), "--db", db},
                tmp + "/status.out");
    EXPECT_EQ(p.Wait(), 0) << p.Log();
    return p.Log();
  }

  uint16_t status_port = 0;
};

Json Condition(const char* stage, const char* type) {
  return Json{{"type", type},
              {"status", "True"},
              {"stage", stage},
              {"lastHeartbeatTime", "2025-03-06T08:00:00Z"},
              {"lastTransitionTime", "2025-03-06T08:00:00Z"}};
}

TEST_F(GmEvidenceClusterTest, StatusAndLogSayWhatThisConnectionShowed) {
  Barrier();
  Json gm0 = Gm();
  EXPECT_EQ(gm0.value("link", ""), "connected");
  EXPECT_EQ(gm0.value("protocol", ""), "auto");
  EXPECT_EQ(gm0.value("observed", ""), "unknown");

  // S1: a G2 GM publishes (Deploy, Waiting) for an IL job once its eval completed.
  Json job = IlJobObject();
  job["status"]["conditions"] =
      Json::array({Condition("Train", "Waiting"), Condition("Eval", "Waiting"),
                   Condition("Deploy", "Waiting")});
  gm->Send("insert", job);
  Barrier();
  Json g2 = Gm();
  EXPECT_EQ(g2.value("observed", ""), "G2");
  ASSERT_EQ(g2["signals"].size(), 1u) << g2.dump();
  EXPECT_EQ(g2["signals"][0].value("id", ""), "S1");
  EXPECT_EQ(g2["signals"][0].value("what", ""),
            "IL (Deploy,Waiting) for default/helmet-detection-demo");
  EXPECT_NE(StatusCommand().find("GM: connected, protocol auto, observed G2 (S1: IL "
                                 "(Deploy,Waiting) for default/helmet-detection-demo)\n"),
            std::string::npos);
  EXPECT_NE(lc->Log().find("GM: observed G2 on this connection (S1: IL (Deploy,Waiting) for "
                           "default/helmet-detection-demo)"),
            std::string::npos);

  // A new connection (a GM restart, e.g. an upgrade) starts from nothing.
  gm->server().DropConnection();
  ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(30))) << lc->Log();
  Barrier();
  Json fresh = Gm();
  EXPECT_EQ(fresh.value("link", ""), "connected");
  EXPECT_EQ(fresh.value("observed", ""), "unknown");
  EXPECT_TRUE(fresh["signals"].empty()) << fresh.dump();
}

}  // namespace
}  // namespace sedna::testing
