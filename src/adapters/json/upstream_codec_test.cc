#include "adapters/json/upstream_codec.h"

#include <gtest/gtest.h>

#include "adapters/json/envelope.h"
#include "adapters/json/test_util.h"

namespace sedna::json {
namespace {

using core::MetricValue;
using core::ModelRef;
using core::StatusReport;
using testing::NestedArrays;
using testing::ReadTestdata;

// A report from its wire spelling (either job kind's).
StatusReport Report(const std::string& phase, const std::string& status) {
  StatusReport r;
  r.phase = ParseReportPhase(phase).value();
  r.status = ParseReportStatus(status).value();
  return r;
}

StatusReport Input(const std::string& phase, const std::string& status,
                   std::vector<ModelRef> models, std::string data_url, std::string data_index_url,
                   std::string output_dir) {
  StatusReport r = Report(phase, status);
  r.has_input = true;
  r.input_models = std::move(models);
  r.data_url = std::move(data_url);
  r.data_index_url = std::move(data_index_url);
  r.output_dir = std::move(output_dir);
  return r;
}

ModelRef Model(std::string format, std::string url) {
  return ModelRef{std::move(format), std::move(url), {}};
}

// ---- LC-originated reports (§P3.3, §P3.4) ----------------------------------------------------

TEST(UpstreamCodec, EncodesLcReportsByteExact) {
  const std::pair<std::string, StatusReport> kCases[] = {
      {"upstream_il-1.json", Input("Train", "Ready", {Model("ckpt", "/models/base_model")},
                                   "/output/data/train/1/data.txt", "", "/output/train/1")},
      {"upstream_il-1s.json",
       Input("Train", "Ready", {Model("ckpt", "s3://kubeedge/output/train/1")},
             "s3://kubeedge/output/data/train/2/data.txt",
             "s3://kubeedge/output/data/train/2/dataIndex.txt", "s3://kubeedge/output/train/2")},
      {"upstream_il-3.json", Input("Eval", "Ready",
                                   {Model("pb", "/output/train/1/model_finetune_tensorflow.pb"),
                                    Model("pb", "/models/deploy_model/saved_model.pb")},
                                   "/output/data/eval/2/data.txt", "", "")},
      {"upstream_il-5.json",
       Input("Deploy", "Ready", {Model("pb", "/output/train/1/model_finetune_tensorflow.pb")}, "",
             "", "")},
      {"upstream_il-6.json", Report("Deploy", "Failed")},
      {"upstream_il-7.json", Report("Deploy", "Completed")},
      {"upstream_ll-1.json",
       Input("train", "ready", {}, "/output/data/train/1/data.csv", "", "/output/train/1")},
      {"upstream_ll-3.json", Input("eval", "ready", {Model("pkl", "/output/train/1/index.pkl")},
                                   "/output/data/eval/1/data.csv", "", "/output/eval/1")},
      {"upstream_ll-5.json",
       Input("deploy", "ready", {Model("pkl", "/rootfs/output/eval/1/index.pkl")}, "", "", "")},
      {"upstream_ll-6.json", Report("deploy", "failed")},
  };
  for (const auto& [file, report] : kCases) {
    const ReportSpelling spelling =
        file.rfind("upstream_il", 0) == 0 ? ReportSpelling::kIl : ReportSpelling::kLl;
    EXPECT_EQ(EncodeStatusReport(report, spelling), ReadTestdata(file)) << file;
  }
}

// The enums meet text here only: each job kind's spelling, read back in any case.
TEST(UpstreamCodec, ReportPhaseAndStatusSpellings) {
  using core::ReportPhase;
  using core::ReportStatus;
  const struct {
    ReportPhase phase;
    ReportStatus status;
    const char *il_phase, *il_status, *ll_phase, *ll_status;
  } kRows[] = {
      {ReportPhase::kTrain, ReportStatus::kReady, "Train", "Ready", "train", "ready"},
      {ReportPhase::kEval, ReportStatus::kFailed, "Eval", "Failed", "eval", "failed"},
      {ReportPhase::kDeploy, ReportStatus::kCompleted, "Deploy", "Completed", "deploy",
       "completed"},
  };
  for (const auto& row : kRows) {
    EXPECT_EQ(ReportPhaseText(row.phase, ReportSpelling::kIl), row.il_phase);
    EXPECT_EQ(ReportStatusText(row.status, ReportSpelling::kIl), row.il_status);
    EXPECT_EQ(ReportPhaseText(row.phase, ReportSpelling::kLl), row.ll_phase);
    EXPECT_EQ(ReportStatusText(row.status, ReportSpelling::kLl), row.ll_status);
    for (const char* t : {row.il_phase, row.ll_phase}) EXPECT_EQ(ParseReportPhase(t), row.phase);
    for (const char* t : {row.il_status, row.ll_status}) {
      EXPECT_EQ(ParseReportStatus(t), row.status);
    }
  }
  EXPECT_EQ(ParseReportPhase("TRAIN"), ReportPhase::kTrain);
  EXPECT_EQ(ParseReportStatus("rEaDy"), ReportStatus::kReady);
  for (const char* t : {"", "Inference", "train ", "running"}) {
    EXPECT_EQ(ParseReportPhase(t), std::nullopt) << t;
    EXPECT_EQ(ParseReportStatus(t), std::nullopt) << t;
  }
}

TEST(UpstreamCodec, StatusReportOmitsEmptyAndNeverEncodesMetrics) {
  StatusReport r =
      Input("Train", "Ready", {ModelRef{"", "", {{"loss", MetricValue::Number(1)}}}}, "", "", "");
  EXPECT_EQ(EncodeStatusReport(r, ReportSpelling::kIl),
            R"({"phase":"Train","status":"Ready","input":{"models":[{}]},"output":null})");
  r.input_models.clear();
  EXPECT_EQ(EncodeStatusReport(r, ReportSpelling::kIl),
            R"({"phase":"Train","status":"Ready","input":{},"output":null})");
  EXPECT_EQ(EncodeStatusReport(Report("Eval", "Failed"), ReportSpelling::kLl),
            R"({"phase":"eval","status":"failed","output":null})");
  r = Input("Deploy", "Ready", {Model("p<b", "/a&b")}, "", "", "/o>");
  EXPECT_EQ(
      EncodeStatusReport(r, ReportSpelling::kIl),
      R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"p\u003cb","url":"/a\u0026b"}],"outputDir":"/o\u003e"},"output":null})");
}

// G2 (§H4.3): a model's device_soc_versions follow its url, as runtime.Model marshals them, and
// only when there are some (omitempty). No "classes":null (see EncodeStatusReport).
TEST(UpstreamCodec, StatusReportCarriesDeviceSocVersions) {
  StatusReport r = Input(
      "Eval", "Ready",
      {ModelRef{"om", "/output/train/1/a.om", {}, {"Ascend310", "<x>"}},
       ModelRef{"om", "/models/deploy.om", {}, {"Ascend710"}}, Model("pb", "/models/eval.pb")},
      "/output/data/eval/1/data.txt", "", "");
  EXPECT_EQ(
      EncodeStatusReport(r, ReportSpelling::kIl),
      R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"om","url":"/output/train/1/a.om","device_soc_versions":["Ascend310","\u003cx\u003e"]},{"format":"om","url":"/models/deploy.om","device_soc_versions":["Ascend710"]},{"format":"pb","url":"/models/eval.pb"}],"dataURL":"/output/data/eval/1/data.txt"},"output":null})");
  r = Input("Deploy", "Ready", {ModelRef{"", "", {}, {"a"}}}, "", "", "");
  EXPECT_EQ(
      EncodeStatusReport(r, ReportSpelling::kIl),
      R"({"phase":"Deploy","status":"Ready","input":{"models":[{"device_soc_versions":["a"]}]},"output":null})");
}

TEST(UpstreamCodec, DatasetStatus) {
  EXPECT_EQ(EncodeDatasetStatus(1000), ReadTestdata("content_lc_dataset_status.json"));
  EXPECT_EQ(EncodeDatasetStatus(0), R"({"numberOfSamples":0})");
  EXPECT_EQ(EncodeDatasetStatus(-1), R"({"numberOfSamples":-1})");
}

// ---- worker messages (§P5.1, §P5.4) and forwarding (§P3.5) -----------------------------------

TEST(UpstreamCodec, DecodesIlTrainWorkerBody) {
  auto m = DecodeWorkerMessage(ReadTestdata("worker_il_train.json"));
  ASSERT_TRUE(m.ok()) << m.message();
  const core::WorkerReport& r = m->report;
  EXPECT_EQ(r.worker_name, "train-worker-h4k9q");
  EXPECT_EQ(r.ns, "default");
  EXPECT_EQ(r.owner_name, "helmet-detection-demo");
  EXPECT_EQ(r.owner_kind, "incrementallearningjob");
  EXPECT_EQ(r.kind, "train");
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(r.results_error, "");
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].format, "pb");
  EXPECT_EQ(r.results[0].url, "/output/train/1/model_finetune_tensorflow.pb");
  EXPECT_EQ(r.results[0].metrics.at("loss"), MetricValue::Number(0.8113));
  EXPECT_EQ(r.results[1].format, "ckpt");
  EXPECT_EQ(r.results[1].url, "/output/train/1");
  EXPECT_TRUE(m->results.is_array());
  EXPECT_FALSE(m->owner_info.has_value());
}

TEST(UpstreamCodec, DecodesMetricKindsOfWorkerBodies) {
  auto il = DecodeWorkerMessage(ReadTestdata("worker_il_eval.json"));
  ASSERT_TRUE(il.ok()) << il.message();
  ASSERT_EQ(il->report.results.size(), 2u);
  EXPECT_EQ(il->report.results[1].metrics.at("precision"),
            MetricValue::List({0.66, 0.71, 0.58, 0.40}));
  auto ll = DecodeWorkerMessage(ReadTestdata("worker_ll_train.json"));
  ASSERT_TRUE(ll.ok()) << ll.message();
  ASSERT_EQ(ll->report.results.size(), 1u);
  EXPECT_EQ(ll->report.results[0].metrics.at("summer_2"), MetricValue::Other());
  EXPECT_EQ(ll->report.owner_kind, "lifelonglearningjob");
  auto lle = DecodeWorkerMessage(ReadTestdata("worker_ll_eval.json"));
  ASSERT_TRUE(lle.ok());
  EXPECT_EQ(lle->report.results[0].metrics.at("precision_score"), MetricValue::Number(0.62));
}

// The worker API decodes without the metrics (ReportMetrics::kDeferred) and the batch adds them:
// together, the report DecodeWorkerMessage makes at once. Only the metric values wait: a
// `metrics` of the wrong type is still a results error.
TEST(UpstreamCodec, DeferredMetricsDecodeToTheSameReport) {
  for (const char* file : {"worker_il_train.json", "worker_il_eval.json", "worker_ll_train.json",
                           "worker_ll_eval.json"}) {
    SCOPED_TRACE(file);
    const std::string body = ReadTestdata(file);
    auto full = DecodeWorkerMessage(body);
    auto head = DecodeWorkerMessage(body, ReportMetrics::kDeferred);
    ASSERT_TRUE(full.ok() && head.ok());
    ASSERT_EQ(head->report.results.size(), full->report.results.size());
    for (const core::ModelRef& r : head->report.results) EXPECT_TRUE(r.metrics.empty());
    EXPECT_TRUE(head->report.observed_metrics.empty());
    EXPECT_FALSE(full->report.results.front().metrics.empty());
    core::WorkerReport r = head->report;
    DecodeReportMetrics(head->results, r);
    EXPECT_EQ(r.results, full->report.results);
    EXPECT_EQ(r.observed_metrics, full->report.observed_metrics);
    EXPECT_EQ(EncodeForwardedWorkerMessage(*head), EncodeForwardedWorkerMessage(*full));
    // Dropped (a batch hands each report back so), the report is the deferred one again; decoded
    // again, the same full one.
    DropReportMetrics(r);
    EXPECT_EQ(r.results, head->report.results);
    EXPECT_TRUE(r.observed_metrics.empty());
    DecodeReportMetrics(head->results, r);
    EXPECT_EQ(r.results, full->report.results);
    EXPECT_EQ(r.observed_metrics, full->report.observed_metrics);
  }
  auto bad = DecodeWorkerMessage(
      R"({"name":"eval-worker-x","kind":"eval","status":"completed","results":[)"
      R"({"format":"pkl","url":"u","metrics":[0.5]}]})",
      ReportMetrics::kDeferred);
  ASSERT_TRUE(bad.ok()) << bad.message();
  EXPECT_EQ(bad->report.results_error, "results[0].metrics: expected an object, got array");
}

// Each metric decodes once for both readers: results[i].metrics (Number, List, Other; a later
// duplicate wins) and observed_metrics (a number, a list's mean, a mixed array's numbers' mean,
// a nested object's members; a later duplicate wins; names past the bound are left out).
TEST(UpstreamCodec, MetricsAndObservedMetricsAgreeMemberByMember) {
  const std::string long_name(core::kMaxObservedMetricName + 1, 'n');
  auto m = DecodeWorkerMessage(
      R"({"name":"eval-worker-x","kind":"eval","status":"completed","results":[)"
      R"({"format":"pkl","url":"u","metrics":{"p":0.5,"r":[0.25,0.75,0.5],"e":[],)"
      R"("mix":[1,"x",3,null],"t":{"acc":0.9,"l":[1,2]},"d":1,"d":2,"tiny":1e-400,)"
      R"("s":"text","b":true,")" +
      long_name + R"(":7}}]})");
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_EQ(m->report.results.size(), 1u);
  const core::Metrics& metrics = m->report.results[0].metrics;
  EXPECT_EQ(metrics.size(), 10u);
  EXPECT_EQ(metrics.at("p"), core::MetricValue::Number(0.5));
  EXPECT_EQ(metrics.at("r"), core::MetricValue::List({0.25, 0.75, 0.5}));
  EXPECT_EQ(metrics.at("e"), core::MetricValue::List({}));
  EXPECT_EQ(metrics.at("mix"), core::MetricValue::Other());
  EXPECT_EQ(metrics.at("t"), core::MetricValue::Other());
  EXPECT_EQ(metrics.at("d"), core::MetricValue::Number(2));
  EXPECT_EQ(metrics.at("tiny"), core::MetricValue::Number(0));
  EXPECT_EQ(metrics.at("s"), core::MetricValue::Other());
  EXPECT_EQ(metrics.at("b"), core::MetricValue::Other());
  EXPECT_EQ(metrics.at(long_name), core::MetricValue::Number(7));
  ASSERT_EQ(m->report.observed_metrics.size(), 1u);
  EXPECT_EQ(m->report.observed_metrics[0], (core::MetricNumbers{{"p", 0.5},
                                                                {"r", 0.5},
                                                                {"mix", 2},
                                                                {"t/acc", 0.9},
                                                                {"t/l", 1.5},
                                                                {"d", 2},
                                                                {"tiny", 0}}));
  // The bound counts distinct names: 31 more fill it, the 33rd name is left out.
  std::string body = R"({"name":"eval-worker-x","kind":"eval","status":"completed","results":[)"
                     R"({"format":"pkl","url":"u","metrics":{"a":[1,3],"a":[5])";
  for (int i = 0; i < 32; ++i) body += ",\"m" + std::to_string(i) + "\":" + std::to_string(i);
  body += "}}]}";
  auto bounded = DecodeWorkerMessage(body);
  ASSERT_TRUE(bounded.ok()) << bounded.message();
  const core::MetricNumbers& obs = bounded->report.observed_metrics[0];
  EXPECT_EQ(obs.size(), core::kMaxObservedMetrics);
  EXPECT_EQ(obs.at("a"), 5);
  EXPECT_EQ(obs.count("m30"), 1u);
  EXPECT_EQ(obs.count("m31"), 0u);
  EXPECT_EQ(bounded->report.results[0].metrics.size(), 33u);
}

// The observers' numbers (core::MetricNumbers): LL's per-task objects flattened, a list as its
// mean, a hostile report bounded.
TEST(UpstreamCodec, ObservedMetricsFlattenWithinBounds) {
  auto ll = DecodeWorkerMessage(ReadTestdata("worker_ll_train.json"));
  ASSERT_TRUE(ll.ok()) << ll.message();
  ASSERT_EQ(ll->report.observed_metrics.size(), 1u);
  EXPECT_EQ(ll->report.observed_metrics[0], (core::MetricNumbers{{"summer_2/mlogloss", 0.91}}));
  std::string many = "{";
  for (int i = 0; i < 100; ++i) many += (i ? ",\"m" : "\"m") + std::to_string(i) + "\":1";
  many += "}";
  auto m = DecodeWorkerMessage(
      R"({"name":"eval-worker-x","kind":"eval","status":"completed","results":[)"
      R"({"format":"pkl","url":"u","metrics":{"task_a":{"acc":0.9},"task_b":{"acc":0.7,"deep":{"x":{"y":1}}},"f":[1,"x",2]}},)"
      R"({"format":"pkl","url":"v","metrics":)" +
      many + R"(},{"format":"pkl","url":"w"},null]})");
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_EQ(m->report.observed_metrics.size(), 4u);
  EXPECT_EQ(m->report.observed_metrics[0],
            (core::MetricNumbers{{"task_a/acc", 0.9}, {"task_b/acc", 0.7}, {"f", 1.5}}));
  EXPECT_EQ(m->report.observed_metrics[1].size(), core::kMaxObservedMetrics);
  EXPECT_TRUE(m->report.observed_metrics[2].empty());
  EXPECT_TRUE(m->report.observed_metrics[3].empty());
  // What the core reads when the codec did not fill them (NumbersOf).
  EXPECT_EQ(core::ObservedMetrics(m->report), m->report.observed_metrics);
  core::WorkerReport bare;
  bare.results = {ModelRef{"pkl",
                           "u",
                           {{"acc", MetricValue::Number(0.5)},
                            {"p", MetricValue::List({0.5, 1.0})},
                            {"t", MetricValue::Other()}}}};
  EXPECT_EQ(core::ObservedMetrics(bare),
            (std::vector<core::MetricNumbers>{{{"acc", 0.5}, {"p", 0.75}}}));
}

TEST(UpstreamCodec, ForwardsWorkerBodiesByteExact) {
  const std::pair<std::string, std::string> kCases[] = {
      {"worker_il_train.json", "upstream_il-2.json"},
      {"worker_il_eval.json", "upstream_il-4.json"},
      {"worker_ll_train.json", "upstream_ll-2.json"},
      {"worker_ll_eval.json", "upstream_ll-4.json"},
  };
  for (const auto& [body, golden] : kCases) {
    auto m = DecodeWorkerMessage(ReadTestdata(body));
    ASSERT_TRUE(m.ok()) << body << ": " << m.message();
    EXPECT_EQ(EncodeForwardedWorkerMessage(*m), ReadTestdata(golden)) << body;
  }
  // IL-4 keeps the worker's number text.
  std::string il4 = ReadTestdata("upstream_il-4.json");
  EXPECT_NE(il4.find("0.70,"), std::string::npos);
  EXPECT_NE(il4.find("0.40]"), std::string::npos);
}

TEST(UpstreamCodec, ForwardsOwnerInfoAndAbsentResults) {
  auto m = DecodeWorkerMessage(
      R"({"kind":"inference","status":"running","ownerInfo":{"z":[1.50,{"b":"<","a":null}],"a":1E3}})");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(
      EncodeForwardedWorkerMessage(*m),
      R"({"phase":"inference","status":"running","output":{"models":null,"ownerInfo":{"a":1E3,"z":[1.50,{"a":null,"b":"\u003c"}]}}})");
  m = DecodeWorkerMessage(R"({"kind":"train","status":"completed","results":[],"ownerInfo":null})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(EncodeForwardedWorkerMessage(*m),
            R"({"phase":"train","status":"completed","output":{"models":[],"ownerInfo":null}})");
  m = DecodeWorkerMessage(R"({"results":null})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(EncodeForwardedWorkerMessage(*m),
            R"({"phase":"","status":"","output":{"models":null,"ownerInfo":null}})");
}

// A custom worker's runtime.Model keys (§H4.4: the GM builds the LL knowledge base from them) are
// forwarded as the worker wrote them: keys sorted, number text kept (Python's 12.0 stays 12.0,
// which a G2 GM refuses for an int, but deciding that is the GM's), whatever their types.
TEST(UpstreamCodec, ForwardsRuntimeModelKeysVerbatim) {
  auto m = DecodeWorkerMessage(
      R"({"name": "train-worker-x", "namespace": "default", "ownerName": "seg", "ownerKind": "lifelonglearningjob", "kind": "train", "status": "completed", "results": [{"url": "/output/train/1/index.pkl", "format": "pkl", "classes": ["road", "side<walk>"], "current_metric": {"front_model": {"mIoU": 0.610}}, "history_metric": 5e-1, "number_of_labeled_unseen_sample": 12.0, "number_of_model": 2, "number_of_unseen_sample": -0, "device_soc_versions": ["Ascend310"], "metrics": {"acc": 0.90}}, {"url": "/b", "format": "pkl", "classes": null, "current_metric": "x"}]})");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->report.results_error, "");
  EXPECT_EQ(
      EncodeForwardedWorkerMessage(*m),
      R"({"phase":"train","status":"completed","output":{"models":[{"classes":["road","side\u003cwalk\u003e"],"current_metric":{"front_model":{"mIoU":0.610}},"device_soc_versions":["Ascend310"],"format":"pkl","history_metric":5e-1,"metrics":{"acc":0.90},"number_of_labeled_unseen_sample":12.0,"number_of_model":2,"number_of_unseen_sample":-0,"url":"/output/train/1/index.pkl"},{"classes":null,"current_metric":"x","format":"pkl","url":"/b"}],"ownerInfo":null}})");
}

// A result's devices feed model selection (§H4.3) when they are a list of strings; anything else
// is left out without refusing the report.
TEST(UpstreamCodec, WorkerResultDevices) {
  auto m = DecodeWorkerMessage(
      R"({"kind":"train","status":"completed","results":[{"format":"om","url":"/a","device_soc_versions":["Ascend310","Ascend710"]},{"format":"om","url":"/b","device_soc_versions":"Ascend310"},{"format":"om","url":"/c","device_soc_versions":["x",1]},{"format":"om","url":"/d","device_soc_versions":[]},{"format":"om","url":"/e"}]})");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->report.results_error, "");
  ASSERT_EQ(m->report.results.size(), 5u);
  EXPECT_EQ(m->report.results[0].devices, (std::vector<std::string>{"Ascend310", "Ascend710"}));
  for (size_t i = 1; i < 5; ++i) EXPECT_TRUE(m->report.results[i].devices.empty()) << i;
}

// The hot-update inference worker's report (§H1.9: lib/sedna sends no `results`).
TEST(UpstreamCodec, ForwardsHotUpdateDeployReport) {
  auto m = DecodeWorkerMessage(
      R"({"name":"inferworker-x1y2z","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"deploy","status":"completed"})");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(EncodeForwardedWorkerMessage(*m),
            R"({"phase":"deploy","status":"completed","output":{"models":null,"ownerInfo":null}})");
  auto data = CondDataFromUpstreamContent(EncodeForwardedWorkerMessage(*m));
  ASSERT_TRUE(data.ok()) << data.message();
  EXPECT_EQ(*data, R"({"output":{}})");
}

// Go's []map[string]interface{}: a result that is neither an object nor null fails the decode.
TEST(UpstreamCodec, ResultThatIsNotAnObjectIsADecodeError) {
  for (const char* results : {"[1]", R"([{"format":"pb","url":"/a"},"x"])", "[[]]", "[true]"}) {
    auto m = DecodeWorkerMessage(std::string(R"({"name":"w","results":)") + results + "}");
    ASSERT_FALSE(m.ok()) << results;
    EXPECT_NE(m.message().find("expected an object"), std::string::npos) << m.message();
    EXPECT_NE(m.message().find("results["), std::string::npos) << m.message();
  }
}

TEST(UpstreamCodec, WorkerNameInIsWhatGoKeepsAfterADecodeError) {
  EXPECT_EQ(WorkerNameIn(R"({"name":"w1","ownerInfo":"x"})"), "w1");
  EXPECT_EQ(WorkerNameIn(R"({"results":[1],"name":"w1"})"), "w1");  // filled whatever the order
  EXPECT_EQ(WorkerNameIn(R"({"name":"a","name":"b"})"), "b");       // the last one, as Go
  EXPECT_EQ(WorkerNameIn(R"({"name":5})"), "");
  EXPECT_EQ(WorkerNameIn(R"({"name":"w1", )"), "");  // a syntax error fills nothing
  EXPECT_EQ(WorkerNameIn(R"(["name"])"), "");
}

TEST(UpstreamCodec, ResultsAreLenientAndReportTheFirstProblem) {
  struct Case {
    std::string results;
    std::string error;
    size_t count;
  };
  const Case kCases[] = {
      {R"([{"format":"pb","url":"/m"}])", "", 1},
      {"[null]", "results[0]: expected an object, got null", 1},
      {R"([{"format":"pb"}])", "results[0].url: missing", 1},
      {R"([{"format":"pb","url":null}])", "results[0].url: missing", 1},
      {R"([{"format":"pb","url":5}])", "results[0].url: expected a string, got number", 1},
      {R"([{"url":"/m"}])", "results[0].format: missing", 1},
      {R"([{"format":["pb"],"url":{}}])", "results[0].format: expected a string, got array", 1},
      {R"([{"format":"pb","url":"/a"},{"format":"pb"},null])", "results[1].url: missing", 3},
      {R"([{"format":"pb","url":"/a","metrics":[1]}])",
       "results[0].metrics: expected an object, got array", 1},
  };
  for (const auto& c : kCases) {
    auto m =
        DecodeWorkerMessage(R"({"kind":"eval","status":"completed","results":)" + c.results + "}");
    ASSERT_TRUE(m.ok()) << c.results << ": " << m.message();
    EXPECT_EQ(m->report.results_error, c.error) << c.results;
    EXPECT_EQ(m->report.results.size(), c.count) << c.results;
    // Forwarding is verbatim regardless.
    EXPECT_NE(EncodeForwardedWorkerMessage(*m).find("\"models\":["), std::string::npos);
  }
  auto m = DecodeWorkerMessage(R"({"results":[{"format":"pb"},{"format":"ckpt","url":"/b"}]})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->report.results[0], (ModelRef{"pb", "", {}}));
  EXPECT_EQ(m->report.results[1], (ModelRef{"ckpt", "/b", {}}));
}

TEST(UpstreamCodec, WorkerBodyTypeErrors) {
  struct Case {
    std::string body;
    std::string error;  // prefix
  };
  const Case kCases[] = {
      {R"({"results":{}})", "results: expected an array, got object"},
      {R"({"results":"x"})", "results: expected an array, got string"},
      {R"({"ownerInfo":[]})", "ownerInfo: expected an object, got array"},
      {R"({"name":1})", "name: expected a string, got number"},
      {R"({"namespace":true})", "namespace: expected a string, got boolean"},
      {R"({"ownerName":{}})", "ownerName: expected a string, got object"},
      {R"({"ownerKind":[]})", "ownerKind: expected a string, got array"},
      {R"({"kind":2})", "kind: expected a string, got number"},
      {R"({"status":0.5})", "status: expected a string, got number"},
      {"[]", "body: expected an object, got array"},
      {"\"x\"", "body: expected an object, got string"},
      {"", "invalid JSON: "},
      {"{\"name\": \"w\", ", "invalid JSON: "},
      {"name=w", "invalid JSON: "},
      {R"({"ownerInfo":)" + NestedArrays(10001) + "}", "invalid JSON: exceeded max depth"},
      // [D:I15.10]: the job is named by Kubernetes names (the caller answers 400).
      {R"({"namespace":"default","ownerName":"a/b"})", "ownerName: \"a/b\" must not contain '/'"},
      {R"({"namespace":"default","ownerName":".."})", "ownerName: \"..\" is not a valid name: "},
      {R"({"namespace":"default","ownerName":"Helmet"})",
       "ownerName: \"Helmet\" is not a valid name: "},
      {R"({"namespace":"a/b","ownerName":"j"})", "namespace: \"a/b\" must not contain '/'"},
      {R"({"namespace":"Default","ownerName":"j"})",
       "namespace: \"Default\" is not a valid namespace: "},
  };
  for (const auto& c : kCases) {
    Result<WorkerMessage> m = Result<WorkerMessage>::Error("unset");
    EXPECT_NO_THROW(m = DecodeWorkerMessage(c.body)) << c.body;
    ASSERT_FALSE(m.ok()) << c.body;
    EXPECT_EQ(m.message().rfind(c.error, 0), 0u) << c.body << " -> " << m.message();
  }
}

TEST(UpstreamCodec, WorkerBodyDeepAndLarge) {
  std::string deep = R"({"kind":"train","status":"completed","ownerInfo":{"x":)" +
                     NestedArrays(9998, "0.50") + "}}";
  auto m = DecodeWorkerMessage(deep);
  ASSERT_TRUE(m.ok()) << m.message();
  std::string fwd = EncodeForwardedWorkerMessage(*m);
  EXPECT_NE(fwd.find(NestedArrays(9998, "0.50")), std::string::npos);

  std::string big(100 * 1024, 'u');
  m = DecodeWorkerMessage(R"({"results":[{"format":"pb","url":")" + big + "\"}]}");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->report.results[0].url, big);
}

// ---- condition data (§P4.1) ------------------------------------------------------------------

TEST(UpstreamCodec, CondDataMatchesGmForLiterals) {
  const std::pair<std::string, std::string> kCases[] = {
      {"upstream_il-1.json", "conddata_il-1.json"}, {"upstream_il-2.json", "conddata_il-2.json"},
      {"upstream_il-4.json", "conddata_il-4.json"}, {"upstream_il-7.json", "conddata_il-7.json"},
      {"upstream_ll-1.json", "conddata_ll-1.json"},
  };
  for (const auto& [content, golden] : kCases) {
    auto d = CondDataFromUpstreamContent(ReadTestdata(content));
    ASSERT_TRUE(d.ok()) << content << ": " << d.message();
    EXPECT_EQ(*d, ReadTestdata(golden)) << content;
  }
  // And the condition stored by the GM in §P4.1 carries exactly that string.
  EXPECT_NE(ReadTestdata("condition_il-2.json").find("\"data\":\"{\\\"output\\\""),
            std::string::npos);
}

TEST(UpstreamCodec, CondDataShapes) {
  struct Case {
    std::string content;
    std::string data;
  };
  const Case kCases[] = {
      {R"({"phase":"train","status":"ready","input":{}})", R"({"input":{}})"},
      {R"({"input":null,"output":null})", "{}"},
      {R"({"output":{"ownerInfo":{"a":1},"models":[]}})", R"({"output":{}})"},
      {R"({"output":{"model":{"format":"pb","metrics":{}},"models":[null]}})",
       R"({"output":{"model":{"format":"pb"},"models":[{}]}})"},
      {R"({"input":{"outputDir":"/o","dataIndexURL":"/i","dataURL":"/d","models":[{"url":"/m","extra":1,"format":"f"}],"model":{"url":"/s"}}})",
       R"({"input":{"model":{"url":"/s"},"models":[{"format":"f","url":"/m"}],"dataURL":"/d","dataIndexURL":"/i","outputDir":"/o"}})"},
      {R"({"output":{"models":[{"metrics":{"b":1E2,"a":[0.70,-0.0,1e-07,12345678901234567890],"c":{"y":"\u003e","x":true,"z":null}}}]}})",
       R"({"output":{"models":[{"metrics":{"a":[0.7,-0,1e-7,12345678901234567000],"b":100,"c":{"x":true,"y":"\u003e","z":null}}}]}})"},
      {R"({"output":{"models":[{"format":"","url":""}]},"input":{"dataURL":""}})",
       R"({"input":{},"output":{"models":[{}]}})"},
  };
  for (const auto& c : kCases) {
    auto d = CondDataFromUpstreamContent(c.content);
    ASSERT_TRUE(d.ok()) << c.content << ": " << d.message();
    EXPECT_EQ(*d, c.data) << c.content;
  }
}

TEST(UpstreamCodec, CondDataErrorsAsGmUnmarshalWould) {
  struct Case {
    std::string content;
    std::string error;  // prefix
  };
  const Case kCases[] = {
      {R"({"phase":1})", "phase: expected a string, got number"},
      {R"({"status":[]})", "status: expected a string, got array"},
      {R"({"input":"x"})", "input: expected an object, got string"},
      {R"({"input":{"models":{}}})", "input.models: expected an array, got object"},
      {R"({"input":{"models":[{"url":1}]}})", "input.models[0].url: expected a string, got number"},
      {R"({"input":{"dataURL":1}})", "input.dataURL: expected a string, got number"},
      {R"({"output":{"models":[[]]}})", "output.models[0]: expected an object, got array"},
      {R"({"output":{"model":{"metrics":"x"}}})",
       "output.model.metrics: expected an object, got string"},
      {R"({"output":{"model":[]}})", "output.model: expected an object, got array"},
      {"[]", "content: expected an object, got array"},
      {"{", "invalid JSON: "},
  };
  for (const auto& c : kCases) {
    auto d = CondDataFromUpstreamContent(c.content);
    ASSERT_FALSE(d.ok()) << c.content;
    EXPECT_EQ(d.message().rfind(c.error, 0), 0u) << c.content << " -> " << d.message();
  }
}

// ---- worker API reply (§P5.2) ----------------------------------------------------------------

TEST(UpstreamCodec, WorkerApiReplyIsGoRestfulPrettyPrint) {
  EXPECT_EQ(EncodeWorkerApiReply(200, "OK"), "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}");
  EXPECT_EQ(EncodeWorkerApiReply(400,
                                 "worker name(name=a) in the api is different from that(name=<b>) "
                                 "in the message body"),
            "{\n \"Status\": 400,\n \"Message\": \"worker name(name=a) in the api is different "
            "from that(name=\\u003cb\\u003e) in the message body\"\n}");
  EXPECT_EQ(EncodeWorkerApiReply(500, "a\"b\n"),
            "{\n \"Status\": 500,\n \"Message\": \"a\\\"b\\n\"\n}");
}

}  // namespace
}  // namespace sedna::json

namespace sedna::json {
namespace {

TEST(WorkerResultsTest, MetricsOfTheWrongTypeAreAResultsError) {
  auto m = DecodeWorkerMessage(
      R"({"name":"w","kind":"eval","status":"completed","results":[{"format":"pkl","url":"/a","metrics":"0.9"}]})");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->report.results_error, "results[0].metrics: expected an object, got string");
  auto ok = DecodeWorkerMessage(
      R"({"name":"w","kind":"eval","status":"completed","results":[{"format":"pkl","url":"/a","metrics":null}]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->report.results_error, "");
}

TEST(UpstreamCodec, AWorkerBodyOfManySmallValuesIsRefused) {
  std::string body = R"({"name":"w","results":[{"format":"pb","url":"/m","metrics":{"x":[0)";
  for (size_t i = 0; i < kMaxWorkerBodyValues; ++i) body += ",0";
  body += "]}}]}";
  auto m = DecodeWorkerMessage(body);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "invalid JSON: more than 32768 values");
  EXPECT_EQ(WorkerNameIn(body), "");
}

// ---- the outbox quotas: which reports and frames only inform --------------------------------

TEST(UpstreamCodec, InformationalReportsAreAllButTrainAndEvalCompletions) {
  struct Case {
    const char* kind;
    const char* status;
    bool informational;
  };
  const Case kCases[] = {
      {"train", "completed", false},    {"train", "failed", false},
      {"eval", "completed", false},     {"eval", "failed", false},
      {"Train", "Completed", false},    {"EVAL", "FAILED", false},
      {"inference", "completed", true}, {"inference", "running", true},
      {"train", "running", true},       {"train", "ready", true},
      {"deploy", "completed", true},    {"", "", true},
      {"trains", "completed", true},    {"train", "completed ", true},
      {"hardexample", "", true},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(IsInformationalReport(c.kind, c.status), c.informational)
        << c.kind << "/" << c.status;
  }
}

WorkerMessage Message(const std::string& kind, const std::string& status,
                      const std::string& pad = "") {
  WorkerMessage m;
  m.report.kind = kind;
  m.report.status = status;
  m.results = RawJson::Array({});
  if (!pad.empty()) m.owner_info = RawJson::Object({{"pad", RawJson::String(pad)}});
  return m;
}

std::string Framed(const std::string& content) {
  return EncodeFrame({"default", "incrementallearningjob", "j", "status"}, content);
}

// The job runner tells the outbox a frame's class without reading it (PlannedStep::informational):
// a forwarded report's is IsInformationalReport of its kind and status, a status report's false.
// That must be IsInformationalFrame's answer for every kind and status, whatever their spelling,
// escaping or length, and for every status report.
TEST(UpstreamCodec, AForwardedFramesClassIsItsReportsAndAStatusReportsIsFalse) {
  const std::vector<std::string> names = {"train",
                                          "eval",
                                          "Train",
                                          "EVAL",
                                          "completed",
                                          "Completed",
                                          "FAILED",
                                          "failed",
                                          "ready",
                                          "running",
                                          "inference",
                                          "",
                                          "trains",
                                          "completed ",
                                          "tr\"ain",
                                          "eval\\",
                                          "<eval>",
                                          "\u00e9val",
                                          std::string(600, 't'),
                                          std::string(100, 'e'),
                                          "train\n",
                                          "\xff\xfe"};
  for (const std::string& kind : names) {
    for (const std::string& status : names) {
      for (const std::string& pad : {std::string(), std::string(3000, 'p')}) {
        ASSERT_EQ(
            IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message(kind, status, pad)))),
            IsInformationalReport(kind, status))
            << kind << " / " << status << " / " << pad.size();
      }
    }
  }
  for (auto phase :
       {core::ReportPhase::kTrain, core::ReportPhase::kEval, core::ReportPhase::kDeploy}) {
    for (auto status : {core::ReportStatus::kReady, core::ReportStatus::kCompleted,
                        core::ReportStatus::kFailed}) {
      for (bool input : {false, true}) {
        StatusReport r;
        r.phase = phase;
        r.status = status;
        r.has_input = input;
        r.data_url = input ? "/output/data/train/1/data.txt" : "";
        for (auto spelling : {ReportSpelling::kIl, ReportSpelling::kLl}) {
          ASSERT_FALSE(IsInformationalFrame(Framed(EncodeStatusReport(r, spelling))));
        }
      }
    }
  }
}

TEST(UpstreamCodec, InformationalFramesAreForwardedReportsThatOnlyInform) {
  // Forwarded worker messages: as their report.
  EXPECT_TRUE(IsInformationalFrame(
      Framed(EncodeForwardedWorkerMessage(Message("inference", "completed")))));
  EXPECT_FALSE(
      IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("train", "completed")))));
  EXPECT_FALSE(
      IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("Eval", "failed")))));
  EXPECT_TRUE(
      IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("train", "ready")))));
  // Large ones cost the same: only the head is read.
  EXPECT_TRUE(IsInformationalFrame(Framed(
      EncodeForwardedWorkerMessage(Message("inference", "completed", std::string(1 << 20, 'x'))))));
  EXPECT_FALSE(IsInformationalFrame(Framed(
      EncodeForwardedWorkerMessage(Message("train", "completed", std::string(1 << 20, 'x'))))));
  // A phase or status too long for the head, or escaped, is none of the names.
  EXPECT_TRUE(IsInformationalFrame(
      Framed(EncodeForwardedWorkerMessage(Message(std::string(600, 't'), "completed")))));
  EXPECT_TRUE(IsInformationalFrame(
      Framed(EncodeForwardedWorkerMessage(Message("train", std::string(600, 'c'))))));
  EXPECT_TRUE(
      IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("tr\"ain", "completed")))));
  EXPECT_TRUE(
      IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("train\\", "completed")))));
  EXPECT_TRUE(
      IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("<train>", "completed")))));
  // Names ending on every byte around the first 96 decoded bytes (read first, then the 513 when
  // those do not decide), and names past the 513: the same answers. (Where the name ends a few
  // bytes short of 513, ",\"output\":{" is cut and the frame counts against the bound.)
  for (size_t n = 1; n < 600; n += n < 440 || n >= 520 ? 1 : 80) {
    const std::string name(n, 'e');
    ASSERT_TRUE(IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message(name, "failed")))))
        << n;
    ASSERT_TRUE(IsInformationalFrame(Framed(EncodeForwardedWorkerMessage(Message("eval", name)))))
        << n;
    StatusReport own;
    own.has_input = true;
    own.data_url = name;
    ASSERT_FALSE(IsInformationalFrame(Framed(EncodeStatusReport(own, ReportSpelling::kLl)))) << n;
  }

  // The LC's own frames: condition answers (output null) and Dataset counts are not.
  StatusReport ready;
  ready.phase = core::ReportPhase::kDeploy;  // even a phase no completion has: the LC's answer
  ready.status = core::ReportStatus::kReady;
  EXPECT_FALSE(IsInformationalFrame(Framed(EncodeStatusReport(ready, ReportSpelling::kIl))));
  ready.phase = core::ReportPhase::kTrain;
  ready.has_input = true;
  ready.data_url = "/output/data/train/1/data.txt";
  EXPECT_FALSE(IsInformationalFrame(Framed(EncodeStatusReport(ready, ReportSpelling::kIl))));
  EXPECT_FALSE(IsInformationalFrame(Framed(EncodeStatusReport(ready, ReportSpelling::kLl))));
  EXPECT_FALSE(IsInformationalFrame(
      EncodeFrame({"default", "dataset", "d", "status"}, R"({"numberOfSamples":12})")));
  // Frames it cannot read are counted against the bound, as before the quotas.
  EXPECT_FALSE(IsInformationalFrame(""));
  EXPECT_FALSE(IsInformationalFrame(R"({"header":{},"content":"!!!!"})"));
  EXPECT_FALSE(IsInformationalFrame(Framed("")));
}

}  // namespace
}  // namespace sedna::json
