// End to end, bad input: the real sedna-lc binary against the GM emulator with one good IL job,
// plus one bad frame, resource, manifest field, trigger expression, index line or worker message
// per test. Each test checks that the bad input is rejected with a log line naming the object and
// the field (and the HTTP error where there is a caller), that the good job still dispatches its
// first training round byte for byte (docs/protocol.md §P3.3 IL-1), and that the process is alive.
//
// GM frames are handled in arrival order on one loop thread, so a log line about a frame is
// awaited with a round trip through the same websocket (a fresh "barrier" Dataset whose
// numberOfSamples report comes back), never by polling the log. Worker messages are handled before
// the HTTP reply, so their log lines are there when the reply is.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "adapters/json/base64.h"
#include "cluster_fixture.h"
#include "core/split.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;

constexpr const char* kJobName = "helmet-detection-demo";
constexpr const char* kIl1 =
    R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/models/base_model"}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"},"output":null})";

// A job the GM would send at (Train, Waiting): the object with one Waiting condition.
Json WaitingJob(Json job) {
  GmJob g(core::gm::JobKind::kIncremental, std::move(job));
  return g.Object();
}

std::string Join(const std::vector<std::string>& lines, const std::string& eol = "\n") {
  std::string s;
  for (const auto& l : lines) s += l + eol;
  return s;
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string TrainReport(const std::string& name, const std::string& owner = kJobName) {
  return R"({"name": ")" + name + R"(", "namespace": "default", "ownerName": ")" + owner +
         R"(", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": 0.8113}}, {"format": "ckpt", "url": "/output/train/1", "metrics": {"loss": 0.8113}}]})";
}

class IlBadInputTest : public IlJobFixture {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // the 413 case: the LC may close while the body is being sent
    MakeWorld("sedna-badin-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + "/models/deploy_model/saved_model.pb",
              "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES");
    WriteFile(rootfs + "/data/train_data.txt", "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    status_port = FreePort();
    StartLc(status_port);
    StartGoodJob();
  }

  void StartGoodJob() {
    gm->Send("insert", DatasetObject());
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    Barrier();  // the job and its model are loaded before any bad input
  }

  // Sends {"header":{...},"content":base64(content)} as it is.
  void SendRaw(const std::string& kind, const std::string& name, const std::string& op,
               const std::string& content) {
    Json h{{"namespace", "default"},
           {"resourceKind", kind},
           {"resourceName", name},
           {"operation", op}};
    ASSERT_TRUE(
        gm->server().Send(Json{{"header", h}, {"content", json::Base64Encode(content)}}.dump()));
  }

  UpstreamFrame NextJob() {
    auto f = gm->Next("IncrementalLearningJob");
    if (!f) throw std::runtime_error("no IncrementalLearningJob message from the LC");
    EXPECT_EQ(f->header.ns, "default");
    EXPECT_EQ(f->header.resource_name, kJobName) << "a message for another job: " << f->content;
    EXPECT_EQ(f->header.operation, "status");
    return *f;
  }

  // A round trip through the websocket: every frame sent before it has been handled when its
  // answer arrives (the LC handles GM frames in order on one thread).
  void Barrier() {
    auto f = BarrierAnswer();
    ASSERT_TRUE(f) << "no answer to barrier-" << barriers;
    EXPECT_EQ(f->content, R"({"numberOfSamples":1})");
  }

  std::vector<std::string> LogLines() const {
    std::vector<std::string> lines;
    std::istringstream in(lc->Log());
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }

  // Log lines that contain every needle (case-insensitive); a needle "a|b" matches a or b.
  std::vector<std::string> FindLog(const std::vector<std::string>& needles) const {
    std::vector<std::string> found;
    for (const auto& line : LogLines()) {
      const std::string l = Lower(line);
      bool all = true;
      for (const auto& needle : needles) {
        bool any = false;
        std::string alts = Lower(needle);
        size_t pos = 0;
        for (;;) {
          size_t bar = alts.find('|', pos);
          if (l.find(alts.substr(pos, bar - pos)) != std::string::npos) any = true;
          if (bar == std::string::npos) break;
          pos = bar + 1;
        }
        all = all && any;
      }
      if (all) found.push_back(line);
    }
    return found;
  }

  void ExpectLog(const std::vector<std::string>& needles) {
    std::string want;
    for (const auto& n : needles) want += " [" + n + "]";
    EXPECT_FALSE(FindLog(needles).empty()) << "no log line with all of" << want;
  }

  // The LC's own view (/status, answered on the loop thread): the good job and no other.
  void ExpectOnlyTheGoodJob() {
    HttpResult r = HttpRequest(status_port, "GET", "/status", "", {});
    ASSERT_EQ(r.status, 200) << r.raw;
    auto s = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(s.is_object() && s["jobs"].is_array()) << r.body;
    std::vector<std::string> names;
    for (const auto& j : s["jobs"]) names.push_back(j.value("name", ""));
    EXPECT_EQ(names, std::vector<std::string>{kJobName}) << r.body;
  }

  void ExpectAlive() {
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(lc->pid()), &info, WEXITED | WNOHANG | WNOWAIT), 0);
    EXPECT_EQ(info.si_pid, 0) << "sedna-lc exited (code " << info.si_status << ")";
  }

  // (c) and (d): the good job still counts samples and dispatches round 1 byte for byte, and the
  // process is alive and stops cleanly.
  void ExpectGoodJobDispatches() {
    ExpectAlive();
    ExpectOnlyTheGoodJob();
    auto lines = IndexLineList(1, 1000);
    AppendFile(rootfs + "/data/train_data.txt", Join(lines));
    WaitSampleCount(1000);
    UpstreamFrame il1 = NextJob();
    EXPECT_EQ(il1.content, kIl1);
    EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(lines, 0.8).first);
    ExpectAlive();
    EXPECT_EQ(lc->Stop(), 0);
  }

  HttpResult Post(const std::string& name, const std::string& body,
                  const std::vector<std::string>& headers = {"Content-Type: application/json"}) {
    return HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", body, headers);
  }

  uint16_t status_port = 0;
};

// ---------------------------------------------------------------- frames

// The peak resident set of process `pid` so far (VmHWM), in KiB; -1 when unreadable.
long PeakRssKib(pid_t pid) {
  const std::string st = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = st.find("VmHWM:");
  return at == std::string::npos ? -1 : std::atol(st.c_str() + at + 6);
}

// `kind` object `name` whose spec.x is `x`, as text (too deep for nlohmann::json to build).
std::string ObjectWithSpecX(const std::string& kind, const std::string& name,
                            const std::string& x) {
  return R"({"kind":")" + kind + R"(","apiVersion":"sedna.io/v1alpha1","metadata":{"name":")" +
         name + R"(","namespace":"default"},"spec":{"x":)" + x + "}}";
}

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// 800,000 JSON values in 1.6 MB.
std::string ManyValues() {
  std::string v = "[0";
  while (v.size() < 1600000) v += ",0";
  return v + "]";
}

// [D:I21.4]: a joint-inference service nesting 100,000 deep, or a federated-learning job
// nesting 600,000 deep, crashed the LC (SIGSEGV); 800,000 values in a 1.6 MB frame took 53 MB.
// Every kind, pass-through and ignored ones included, now meets the limits the others have: each
// object is refused with a line naming it and the limit, and nothing else stops.
TEST_F(IlBadInputTest, EveryKindMeetsTheFrameLimits) {
  const long rss_before = PeakRssKib(lc->pid());
  SendRaw("federatedlearningjob", "wide-fl", "insert",
          ObjectWithSpecX("FederatedLearningJob", "wide-fl", ManyValues()));
  Barrier();
  const long rss_after = PeakRssKib(lc->pid());
  std::cout << "peak RSS " << rss_before << " KiB before the 800,000-value frame, " << rss_after
            << " KiB after\n";
  EXPECT_LT(rss_after - rss_before, 24 * 1024) << "the frame cost more than 24 MiB";
  SendRaw("jointinferenceservice", "deep-ji", "insert",
          ObjectWithSpecX("JointInferenceService", "deep-ji", Nested(100000)));
  SendRaw("federatedlearningjob", "deep-fl", "update",
          ObjectWithSpecX("FederatedLearningJob", "deep-fl", Nested(600000)));
  SendRaw("reidjob", "deep-reid", "insert",
          ObjectWithSpecX("ReidJob", "deep-reid", Nested(100000)));
  SendRaw("someotherkind", "wide-other", "insert",
          ObjectWithSpecX("SomeOtherKind", "wide-other", ManyValues()));
  SendRaw("jointinferenceservice", "fine-ji", "insert",
          ObjectWithSpecX("JointInferenceService", "fine-ji", Nested(100)));
  Barrier();
  ExpectAlive();
  ExpectLog({"GM object default/federatedlearningjob/wide-fl rejected",
             "FederatedLearningJob: invalid JSON: more than 32768 values"});
  ExpectLog({"GM object default/jointinferenceservice/deep-ji rejected",
             "JointInferenceService: invalid JSON: exceeded max depth 10000"});
  ExpectLog({"GM object default/federatedlearningjob/deep-fl rejected",
             "FederatedLearningJob: invalid JSON: exceeded max depth 10000"});
  ExpectLog(
      {"GM object default/reidjob/deep-reid rejected", "invalid JSON: exceeded max depth 10000"});
  ExpectLog({"GM object default/someotherkind/wide-other rejected",
             "invalid JSON: more than 32768 values"});
  ExpectLog({"default/jointinferenceservice/fine-ji: stored"});
  EXPECT_EQ(HttpRequest(status_port, "GET", "/healthz", "", {}).status, 200);
  ExpectGoodJobDispatches();
}

// §P4.5, output_dirs.h: a job whose spec.outputDir cannot be made (here a file is where a
// directory of it must be) is loaded; the failure is made on the pool, logged naming the job and
// the field, and shown in /status ("outputDirs"); the loop, and so the good job, goes on.
TEST_F(IlBadInputTest, AnOutputDirThatCannotBeMadeIsShownInStatus) {
  WriteFile(rootfs + "/blocked", "a file where spec.outputDir needs a directory");
  IlJobSpec spec;
  spec.name = "blocked-job";
  spec.uid = "uid-blocked";
  spec.output_dir = "/blocked/out";
  const Json blocked = WaitingJob(IlJobObject(spec));
  gm->Send("insert", blocked);
  Barrier();
  // Made on the pool: awaited through /status, the LC's own view.
  std::string shown;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResult r = HttpRequest(status_port, "GET", "/status", "", {});
    ASSERT_EQ(r.status, 200) << r.raw;
    const Json status = Json::parse(r.body);
    for (const auto& j : status.at("jobs")) {
      if (j.value("name", "") == "blocked-job") shown = j.value("outputDirs", "");
    }
    if (!shown.empty() && shown != "making") break;
  }
  EXPECT_NE(shown.find("/blocked: not a directory"), std::string::npos) << shown;
  ExpectLog({"IncrementalLearningJob default/blocked-job: spec.outputDir:", "/blocked"});
  EXPECT_TRUE(stdfs::is_regular_file(rootfs + "/blocked"));
  gm->Send("delete", blocked);
  Barrier();
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, FrameThatIsNotJson) {
  ASSERT_TRUE(gm->server().Send("{\"header\": {\"namespace\": \"default\", this is not json"));
  Barrier();
  ExpectLog({"GM frame", "JSON"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, FrameWithBadBase64Content) {
  Json h{{"namespace", "default"},
         {"resourceKind", "incrementallearningjob"},
         {"resourceName", "bad-b64-job"},
         {"operation", "insert"}};
  ASSERT_TRUE(gm->server().Send(Json{{"header", h}, {"content", "eyJr!!not*base64=="}}.dump()));
  Barrier();
  ExpectLog({"bad-b64-job", "content", "base64"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, ContentThatIsNotAnObject) {
  SendRaw("incrementallearningjob", "not-an-object", "insert", "[1,2,3]");
  SendRaw("dataset", "not-an-object-ds", "insert", "\"a string\"");
  Barrier();
  ExpectLog({"not-an-object", "object", "array"});
  ExpectLog({"not-an-object-ds", "object", "string"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, UnknownOperation) {
  // A complete, valid job under an unknown operation: it must not start.
  SendRaw("incrementallearningjob", "op-patch-job", "patch",
          WaitingJob(IlJobObject({.name = "op-patch-job"})).dump());
  Barrier();
  ExpectLog({"op-patch-job", "operation", "\"patch\""});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, UnknownResourceKindIsLoggedOncePerKind) {
  Json obj = IlJobObject({.name = "kind-job"});
  SendRaw("foojob", "kind-job", "insert", obj.dump());
  SendRaw("foojob", "kind-job-2", "insert", obj.dump());
  SendRaw("barjob", "kind-job", "insert", obj.dump());
  SendRaw("foojob", "kind-job", "insert", obj.dump());
  Barrier();
  EXPECT_EQ(FindLog({"\"foojob\""}).size(), 1u);
  EXPECT_EQ(FindLog({"\"barjob\""}).size(), 1u);
  ExpectLog({"resource kind|resourceKind", "foojob", "unknown"});
  ExpectGoodJobDispatches();
}

// A condition whose data the LC cannot use (a model's device_soc_versions is not a list) keeps the
// job, leaves that condition's data out, and is logged once however often the GM resends it.
TEST_F(IlBadInputTest, UnusableConditionDataIsLoggedOnceAndKeepsTheJob) {
  Json job = WaitingJob(IlJobObject({.name = "data-job", .dataset = "other-dataset"}));
  const Json waiting = job["status"]["conditions"][0];
  Json ready = waiting;
  ready["type"] = "Ready";
  ready["message"] = "reported by lc";
  ready["data"] =
      R"({"input":{"models":[{"format":"ckpt","url":"/models/base_model","device_soc_versions":"Ascend310","classes":null}]}})";
  job["status"]["conditions"] = Json::array({waiting, ready, waiting});
  gm->Send("insert", job);
  gm->Send("insert", job);
  Barrier();
  EXPECT_EQ(FindLog({"default/incrementallearningjob/data-job", "status.conditions[1].data",
                     "input.models[0].device_soc_versions: expected an array, got string",
                     "data ignored"})
                .size(),
            1u)
      << lc->Log();
  HttpResult r = HttpRequest(status_port, "GET", "/status", "", {});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body.find("data-job"), std::string::npos) << "the job was kept: " << r.body;
  gm->Send("delete", job);
  Barrier();  // the delete is processed before /status is asked (another channel)
  ExpectGoodJobDispatches();
}

// The G2 fields the LC acts on (docs/protocol.md §H4.1-§H4.3), given the wrong type, reject
// their object with a line naming it and the field; pollPeriodSeconds, only passed on, does not.
TEST_F(IlBadInputTest, G2FieldsOfTheWrongTypeRejectOnlyTheirObject) {
  Json hot = IlJobObject({.name = "hot-string-job"});
  hot["spec"]["deploySpec"]["model"]["hotUpdateEnabled"] = "true";
  gm->Send("insert", WaitingJob(hot));
  Json eval = IlJobObject({.name = "eval-model-job"});
  eval["spec"]["evalSpec"]["initialEvalModel"] = {{"name", 7}};
  gm->Send("insert", WaitingJob(eval));
  Json model = ModelObject("soc-model", "/models/x.om", "om");
  model["spec"]["device_soc_versions"] = "Ascend310";
  gm->Send("insert", model);
  Barrier();
  ExpectLog({"IncrementalLearningJob default/hot-string-job",
             "spec.deploySpec.model.hotUpdateEnabled: expected a boolean, got string"});
  ExpectLog({"IncrementalLearningJob default/eval-model-job",
             "spec.evalSpec.initialEvalModel.name: expected a string, got number"});
  ExpectLog({"Model default/soc-model", "spec.device_soc_versions: expected an array, got string"});
  ExpectGoodJobDispatches();
}

// ---------------------------------------------------------------- manifest fields and triggers

TEST_F(IlBadInputTest, TrainProbGivenAsString) {
  Json bad = IlJobObject({.name = "prob-string-job"});
  bad["spec"]["dataset"]["trainProb"] = "0.8";
  gm->Send("insert", WaitingJob(bad));
  Barrier();
  ExpectLog({"IncrementalLearningJob default/prob-string-job", "spec.dataset.trainProb", "string"});
  ExpectGoodJobDispatches();  // the bad job would report its own IL-1 on the same dataset
}

TEST_F(IlBadInputTest, TrainProbAboveOne) {
  Json bad = IlJobObject({.name = "prob-high-job"});
  bad["spec"]["dataset"]["trainProb"] = 1.5;
  gm->Send("insert", WaitingJob(bad));
  Barrier();
  ExpectLog({"IncrementalLearningJob default/prob-high-job", "spec.dataset.trainProb", "1.5"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, TrainTriggerMetricWithoutClosingBracket) {
  Json bad = IlJobObject({.name = "metric-job"});
  bad["spec"]["trainSpec"]["trigger"]["condition"]["metric"] = "p[1";
  gm->Send("insert", WaitingJob(bad));
  Barrier();
  ExpectLog({"IncrementalLearningJob default/metric-job", "spec.trainSpec.trigger.condition.metric",
             "p[1"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, DeployTriggerUnknownOperator) {
  Json bad = IlJobObject({.name = "operator-job"});
  bad["spec"]["deploySpec"]["trigger"]["condition"]["operator"] = "~";
  gm->Send("insert", WaitingJob(bad));
  Barrier();
  ExpectLog({"IncrementalLearningJob default/operator-job",
             "spec.deploySpec.trigger.condition.operator", "\"~\""});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, TimerStartOutOfRange) {
  Json bad = IlJobObject({.name = "timer-job"});
  bad["spec"]["trainSpec"]["trigger"]["timer"]["start"] = "25:00";
  gm->Send("insert", WaitingJob(bad));
  Barrier();
  ExpectLog(
      {"IncrementalLearningJob default/timer-job", "spec.trainSpec.trigger.timer.start", "25:00"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, InvalidUpdateKeepsThePreviousVersionRunning) {
  // Had either version been taken, the threshold of 5000 would keep round 1 from firing.
  Json bad = job->Object();
  bad["spec"]["trainSpec"]["trigger"]["condition"]["threshold"] = 5000;
  bad["spec"]["deploySpec"]["trigger"]["condition"]["operator"] = "~";
  gm->Send("update", bad);
  Json bad2 = job->Object();
  bad2["spec"]["trainSpec"]["trigger"]["condition"]["threshold"] = 5000;
  bad2["spec"]["dataset"]["trainProb"] = 1.5;
  gm->Send("insert", bad2);
  Barrier();
  ExpectLog({"IncrementalLearningJob default/helmet-detection-demo",
             "spec.deploySpec.trigger.condition.operator", "previous version"});
  ExpectLog({"IncrementalLearningJob default/helmet-detection-demo", "spec.dataset.trainProb",
             "previous version"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, DatasetFormatJsonKeepsThePreviousVersion) {
  Json bad = DatasetObject();
  bad["spec"]["format"] = "json";
  gm->Send("insert", bad);
  Barrier();
  ExpectLog({"Dataset default/incremental-dataset", "spec.format", "json"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, DatasetHttpUrlKeepsThePreviousVersion) {
  Json bad = DatasetObject();
  bad["spec"]["url"] = "http://x/y";
  gm->Send("insert", bad);
  Barrier();
  ExpectLog({"Dataset default/incremental-dataset", "spec.url", "http://x/y"});
  ExpectGoodJobDispatches();
}

// ---------------------------------------------------------------- worker API (§P5.2)

TEST_F(IlBadInputTest, WorkerMalformedJsonGets400) {
  HttpResult r = Post("w-bad-json", R"({"name": "w-bad-json", "kind": )");
  EXPECT_EQ(r.status, 400) << r.raw;
  // Go: the name check comes first, so a body that does not decode reads as name "".
  const std::string go =
      "{\n \"Status\": 400,\n \"Message\": \"worker name(name=w-bad-json) in the api is different "
      "from that(name=) in the message body";
  EXPECT_EQ(r.body.substr(0, go.size()), go) << r.body;
  auto parsed = Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << r.body;
  EXPECT_EQ(parsed.value("Status", 0), 400);
  EXPECT_NE(r.raw.find("Content-Type: application/json"), std::string::npos) << r.raw;
  ExpectLog({"w-bad-json", "JSON"});
  ExpectGoodJobDispatches();
}

// Go's decoder fills every field it can before returning a type error, so the message names the
// body's worker; the report is neither forwarded nor fed to the job.
TEST_F(IlBadInputTest, WorkerBodyWithATypeErrorGets400NamingTheBodysWorker) {
  for (const std::string body :
       {R"({"name": "w-type", "ownerInfo": "x"})",
        R"({"results": [1], "name": "w-type", "ownerName": "helmet-detection-demo", )"
        R"("ownerKind": "incrementallearningjob", "kind": "train", "status": "completed"})"}) {
    HttpResult r = Post("w-type", body);
    EXPECT_EQ(r.status, 400) << r.raw;
    const std::string go =
        "{\n \"Status\": 400,\n \"Message\": \"worker name(name=w-type) in the api is different "
        "from that(name=w-type) in the message body";
    EXPECT_EQ(r.body.substr(0, go.size()), go) << r.body;
  }
  ExpectLog({"w-type", "results[0]: expected an object, got number"});
  ExpectGoodJobDispatches();
}

// A worker repeating a report is answered every time, and what the LC writes about the job's
// reports stays within the job's budget (JobEntry::kReportLogBurst lines at once, then
// kReportLogPerSecond a second), with a warning that counts the lines left out.
TEST_F(IlBadInputTest, AWorkerRepeatingAReportIsAnsweredAndLoggedWithinTheJobsBudget) {
  const std::string body = R"({"name": "w-repeat", "namespace": "default", "ownerName": ")" +
                           std::string(kJobName) +
                           R"(", "ownerKind": "incrementallearningjob", "kind": "inference", )"
                           R"("status": "running"})";
  const auto t0 = std::chrono::steady_clock::now();
  int posts = 0;
  for (; posts < 300; ++posts) ASSERT_EQ(Post("w-repeat", body).status, 200) << posts;
  // The warning comes with the next line the budget allows (a tenth of a second on): its reply
  // is the event awaited, bounded.
  bool counted = false;
  while (!counted && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    ASSERT_EQ(Post("w-repeat", body).status, 200) << posts;
    ++posts;
    counted = !FindLog({"log lines about worker reports suppressed", kJobName}).empty();
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(counted) << posts << " reports in " << elapsed << " s";
  // The report's own line and the step's ("not train or eval; forwarded only") share the budget.
  const size_t lines = FindLog({"w-repeat"}).size();
  EXPECT_GE(lines, 50u);
  EXPECT_LE(static_cast<double>(lines), 50 + 10 * elapsed + 1) << elapsed << " s";
  EXPECT_LT(lines, 2u * posts);
}

TEST_F(IlBadInputTest, WorkerNameMismatchGets400) {
  // Otherwise a valid train report for the good job: it must not be forwarded.
  HttpResult r = Post("a", TrainReport("b"));
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(r.body,
            "{\n \"Status\": 400,\n \"Message\": \"worker name(name=a) in the api is different "
            "from that(name=b) in the message body\"\n}");
  // Go logs the same message (klog.Errorf(msg)).
  ExpectLog({"name=a", "name=b"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, WorkerWrongMethodGets405) {
  HttpResult r = HttpRequest(port, "GET", "/sedna/workers/w-get/info", TrainReport("w-get"));
  EXPECT_EQ(r.status, 405) << r.raw;
  EXPECT_EQ(r.body, "405: Method Not Allowed");
  EXPECT_NE(r.raw.find("Allow: POST"), std::string::npos) << r.raw;
  ExpectLog({"w-get", "method|GET|405"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, WorkerOtherPathGets404) {
  // No worker is addressed, so there is no object to name; only the reply is checked.
  for (const char* target : {"/sedna/workers/a/status", "/sedna/workers/a/info/x",
                             "/sedna/workers//info", "/sedna/worker/a/info"}) {
    HttpResult r = HttpRequest(port, "POST", target, TrainReport("a"));
    EXPECT_EQ(r.status, 404) << target << "\n" << r.raw;
    EXPECT_EQ(r.body, "404: Page Not Found") << target;
  }
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, WorkerTextPlainGets415) {
  HttpResult r = Post("w-text", TrainReport("w-text"), {"Content-Type: text/plain"});
  EXPECT_EQ(r.status, 415) << r.raw;
  EXPECT_EQ(r.body, "415: Unsupported Media Type");
  ExpectLog({"w-text", "Content-Type|media type|415"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, WorkerBodyOverOneMiBGets413) {
  std::string body = TrainReport("w-big");
  body.insert(1, R"("pad": ")" + std::string((1 << 20) + 1, 'x') + R"(", )");
  ASSERT_GT(body.size(), size_t{1} << 20);
  HttpResult r = Post("w-big", body);
  EXPECT_EQ(r.status, 413) << r.raw.substr(0, 200);
  EXPECT_EQ(r.body, "413: Request Entity Too Large");
  ExpectLog({"w-big", "too large|413|body"});
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, WorkerReportForUnknownJobIsAcceptedAndDropped) {
  HttpResult r = Post("w-unknown", TrainReport("w-unknown", "no-such-job"));
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, kOk);
  ExpectLog({"worker w-unknown", "default/no-such-job"});
  // Nothing upstream: a forwarded message would have been queued before IL-1, and NextJob
  // requires the good job's name.
  ExpectGoodJobDispatches();
}

TEST_F(IlBadInputTest, EvalReportWithoutUrlIsRefusedAndTheGoodOneDecides) {
  auto lines = IndexLineList(1, 1000);
  AppendFile(rootfs + "/data/train_data.txt", Join(lines));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  ASSERT_EQ(il1.content, kIl1);
  job->Report(il1.content);
  job->SetPod(Stage::kTrain, PodPhase::kRunning);
  Sync();
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/model.pb", "NEW-MODEL-ROUND-1");
  EXPECT_EQ(Post("train-worker-h4k9q", TrainReport("train-worker-h4k9q")).body, kOk);
  UpstreamFrame il2 = NextJob();
  job->Report(il2.content);
  job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  UpstreamFrame il3 = NextJob();
  ASSERT_EQ(
      il3.content,
      R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}],"dataURL":"/output/data/eval/1/data.txt"},"output":null})");
  job->Report(il3.content);
  job->SetPod(Stage::kEval, PodPhase::kRunning);
  Sync();

  // results[0] has no url: refused (400 naming the field), not forwarded, the job unchanged
  // ([D:I15]: a rejected report is not forwarded; before, it was forwarded with no decision and
  // the GM's (Deploy, Waiting) was never answered).
  HttpResult bad = Post(
      "eval-worker-2bq7d",
      R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "metrics": {"recall": [0.77, 0.70], "precision": [0.81, 0.74]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"recall": [0.62, 0.66], "precision": [0.66, 0.71]}}]})");
  EXPECT_EQ(bad.status, 400) << bad.raw;
  EXPECT_NE(bad.body.find("results[0].url"), std::string::npos) << bad.body;
  ExpectLog({"eval-worker-2bq7d", "results[0].url"});

  // The eval stays outstanding: a good report is forwarded and decides; nothing came upstream
  // for the bad one, so the good report is the next frame.
  EXPECT_EQ(
      Post(
          "eval-worker-2bq7d",
          R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"recall": [0.77, 0.70], "precision": [0.81, 0.74]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"recall": [0.62, 0.66], "precision": [0.66, 0.71]}}]})")
          .body,
      kOk);
  UpstreamFrame il4 = NextJob();
  EXPECT_EQ(
      il4.content,
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pb","metrics":{"precision":[0.81,0.74],"recall":[0.77,0.70]},"url":"/output/train/1/model.pb"},{"format":"pb","metrics":{"precision":[0.66,0.71],"recall":[0.62,0.66]},"url":"/models/deploy_model/saved_model.pb"}],"ownerInfo":null}})");
  UpstreamFrame il5 = NextJob();
  EXPECT_EQ(
      il5.content,
      R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}]},"output":null})");
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  job->Report(il4.content);
  job->Report(il5.content);
  job->SetPod(Stage::kDeploy, PodPhase::kRunning);
  ASSERT_EQ(job->LastCondition(), "Train/Waiting");
  Sync();

  // Round 2 still dispatches.
  ExpectAlive();
  auto more = IndexLineList(1001, 1700);
  AppendFile(rootfs + "/data/train_data.txt", Join(more));
  WaitSampleCount(1700);
  EXPECT_EQ(
      NextJob().content,
      R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/output/train/1"}],"dataURL":"/output/data/train/2/data.txt","outputDir":"/output/train/2"},"output":null})");
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.txt"), Split(more, 0.8).first);
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- refused reports ([D:I15])

// A completed report a worker got wrong: what it says, and the field the 400 must name.
struct BadReport {
  const char* name;
  const char* worker;
  std::string results;  // the JSON of "results"
  const char* field;
};

std::string ReportBody(const char* worker, const char* kind, const std::string& results) {
  return std::string(R"({"name": ")") + worker +
         R"(", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": ")" +
         kind + R"(", "status": "completed", "results": )" + results + "}";
}

const char* kGoodDeployed = R"({"format": "pb", "url": "/models/deploy_model/saved_model.pb"})";

// Every eval field a report can get wrong is refused, and the round still ends: --deploy-wait
// after the refused report the LC sends Deploy Completed (not deployed) and the next round trains.
TEST_F(IlBadInputTest, RefusedEvalReportsLeaveNoRoundStuck) {
  const std::string trained = R"({"format": "pb", "url": "/output/train/1/model.pb"})";
  const std::vector<BadReport> cases = {
      {"no url", "eval-worker-2bq7d",
       std::string(R"([{"format": "pb", "metrics": {"precision": [0.9]}}, )") + kGoodDeployed + "]",
       "results[0].url"},
      {"no format", "eval-worker-2bq7d",
       std::string(R"([{"url": "/output/train/1/model.pb"}, )") + kGoodDeployed + "]",
       "results[0].format"},
      {"metrics not an object", "eval-worker-2bq7d",
       std::string(R"([{"format": "pb", "url": "/output/train/1/model.pb", "metrics": 3}, )") +
           kGoodDeployed + "]",
       "results[0].metrics"},
      {"empty results", "eval-worker-2bq7d", "[]", "results"},
      {"a model that was not sent", "eval-worker-2bq7d",
       std::string(R"([{"format": "pb", "url": "/etc/shadow"}, )") + kGoodDeployed + "]",
       "results[0].url"},
      {"deployed model replaced", "eval-worker-2bq7d",
       "[" + trained + R"(, {"format": "pb", "url": "/output/train/1/../../../etc/shadow"}])",
       "results[1].url"},
      {"not an eval worker's name", "train-worker-h4k9q",
       "[" + trained + ", " + kGoodDeployed + "]", "name"},
  };
  // A short --deploy-wait: the round of a refused eval report is decided after it.
  KillAndRestart(status_port, {"--deploy-wait", "0.3"});
  Barrier();
  auto lines = IndexLineList(1, 1000);
  AppendFile(rootfs + "/data/train_data.txt", Join(lines));
  WaitSampleCount(1000);
  int64_t next_line = 1001;
  for (size_t i = 0; i < cases.size(); ++i) {
    const BadReport& c = cases[i];
    SCOPED_TRACE(c.name);
    const std::string round = std::to_string(i + 1);
    UpstreamFrame ready = NextJob();
    ASSERT_NE(ready.content.find(R"("phase":"Train","status":"Ready")"), std::string::npos)
        << ready.content;
    job->Report(ready.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    Sync();
    const std::string out = "/output/train/" + round;
    stdfs::create_directories(rootfs + out);
    WriteFile(rootfs + out + "/model.pb", "MODEL-" + round);
    const std::string train = "[{\"format\": \"pb\", \"url\": \"" + out + "/model.pb\"}]";
    ASSERT_EQ(Post("train-worker-h4k9q", ReportBody("train-worker-h4k9q", "train", train)).body,
              kOk);
    job->Report(NextJob().content);
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame eval_ready = NextJob();
    ASSERT_NE(eval_ready.content.find(R"("phase":"Eval","status":"Ready")"), std::string::npos)
        << eval_ready.content;
    job->Report(eval_ready.content);
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    Sync();
    std::string results = c.results;
    for (size_t at; (at = results.find("/output/train/1/")) != std::string::npos;) {
      results.replace(at, 16, out + "/");  // this round's trained model
    }
    HttpResult r = Post(c.worker, ReportBody(c.worker, "eval", results));
    EXPECT_EQ(r.status, 400) << r.raw;
    EXPECT_NE(r.body.find(c.field), std::string::npos) << r.body;
    ExpectLog({c.worker, c.field});
    Barrier();
    auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
    EXPECT_FALSE(extra) << "a refused report was forwarded: " << extra->content;
    // The eval pod exits; a G1 GM sends no Deploy-stage condition (§P4.3), so the LC decides
    // "not deployed" itself, --deploy-wait after the refused report.
    job->SetPod(Stage::kEval, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Deploy/Waiting");
    UpstreamFrame decision = NextJob();
    EXPECT_EQ(decision.content, R"({"phase":"Deploy","status":"Completed","output":null})");
    job->Report(decision.content);
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"),
              "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES");
    // Enough new samples for the next round's trigger (> 500 train samples).
    auto more = IndexLineList(next_line, next_line + 699);
    next_line += 700;
    AppendFile(rootfs + "/data/train_data.txt", Join(more));
  }
  UpstreamFrame last = NextJob();
  EXPECT_NE(last.content.find("\"outputDir\":\"/output/train/" + std::to_string(cases.size() + 1)),
            std::string::npos)
      << "the round after the last refused report did not start: " << last.content;
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

// A train report that is refused leaves the job as it was; when the train pod exits the LC has
// no trained model, answers (Eval, Waiting) with Eval Failed, and the next round trains.
TEST_F(IlBadInputTest, RefusedTrainReportsLeaveNoRoundStuck) {
  const std::vector<BadReport> cases = {
      {"no url", "train-worker-h4k9q", R"([{"format": "pb"}])", "results[0].url"},
      {"no format", "train-worker-h4k9q", R"([{"url": "/output/train/R/model.pb"}])",
       "results[0].format"},
      {"metrics not an object", "train-worker-h4k9q",
       R"([{"format": "pb", "url": "/output/train/R/model.pb", "metrics": []}])",
       "results[0].metrics"},
      {"empty results", "train-worker-h4k9q", "[]", "results"},
      {"a host file", "train-worker-h4k9q", R"([{"format": "pb", "url": "/etc/shadow"}])",
       "results[0].url"},
      {"another round's output", "train-worker-h4k9q",
       R"([{"format": "pb", "url": "/output/train/R/../99/model.pb"}])", "results[0].url"},
      // A link inside the round's output is not refused here: the report is checked lexically on
      // the loop ([D:I21]), and the deploy opens the model confined, following no link
      // (IlConfinedTest.SwappingTheTrainedModelWithALinkNeverDeploysTheOutsideFile).
      {"a path of over 256 components", "train-worker-h4k9q",
       R"([{"format": "pb", "url": "/output/train/R)" +
           [] {
             std::string deep;
             for (int i = 0; i < 300; ++i) deep += "/a";
             return deep;
           }() +
           R"("}])",
       "results[0].url"},
      {"not a train worker's name", "eval-worker-2bq7d",
       R"([{"format": "pb", "url": "/output/train/R/model.pb"}])", "name"},
  };
  auto lines = IndexLineList(1, 1000);
  AppendFile(rootfs + "/data/train_data.txt", Join(lines));
  WaitSampleCount(1000);
  int64_t next_line = 1001;
  for (size_t i = 0; i < cases.size(); ++i) {
    const BadReport& c = cases[i];
    SCOPED_TRACE(c.name);
    const std::string round = std::to_string(i + 1);
    UpstreamFrame ready = NextJob();
    ASSERT_NE(ready.content.find("\"outputDir\":\"/output/train/" + round + "\""),
              std::string::npos)
        << ready.content;
    job->Report(ready.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    Sync();
    std::string results = c.results;
    for (size_t at; (at = results.find("/train/R/")) != std::string::npos;) {
      results.replace(at, 9, "/train/" + round + "/");
    }
    HttpResult r = Post(c.worker, ReportBody(c.worker, "train", results));
    EXPECT_EQ(r.status, 400) << r.raw;
    EXPECT_NE(r.body.find(c.field), std::string::npos) << r.body;
    ExpectLog({c.worker, c.field});
    Barrier();
    auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
    EXPECT_FALSE(extra) << "a refused report was forwarded: " << extra->content;
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame answer = NextJob();
    EXPECT_EQ(answer.content, R"({"phase":"Eval","status":"Failed","output":null})");
    job->Report(answer.content);
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    auto more = IndexLineList(next_line, next_line + 699);
    next_line += 700;
    AppendFile(rootfs + "/data/train_data.txt", Join(more));
  }
  UpstreamFrame last = NextJob();
  EXPECT_NE(last.content.find("\"outputDir\":\"/output/train/" + std::to_string(cases.size() + 1)),
            std::string::npos)
      << last.content;
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"),
            "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES");
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

// ---------------------------------------------------------------- index lines

TEST_F(IlBadInputTest, IndexLineOf200KbIsOneSample) {
  // [P:B27]: Go's Scanner stops at a line over 64 KiB and silently drops the rest of the file.
  auto lines = IndexLineList(1, 1000);
  ASSERT_TRUE(core::IsTrainSample(0.8, 333));
  std::string big = "train_images/big.jpg ";
  for (int i = 0; big.size() < 200 * 1024; ++i) big += std::to_string(i % 10);
  lines[332] = big + " 1,2,3,4,1";
  AppendFile(rootfs + "/data/train_data.txt", Join(lines));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.content, kIl1);
  const std::string train = ReadFile(rootfs + "/output/data/train/1/data.txt");
  EXPECT_EQ(train.size(), Split(lines, 0.8).first.size());
  EXPECT_TRUE(train == Split(lines, 0.8).first) << "train file differs";
  EXPECT_NE(train.find(lines[332] + "\n"), std::string::npos) << "the long line is not whole";
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlBadInputTest, IndexCrlfLinesAreCountedOnce) {
  // A CRLF line is one sample (Go's ScanLines drops the '\r'), not a sample plus an empty line.
  auto lines = IndexLineList(1, 1000);
  AppendFile(rootfs + "/data/train_data.txt", Join(lines, "\r\n"));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.content, kIl1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(lines, 0.8).first);
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
