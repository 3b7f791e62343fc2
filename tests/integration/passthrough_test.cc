// End to end, cluster mode: joint-inference services and federated-learning jobs, which the LC
// only stores and whose workers' messages it forwards (docs/protocol.md §P3.5): the real
// sedna-lc binary against the GM emulator, worker POSTs as lib/sedna sends them. Every forwarded
// frame is compared byte for byte (header and content: result keys sorted, number text and Go's
// HTML escaping preserved).
#include <gtest/gtest.h>

#include <filesystem>

#include "cluster_fixture.h"
#include "objects.h"

namespace sedna::testing {
namespace {

namespace stdfs = std::filesystem;

constexpr const char* kJi = "jointinferenceservice";
constexpr const char* kFl = "federatedlearningjob";
constexpr const char* kJiName = "helmet-detection-inference-example";
constexpr const char* kFlName = "surface-defect-detection";
constexpr const char* kPassUid = "7b3c2f0e-1111-4c3a-9c1e-000000000009";  // of every object sent

Json JointInferenceObject() {
  return Json{
      {"kind", "JointInferenceService"},
      {"apiVersion", "sedna.io/v1alpha1"},
      {"metadata", Meta(kJiName, kPassUid)},
      {"spec",
       {{"edgeWorker",
         {{"model", {{"name", "helmet-detection-inference-little-model"}}},
          {"hardExampleMining",
           {{"name", "IBT"},
            {"parameters", Json::array({{{"key", "threshold_img"}, {"value", "0.9"}}})}}},
          {"template", {{"spec", {{"nodeName", "edge-node"}, {"containers", Json::array()}}}}}}},
        {"cloudWorker",
         {{"model", {{"name", "helmet-detection-inference-big-model"}}},
          {"template", {{"spec", {{"nodeName", "cloud-node"}, {"containers", Json::array()}}}}}}}}},
      {"status", Json::object()}};
}

Json FederatedObject() {
  return Json{{"kind", "FederatedLearningJob"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta(kFlName, kPassUid)},
              {"spec",
               {{"aggregationWorker",
                 {{"model", {{"name", "surface-defect-detection-model"}}},
                  {"template", {{"spec", {{"nodeName", "cloud-node"}}}}}}},
                {"trainingWorkers",
                 Json::array({{{"dataset", {{"name", "edge1-surface-defect-detection-dataset"}}},
                               {"template", {{"spec", {{"nodeName", "edge-node"}}}}}}})}}},
              {"status", Json::object()}};
}

// A worker body as lib/sedna posts it (Python json.dumps separators); `extra` is appended raw.
std::string WorkerBody(const std::string& name, const std::string& owner_kind,
                       const std::string& owner_name, const std::string& kind,
                       const std::string& status, const std::string& extra) {
  return R"({"name": ")" + name + R"(", "namespace": "default", "ownerName": ")" + owner_name +
         R"(", "ownerKind": ")" + owner_kind + R"(", "kind": ")" + kind + R"(", "status": ")" +
         status + "\"" + extra + "}";
}

// The envelope up to the base64 content, as Go marshals MessageHeader (§P1.3, §P1.5).
std::string FramePrefix(const std::string& kind, const std::string& name) {
  return R"({"header":{"namespace":"default","resourceKind":")" + kind + R"(","resourceName":")" +
         name + R"(","operation":"status"},"content":")";
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

class PassthroughTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-pass-");
    barrier_uid = kPassUid;
    stdfs::create_directories(rootfs + "/data");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1\n");
    StartLc();
  }

  void Post(const std::string& name, const std::string& body) {
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", body);
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, kOk);
  }

  // The next frame of `kind` (lower case, as forwarded), checked against §P3.5 byte for byte.
  void ExpectForwarded(const std::string& kind, const std::string& name,
                       const std::string& content) {
    auto f = gm->Next(kind);
    ASSERT_TRUE(f) << "no " << kind << " message forwarded";
    EXPECT_EQ(f->raw.substr(0, FramePrefix(kind, name).size()), FramePrefix(kind, name)) << f->raw;
    const Json raw = Json::parse(f->raw);
    EXPECT_EQ(raw.at("header"), (Json{{"namespace", "default"},
                                      {"resourceKind", kind},
                                      {"resourceName", name},
                                      {"operation", "status"}}));
    EXPECT_EQ(f->content, content);
  }

  void ExpectNothingForwarded(const std::string& kind, const std::string& why) {
    Barrier();
    auto f = gm->Next(kind, std::chrono::milliseconds(0));
    EXPECT_FALSE(f) << why << ": " << f->raw;
  }
};

constexpr const char* kJiBody =
    R"(, "ownerInfo": {"inferenceTime": 0.70, "hardExamples": 12, "note": "a<b & c>d", "edge": {"z": 1e3, "a": [1.50, -0.0]}}, "results": [{"url": "/models/little.pb", "format": "pb", "metrics": {"recall": 0.70, "acc": 1.0}}])";
constexpr const char* kJiContent =
    R"({"phase":"inference","status":"running","output":{"models":[{"format":"pb","metrics":{"acc":1.0,"recall":0.70},"url":"/models/little.pb"}],"ownerInfo":{"edge":{"a":[1.50,-0.0],"z":1e3},"hardExamples":12,"inferenceTime":0.70,"note":"a\u003cb \u0026 c\u003ed"}}})";
constexpr const char* kFlBody =
    R"(, "ownerInfo": {"round": 3, "loss": 0.250, "samples": 1200}, "results": [{"format": "pb", "url": "/output/fl/3/model.pb", "metrics": {"accuracy": [0.90, 0.85]}}])";
constexpr const char* kFlContent =
    R"({"phase":"train","status":"completed","output":{"models":[{"format":"pb","metrics":{"accuracy":[0.90,0.85]},"url":"/output/fl/3/model.pb"}],"ownerInfo":{"loss":0.250,"round":3,"samples":1200}}})";

TEST_F(PassthroughTest, ForwardsJointInferenceAndFederatedMessages) {
  // Before the resources exist: accepted, not forwarded.
  Post("edgeworker-early",
       WorkerBody("edgeworker-early", kJi, kJiName, "inference", "running", kJiBody));
  ExpectNothingForwarded(kJi, "message for a joint inference service the LC does not know");

  gm->Send("insert", JointInferenceObject());
  gm->Send("insert", FederatedObject());
  Barrier();

  Post("edgeworker-abcde",
       WorkerBody("edgeworker-abcde", kJi, kJiName, "inference", "running", kJiBody));
  ExpectForwarded(kJi, kJiName, kJiContent);

  Post("trainworker-0edg1",
       WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "completed", kFlBody));
  ExpectForwarded(kFl, kFlName, kFlContent);

  // No ownerInfo and no results: both null (§P3.5). Any status is forwarded as is.
  Post("trainworker-0edg1", WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "ready", ""));
  ExpectForwarded(
      kFl, kFlName,
      R"({"phase":"train","status":"ready","output":{"models":null,"ownerInfo":null}})");

  // Re-inserting (the GM's resync) keeps forwarding exactly once per message.
  gm->Send("insert", JointInferenceObject());
  Barrier();
  Post("edgeworker-abcde",
       WorkerBody("edgeworker-abcde", kJi, kJiName, "inference", "running", kJiBody));
  ExpectForwarded(kJi, kJiName, kJiContent);
  ExpectNothingForwarded(kJi, "a second copy of the joint inference message");
  ExpectNothingForwarded(kFl, "a second copy of a federated learning message");

  // Another name or namespace is another resource.
  Post("trainworker-other",
       WorkerBody("trainworker-other", kFl, "other-fl-job", "train", "completed", kFlBody));
  ExpectNothingForwarded(kFl, "message for an unknown federated learning job");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(PassthroughTest, DeletedResourceIsNoLongerForwarded) {
  gm->Send("insert", JointInferenceObject());
  gm->Send("insert", FederatedObject());
  Barrier();
  Post("edgeworker-abcde",
       WorkerBody("edgeworker-abcde", kJi, kJiName, "inference", "running", kJiBody));
  ExpectForwarded(kJi, kJiName, kJiContent);

  gm->Send("delete", JointInferenceObject());
  Barrier();
  Post("edgeworker-abcde",
       WorkerBody("edgeworker-abcde", kJi, kJiName, "inference", "running", kJiBody));
  ExpectNothingForwarded(kJi, "message for a deleted joint inference service");
  // The other resource is unaffected.
  Post("trainworker-0edg1",
       WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "completed", kFlBody));
  ExpectForwarded(kFl, kFlName, kFlContent);

  // Both survive a restart as they are (the database keeps them): deleted stays deleted.
  lc->Kill();
  AppendFile(tmp + "/lc.log", "---- SIGKILL; restarting ----\n");
  StartLc();
  // At-least-once (docs/durability.md): killed right after the GM got the last frame, the LC may
  // not have deleted it from its outbox yet and sends it again first. At most that one.
  Barrier();
  int repeats = 0;
  while (auto f = gm->Next(kFl, std::chrono::milliseconds(0))) {
    EXPECT_EQ(f->content, kFlContent) << "only the last frame may be repeated";
    ++repeats;
  }
  EXPECT_LE(repeats, 1);
  Post("trainworker-0edg1",
       WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "completed", kFlBody));
  ExpectForwarded(kFl, kFlName, kFlContent);
  Post("edgeworker-abcde",
       WorkerBody("edgeworker-abcde", kJi, kJiName, "inference", "running", kJiBody));
  ExpectNothingForwarded(kJi, "message for a joint inference service deleted before the restart");

  // Deleting the federated job too, then re-inserting the joint inference service.
  gm->Send("delete", FederatedObject());
  gm->Send("insert", JointInferenceObject());
  Barrier();
  Post("trainworker-0edg1",
       WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "completed", kFlBody));
  ExpectNothingForwarded(kFl, "message for a deleted federated learning job");
  Post("edgeworker-abcde",
       WorkerBody("edgeworker-abcde", kJi, kJiName, "inference", "running", kJiBody));
  ExpectForwarded(kJi, kJiName, kJiContent);
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(PassthroughTest, UnknownKindLoggedOnceAndIgnored) {
  Json other{{"kind", "SomeOtherKind"},
             {"apiVersion", "sedna.io/v1alpha1"},
             {"metadata", Meta("something", kPassUid)},
             {"spec", {{"foo", "bar"}}}};
  gm->Send("insert", other);
  gm->Send("insert", other);
  Barrier();
  Post("someworker-abcde",
       WorkerBody("someworker-abcde", "someotherkind", "something", "train", "completed", kFlBody));
  Post("someworker-abcde",
       WorkerBody("someworker-abcde", "someotherkind", "something", "train", "completed", kFlBody));
  ExpectNothingForwarded("someotherkind", "message for an unknown owner kind");
  ExpectNothingForwarded("SomeOtherKind", "message for an unknown owner kind");
  const std::string log = lc->Log();
  EXPECT_EQ(Count(log, "someotherkind"), 2u) << "one warning per unknown kind (GM, worker)";
  EXPECT_EQ(Count(log, R"(resource kind "someotherkind" is unknown; ignored)"), 1u);
  EXPECT_EQ(Count(log, R"(ownerKind "someotherkind")"), 1u);

  // The LC is unaffected: a known kind still works.
  gm->Send("insert", FederatedObject());
  Barrier();
  Post("trainworker-0edg1",
       WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "completed", kFlBody));
  ExpectForwarded(kFl, kFlName, kFlContent);
  EXPECT_EQ(lc->Stop(), 0);
}

// The kinds Sedna v0.5+ added without an LC part (docs/protocol.md §H4.5): their GM
// frames (should a GM send any) and their workers' messages are logged once per kind and skipped;
// nothing is stored or forwarded, and the objects the LC does handle are unaffected.
TEST_F(PassthroughTest, NewerSednaKindsAreLoggedOnceAndSkipped) {
  const char* kKinds[] = {"ReidJob", "VideoAnalyticsJob", "FeatureExtractionService",
                          "ObjectSearchService", "ObjectTrackingService"};
  gm->Send("insert", FederatedObject());
  for (const char* kind : kKinds) {
    Json obj{{"kind", kind},
             {"apiVersion", "sedna.io/v1alpha1"},
             {"metadata", Meta("demo", kPassUid)},
             {"spec", {{"template", {{"spec", {{"nodeName", "edge-node"}}}}}}}};
    gm->Send("insert", obj);
    gm->Send("update", obj);
    obj["spec"] = "not an object";  // never decoded
    gm->Send("insert", obj);
    gm->Send("delete", obj);
  }
  Barrier();
  std::string lower[std::size(kKinds)];
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    lower[i] = kKinds[i];
    for (auto& c : lower[i]) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // lib/sedna's multi-edge-inference workers never report to the LC, but one that did gets
    // 200 OK, as from the v0.7.0 LC.
    for (int n = 0; n < 2; ++n) {
      Post("worker-" + lower[i],
           WorkerBody("worker-" + lower[i], lower[i], "demo", "inference", "running", kJiBody));
    }
  }
  Post("trainworker-0edg1",
       WorkerBody("trainworker-0edg1", kFl, kFlName, "train", "completed", kFlBody));
  ExpectForwarded(kFl, kFlName, kFlContent);
  const std::string log = lc->Log();
  for (const auto& kind : lower) {
    ExpectNothingForwarded(kind, "message for " + kind);
    EXPECT_EQ(Count(log, "resource kind \"" + kind + "\" has no LC part; ignored"), 1u) << kind;
    EXPECT_EQ(Count(log, "ownerKind \"" + kind + "\""), 1u) << kind;
    EXPECT_EQ(Count(log, "/" + kind + "/"), 0u) << "nothing stored or rejected for " << kind;
  }
  EXPECT_EQ(Count(log, "rejected"), 0u) << log;
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
