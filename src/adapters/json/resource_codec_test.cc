#include "adapters/json/resource_codec.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

#include "adapters/json/go_json.h"
#include "adapters/json/test_util.h"

namespace sedna::json {
namespace {

using core::ConditionType;
using core::MetricValue;
using core::Stage;
using testing::NestedArrays;
using testing::ReadTestdata;
using testing::ReplaceOnce;

// The member `key` of the JSON object `json`, compact in source order.
std::string MemberText(const std::string& json, const std::string& key) {
  auto j = RawJson::Parse(json);
  if (!j.ok() || j->Find(key) == nullptr) return "<none>";
  return j->Find(key)->DumpInOrder();
}

template <class T>
std::string Reassemble(const Decoded<T>& d) {
  return AssembleObject(d.type_meta_json, d.object_meta_json, d.spec_json, d.status_json,
                        d.credential_json);
}

// ---- Dataset / Model -------------------------------------------------------------------------

TEST(ResourceCodec, DecodesDatasetFromSection15) {
  const std::string text = ReadTestdata("content_gm_dataset_insert.json");
  auto d = DecodeDataset(text);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::Dataset& ds = d->object;
  EXPECT_EQ(ds.meta.name, "incremental-dataset");
  EXPECT_EQ(ds.meta.ns, "default");
  EXPECT_EQ(ds.meta.uid, "7b3c2f0e-1111-4c3a-9c1e-000000000001");
  EXPECT_TRUE(ds.meta.annotations.empty());
  EXPECT_EQ(ds.spec.url, "/data/helmet_detection/train_data/train_data.txt");
  EXPECT_EQ(ds.spec.format, "txt");
  EXPECT_EQ(ds.spec.node_name, "edge-node");
  EXPECT_EQ(d->type_meta_json, R"({"kind":"Dataset","apiVersion":"sedna.io/v1alpha1"})");
  EXPECT_EQ(d->object_meta_json, MemberText(text, "metadata"));
  EXPECT_EQ(d->spec_json, MemberText(text, "spec"));
  EXPECT_EQ(d->status_json, R"({"numberOfSamples":0})");
  EXPECT_FALSE(d->credential_json.has_value());
  EXPECT_EQ(Reassemble(*d), text);
}

TEST(ResourceCodec, DecodesModelFromSection15) {
  const std::string text = ReadTestdata("content_gm_model_insert.json");
  auto d = DecodeModel(text);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.meta.name, "initial-model");
  EXPECT_EQ(d->object.meta.ns, "default");
  EXPECT_EQ(d->object.spec.url, "/models/base_model");
  EXPECT_EQ(d->object.spec.format, "ckpt");
  EXPECT_EQ(d->object.spec.credential_name, "");
  EXPECT_EQ(d->type_meta_json, R"({"kind":"Model","apiVersion":"sedna.io/v1alpha1"})");
  EXPECT_EQ(d->spec_json, R"({"url":"/models/base_model","format":"ckpt"})");
  EXPECT_EQ(d->status_json, "{}");
  EXPECT_EQ(Reassemble(*d), text);
}

TEST(ResourceCodec, MissingPartsTakeZeroValues) {
  auto d = DecodeModel(R"({"metadata":{"name":"m"}})");
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.meta.ns, "");
  EXPECT_EQ(d->type_meta_json, "{}");
  EXPECT_EQ(d->object_meta_json, R"({"name":"m"})");
  EXPECT_EQ(d->spec_json, "{}");
  EXPECT_EQ(d->status_json, "");
  EXPECT_EQ(Reassemble(*d), R"({"metadata":{"name":"m"},"spec":{}})");

  auto ds = DecodeDataset(
      R"({"kind":null,"metadata":{"name":"d","namespace":null,"annotations":null},"spec":null,"status":null})");
  ASSERT_TRUE(ds.ok()) << ds.message();
  EXPECT_EQ(ds->spec_json, "{}");
  EXPECT_EQ(ds->status_json, "");
}

// ---- IncrementalLearningJob ------------------------------------------------------------------

TEST(ResourceCodec, DecodesIlJobFromSection23) {
  const std::string text = ReadTestdata("il_job.json");
  ASSERT_NE(text.find("\\u003e"), std::string::npos);
  auto d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::IlJob& job = d->object;
  EXPECT_EQ(job.meta.name, "helmet-detection-demo");
  EXPECT_EQ(job.meta.ns, "default");
  EXPECT_EQ(job.meta.uid, "7b3c2f0e-1111-4c3a-9c1e-000000000003");
  const core::IlJobSpec& s = job.spec;
  EXPECT_EQ(s.dataset_name, "incremental-dataset");
  EXPECT_EQ(s.train_prob, 0.8);
  EXPECT_EQ(s.initial_model_name, "initial-model");
  EXPECT_EQ(s.deploy_model_name, "deploy-model");
  EXPECT_EQ(s.output_dir, "/output");
  EXPECT_EQ(s.credential_name, "");

  ASSERT_EQ(s.train_template.containers.size(), 1u);
  const core::ContainerSpec& train = s.train_template.containers[0];
  EXPECT_EQ(train.name, "train-worker");
  EXPECT_EQ(train.image, "kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0");
  EXPECT_TRUE(train.command.empty());
  EXPECT_EQ(train.args, std::vector<std::string>{"train.py"});
  ASSERT_EQ(train.env.size(), 6u);
  EXPECT_EQ(train.env[0].name, "batch_size");
  EXPECT_EQ(train.env[0].value, "32");
  EXPECT_EQ(train.env[3].name, "class_names");
  EXPECT_EQ(train.env[3].value, "person,helmet,helmet-on,helmet-off");
  EXPECT_EQ(train.working_dir, "");
  EXPECT_EQ(s.train_template.node_name, "edge-node");

  const core::TriggerSpec& tt = s.train_trigger;
  EXPECT_EQ(tt.check_period_seconds, 60);
  ASSERT_TRUE(tt.timer.has_value());
  EXPECT_EQ(tt.timer->start, "02:00");
  EXPECT_EQ(tt.timer->end, "24:00");
  EXPECT_EQ(tt.op, ">");
  EXPECT_EQ(tt.threshold, 500);
  EXPECT_EQ(tt.metric, "num_of_samples");

  ASSERT_EQ(s.eval_template.containers.size(), 1u);
  EXPECT_EQ(s.eval_template.containers[0].name, "eval-worker");
  EXPECT_EQ(s.eval_template.containers[0].args, std::vector<std::string>{"eval.py"});
  EXPECT_EQ(s.eval_template.containers[0].env.size(), 2u);
  EXPECT_EQ(s.eval_template.node_name, "edge-node");

  const core::TriggerSpec& dt = s.deploy_trigger;
  EXPECT_FALSE(dt.check_period_seconds.has_value());
  EXPECT_FALSE(dt.timer.has_value());
  EXPECT_EQ(dt.op, ">");
  EXPECT_EQ(dt.threshold, 0.1);
  EXPECT_EQ(dt.metric, "precision_delta");

  EXPECT_EQ(s.hem.name, "IBT");
  EXPECT_FALSE(s.hem.has_parameters);
  EXPECT_TRUE(s.hem.parameters.empty());
  ASSERT_EQ(s.deploy_template.containers.size(), 1u);
  EXPECT_EQ(s.deploy_template.containers[0].name, "infer-worker");
  ASSERT_EQ(s.deploy_template.containers[0].env.size(), 3u);
  EXPECT_EQ(s.deploy_template.containers[0].env[2].name, "HE_SAVED_URL");
  EXPECT_EQ(s.deploy_template.containers[0].env[2].value, "/he_saved_url");
  EXPECT_EQ(s.deploy_template.node_name, "edge-node");

  ASSERT_EQ(job.conditions.size(), 1u);
  EXPECT_EQ(job.conditions[0].type, ConditionType::kWaiting);
  EXPECT_EQ(job.conditions[0].stage, Stage::kTrain);
  EXPECT_EQ(job.conditions[0].last_transition_time, "2021-08-20T08:00:00Z");
  EXPECT_EQ(job.conditions[0].data_json, "");

  EXPECT_EQ(d->type_meta_json,
            R"({"kind":"IncrementalLearningJob","apiVersion":"sedna.io/v1alpha1"})");
  EXPECT_EQ(d->spec_json, MemberText(text, "spec"));
  EXPECT_NE(d->spec_json.find(R"("operator":"\u003e")"), std::string::npos);
  EXPECT_EQ(d->status_json, MemberText(text, "status"));
  EXPECT_EQ(Reassemble(*d), text);
}

TEST(ResourceCodec, DecodesIlJobConditionsCredentialAndHem) {
  const std::string text = ReadTestdata("il_job_round2.json");
  auto d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::IlJob& job = d->object;

  const std::string kCred =
      R"({"ACCESS_KEY_ID":"XXXX","SECRET_ACCESS_KEY":"XXXXXXXX","s3-endpoint":"s3.amazonaws.com","s3-usehttps":"1"})";
  ASSERT_TRUE(d->credential_json.has_value());
  EXPECT_EQ(*d->credential_json, kCred);
  EXPECT_EQ(job.meta.annotations.at(core::kCredentialAnnotation), kCred);
  EXPECT_EQ(job.meta.annotations.at("sedna.io/Train"), "edge-node");
  EXPECT_EQ(job.spec.credential_name, "mysecret");
  // [P:B23]: the persisted metadata never holds the credential.
  EXPECT_EQ(d->object_meta_json.find("credential"), std::string::npos);
  EXPECT_EQ(d->object_meta_json.find("SECRET"), std::string::npos);
  EXPECT_NE(d->object_meta_json.find(
                R"("annotations":{"sedna.io/Eval":"edge-node","sedna.io/Train":"edge-node"})"),
            std::string::npos);
  // Reassembly with the credential restores the original bytes; without it, leaves it out.
  EXPECT_EQ(Reassemble(*d), text);
  std::string without = AssembleObject(d->type_meta_json, d->object_meta_json, d->spec_json,
                                       d->status_json, std::nullopt);
  EXPECT_EQ(without.find("sedna.io/credential"), std::string::npos);
  auto again = DecodeIlJob(without);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_FALSE(again->credential_json.has_value());

  EXPECT_TRUE(job.spec.hem.has_parameters);
  ASSERT_EQ(job.spec.hem.parameters.size(), 2u);
  EXPECT_EQ(job.spec.hem.parameters[0],
            (std::pair<std::string, std::string>{"threshold_img", "0.9"}));
  EXPECT_EQ(job.spec.hem.parameters[1].first, "threshold_box");

  const auto& c = job.conditions;
  ASSERT_EQ(c.size(), 8u);
  const std::pair<ConditionType, Stage> kExpected[] = {
      {ConditionType::kWaiting, Stage::kTrain},   {ConditionType::kReady, Stage::kTrain},
      {ConditionType::kStarting, Stage::kTrain},  {ConditionType::kRunning, Stage::kTrain},
      {ConditionType::kCompleted, Stage::kTrain}, {ConditionType::kWaiting, Stage::kEval},
      {ConditionType::kFailed, Stage::kEval},     {ConditionType::kWaiting, Stage::kDeploy}};
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c[i].type, kExpected[i].first) << i;
    EXPECT_EQ(c[i].stage, kExpected[i].second) << i;
  }
  // (Train, Ready) carries IL-1's data.
  EXPECT_EQ(c[1].data_json, ReadTestdata("conddata_il-1.json"));
  EXPECT_EQ(c[1].message, "reported by lc");
  ASSERT_EQ(c[1].data.input_models.size(), 1u);
  EXPECT_EQ(c[1].data.input_models[0].url, "/models/base_model");
  EXPECT_EQ(c[1].data.output_dir, "/output/train/1");
  EXPECT_FALSE(c[1].data.has_output);
  // (Train, Completed) is the §P4.1 IL-2 condition.
  EXPECT_EQ(c[4].last_transition_time, "2021-08-20T08:41:07Z");
  EXPECT_EQ(c[4].data_json, ReadTestdata("conddata_il-2.json"));
  EXPECT_TRUE(c[4].data.has_output);
  ASSERT_EQ(c[4].data.output_models.size(), 2u);
  EXPECT_EQ(c[4].data.output_models[1].format, "ckpt");
  EXPECT_EQ(c[4].data.output_models[1].url, "/output/train/1");
  EXPECT_EQ(c[4].data.output_models[1].metrics.at("loss"), MetricValue::Number(0.8113));
  // A malformed data string is kept raw and leaves data empty, without failing the job.
  EXPECT_EQ(c[6].data_json, "{not json");
  EXPECT_FALSE(c[6].data.has_output);
  EXPECT_TRUE(c[6].data.input_models.empty());
}

TEST(ResourceCodec, CredentialOnlyAnnotationsAreDroppedAndRestored) {
  const std::string text =
      R"({"kind":"Dataset","apiVersion":"sedna.io/v1alpha1","metadata":{"name":"d","namespace":"ns","annotations":{"sedna.io/credential":"{\"s3-endpoint\":\"e\"}"},"managedFields":[{"manager":"m"}]},"spec":{"url":"s3://b/k","format":"CSV","nodeName":"n","credentialName":"sec"},"status":{}})";
  auto d = DecodeDataset(text);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object_meta_json,
            R"({"name":"d","namespace":"ns","managedFields":[{"manager":"m"}]})");
  EXPECT_EQ(*d->credential_json, R"({"s3-endpoint":"e"})");
  EXPECT_EQ(d->object.spec.credential_name, "sec");
  EXPECT_EQ(Reassemble(*d), text);
  // No metadata stored at all: the credential still goes back in.
  EXPECT_EQ(AssembleObject("", "", "", "", std::string("c")),
            R"({"metadata":{"annotations":{"sedna.io/credential":"c"}}})");
  // Credential sorts between existing annotations.
  EXPECT_EQ(
      AssembleObject("{}", R"({"name":"x","annotations":{"a":"1","z":"2"}})", "{}", "",
                     std::string("<c>")),
      R"({"metadata":{"name":"x","annotations":{"a":"1","sedna.io/credential":"\u003cc\u003e","z":"2"}},"spec":{}})");
}

TEST(ResourceCodec, AssembleInsertsMalformedPartsVerbatim) {
  std::string out = AssembleObject(R"({"kind":"Model"})", "{broken", "{}", "", std::string("c"));
  EXPECT_EQ(out, R"({"kind":"Model","metadata":{broken,"spec":{}})");
  EXPECT_FALSE(DecodeModel(out).ok());
}

// ---- LifelongLearningJob ---------------------------------------------------------------------

TEST(ResourceCodec, DecodesLlJobFromSection24) {
  const std::string text = ReadTestdata("ll_job.json");
  auto d = DecodeLlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::LlJob& job = d->object;
  EXPECT_EQ(job.meta.name, "atcii-classifier-demo");
  EXPECT_EQ(job.meta.ns, "default");
  EXPECT_EQ(job.spec.dataset_name, "lifelong-dataset");
  EXPECT_EQ(job.spec.train_prob, 0.8);
  EXPECT_EQ(job.spec.output_dir, "/output");
  ASSERT_EQ(job.spec.train_template.containers.size(), 1u);
  EXPECT_EQ(job.spec.train_template.containers[0].image,
            "kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0");
  EXPECT_EQ(job.spec.train_template.containers[0].env[1].name, "metric_name");
  EXPECT_EQ(job.spec.train_template.containers[0].env[1].value, "mlogloss");
  EXPECT_EQ(job.spec.train_template.node_name, "edge-node");
  EXPECT_EQ(job.spec.train_trigger.check_period_seconds, 60);
  ASSERT_TRUE(job.spec.train_trigger.timer.has_value());
  EXPECT_EQ(job.spec.train_trigger.timer->start, "02:00");
  EXPECT_EQ(job.spec.train_trigger.op, ">");
  EXPECT_EQ(job.spec.train_trigger.threshold, 500);
  EXPECT_EQ(job.spec.train_trigger.metric, "num_of_samples");
  ASSERT_EQ(job.spec.eval_template.containers.size(), 1u);
  EXPECT_EQ(job.spec.eval_template.containers[0].env[0].value, "0.5");
  ASSERT_EQ(job.spec.deploy_template.containers.size(), 1u);
  EXPECT_TRUE(job.spec.deploy_template.containers[0].env.empty());
  EXPECT_EQ(job.spec.deploy_template.containers[0].args, std::vector<std::string>{"inference.py"});
  ASSERT_EQ(job.conditions.size(), 1u);
  EXPECT_EQ(job.conditions[0].type, ConditionType::kWaiting);
  EXPECT_EQ(Reassemble(*d), text);
}

TEST(ResourceCodec, TriggerVariants) {
  const std::string base = ReadTestdata("il_job.json");
  // Integer and float thresholds; condition present but empty; checkPeriodSeconds -0.
  std::string text = ReplaceOnce(
      base,
      R"("trigger":{"condition":{"operator":"\u003e","threshold":0.1,"metric":"precision_delta"}})",
      R"("trigger":{"checkPeriodSeconds":-0,"condition":{"operator":"","threshold":0,"metric":""}})");
  ASSERT_FALSE(text.empty());
  auto d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.spec.deploy_trigger.check_period_seconds, 0);
  EXPECT_EQ(d->object.spec.deploy_trigger.op, "");
  EXPECT_EQ(d->object.spec.deploy_trigger.threshold, 0);
  text = ReplaceOnce(base, R"("threshold":500,)", R"("threshold":5.5e2,)");
  d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.spec.train_trigger.threshold, 550);
  // Null members are zero values, not type errors (Go).
  text = ReplaceOnce(base, R"("trainProb":0.8)", R"("trainProb":null)");
  d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.spec.train_prob, 0);
  // Command, workingDir and parameters: [] (present -> has_parameters).
  text = ReplaceOnce(base, R"("args":["train.py"])",
                     R"("command":["python3","-u"],"args":["train.py",null],"workingDir":"/w")");
  text = ReplaceOnce(text, R"("hardExampleMining":{"name":"IBT"})",
                     R"("hardExampleMining":{"name":"IBT","parameters":[]})");
  d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  const auto& c = d->object.spec.train_template.containers[0];
  EXPECT_EQ(c.command, (std::vector<std::string>{"python3", "-u"}));
  EXPECT_EQ(c.args, (std::vector<std::string>{"train.py", ""}));
  EXPECT_EQ(c.working_dir, "/w");
  EXPECT_TRUE(d->object.spec.hem.has_parameters);
  EXPECT_TRUE(d->object.spec.hem.parameters.empty());
}

// ---- errors ----------------------------------------------------------------------------------

struct BadJob {
  std::string from;   // replaced in il_job.json ...
  std::string to;     // ... by this
  std::string error;  // exact message
};

const std::string kNotName =
    "is not a valid name: a DNS-1123 subdomain is at most 253 lower case alphanumeric "
    "characters, '-' or '.', each '.'-separated part starting and ending with an alphanumeric "
    "character";
const std::string kNotNamespace =
    "is not a valid namespace: a DNS-1123 label is at most 63 lower case alphanumeric "
    "characters or '-', starting and ending with an alphanumeric character";

// Every kind checks its own name, namespace and Dataset reference the same way.
TEST(ResourceCodec, NamesOfEveryKindAreKubernetesNames) {
  struct Case {
    std::string json;
    std::string error;  // "" : accepted
  };
  const Case kCases[] = {
      {R"({"metadata":{"name":"d.v1","namespace":"ns-1"}})", ""},
      {R"({"metadata":{"name":"d"}})", ""},  // no namespace: left to the caller, as before
      {R"({"metadata":{"name":"a/b","namespace":"ns"}})",
       "metadata.name: \"a/b\" must not contain '/'"},
      {R"({"metadata":{"name":"d","namespace":"-ns"}})",
       "metadata.namespace: \"-ns\" " + kNotNamespace},
      {R"({"metadata":{"name":"d","namespace":"ns/x"}})",
       "metadata.namespace: \"ns/x\" must not contain '/'"},
  };
  for (const auto& c : kCases) {
    const Status got[] = {DecodeDataset(c.json).status(), DecodeModel(c.json).status(),
                          DecodeIlJob(c.json).status(), DecodeLlJob(c.json).status()};
    const char* kinds[] = {"Dataset", "Model", "IncrementalLearningJob", "LifelongLearningJob"};
    for (int k = 0; k < 4; ++k) {
      if (c.error.empty()) {
        EXPECT_TRUE(got[k].ok()) << kinds[k] << " " << c.json << ": " << got[k].message();
      } else {
        EXPECT_EQ(got[k].message(), std::string(kinds[k]) + ": " + c.error) << c.json;
      }
    }
  }
  auto ll =
      DecodeLlJob(R"({"metadata":{"name":"j","namespace":"n"},"spec":{"dataset":{"name":"a/b"}}})");
  EXPECT_EQ(ll.message(),
            "LifelongLearningJob n/j: spec.dataset.name: \"a/b\" must not contain '/'");
}

TEST(ResourceCodec, IlJobErrorsNameObjectAndPath) {
  const std::string kId = "IncrementalLearningJob default/helmet-detection-demo: ";
  const BadJob kCases[] = {
      {R"("trainProb":0.8)", R"("trainProb":"0.8")",
       kId + "spec.dataset.trainProb: expected a number, got string"},
      {R"("type":"Waiting")", R"("type":"Bogus")",
       kId + "status.conditions[0].type: unknown condition type \"Bogus\""},
      {R"("stage":"Train")", R"("stage":"train")",
       kId + "status.conditions[0].stage: unknown stage \"train\""},
      {R"("type":"Waiting",)", "", kId + "status.conditions[0].type: unknown condition type \"\""},
      {R"("conditions":[)", R"("conditions":[7,)",
       kId + "status.conditions[0]: expected an object, got number"},
      {R"("conditions":[)", R"("conditions":[{"type":"Ready","stage":"Eval","data":{}},)",
       kId + "status.conditions[0].data: expected a string, got object"},
      {R"("conditions":[)", R"("conditions":"x","c":[)",
       kId + "status.conditions: expected an array, got string"},
      {R"("checkPeriodSeconds":60)", R"("checkPeriodSeconds":60.5)",
       kId + "spec.trainSpec.trigger.checkPeriodSeconds: expected an integer, got 60.5"},
      {R"("checkPeriodSeconds":60)", R"("checkPeriodSeconds":"60")",
       kId + "spec.trainSpec.trigger.checkPeriodSeconds: expected an integer, got string"},
      {R"("threshold":0.1)", R"("threshold":"0.1")",
       kId + "spec.deploySpec.trigger.condition.threshold: expected a number, got string"},
      {R"("timer":{"start":"02:00")", R"("timer":{"start":200)",
       kId + "spec.trainSpec.trigger.timer.start: expected a string, got number"},
      {R"("operator":"\u003e","threshold":500)", R"("operator":[],"threshold":500)",
       kId + "spec.trainSpec.trigger.condition.operator: expected a string, got array"},
      {R"("hardExampleMining":{"name":"IBT"})",
       R"("hardExampleMining":{"name":"IBT","parameters":{}})",
       kId + "spec.deploySpec.hardExampleMining.parameters: expected an array, got object"},
      {R"("hardExampleMining":{"name":"IBT"})",
       R"("hardExampleMining":{"name":"IBT","parameters":[{"key":"k","value":1}]})",
       kId +
           "spec.deploySpec.hardExampleMining.parameters[0].value: expected a string, got number"},
      {R"({"name":"batch_size","value":"32"})", R"({"name":"batch_size","value":32})",
       kId + "spec.trainSpec.template.spec.containers[0].env[0].value: expected a string, got "
             "number"},
      {R"("args":["eval.py"])", R"("args":["eval.py",1])",
       kId + "spec.evalSpec.template.spec.containers[0].args[1]: expected a string, got number"},
      {R"("containers":[{"name":"infer-worker")", R"("containers":7,"c":[{"name":"infer-worker")",
       kId + "spec.deploySpec.template.spec.containers: expected an array, got number"},
      {R"("nodeName":"edge-node")", R"("nodeName":false)",
       kId + "spec.trainSpec.template.spec.nodeName: expected a string, got boolean"},
      {R"("initialModel":{"name":"initial-model"})", R"("initialModel":"initial-model")",
       kId + "spec.initialModel: expected an object, got string"},
      {R"("model":{"name":"deploy-model"})", R"("model":{"name":["deploy-model"]})",
       kId + "spec.deploySpec.model.name: expected a string, got array"},
      {R"("outputDir":"/output")", R"("outputDir":{})",
       kId + "spec.outputDir: expected a string, got object"},
      {R"("uid":"7b3c2f0e-1111-4c3a-9c1e-000000000003")", R"("uid":3,"annotations":{})",
       kId + "metadata.uid: expected a string, got number"},
      {R"("generation":1,)", R"("annotations":{"a":1},)",
       kId + "metadata.annotations[\"a\"]: expected a string, got number"},
      {R"("kind":"IncrementalLearningJob")", R"("kind":1)",
       kId + "kind: expected a string, got number"},
      {R"("name":"helmet-detection-demo","namespace")", R"("namespace")",
       "IncrementalLearningJob: metadata.name: missing"},
      {R"("name":"helmet-detection-demo","namespace")", R"("name":"","namespace")",
       "IncrementalLearningJob: metadata.name: missing"},
      {R"("name":"helmet-detection-demo","namespace")", R"("name":7,"namespace")",
       "IncrementalLearningJob: metadata.name: expected a string, got number"},
      {R"("namespace":"default","uid")", R"("namespace":["default"],"uid")",
       "IncrementalLearningJob: metadata.namespace: expected a string, got array"},
      // [D:I15.10]: Kubernetes names only.
      {R"("name":"helmet-detection-demo","namespace")", R"("name":"a/b","namespace")",
       "IncrementalLearningJob: metadata.name: \"a/b\" must not contain '/'"},
      {R"("name":"helmet-detection-demo","namespace")", R"("name":"..","namespace")",
       "IncrementalLearningJob: metadata.name: \"..\" " + kNotName},
      {R"("name":"helmet-detection-demo","namespace")", R"("name":"Helmet","namespace")",
       "IncrementalLearningJob: metadata.name: \"Helmet\" " + kNotName},
      {R"("namespace":"default","uid")", R"("namespace":"de/fault","uid")",
       "IncrementalLearningJob: metadata.namespace: \"de/fault\" must not contain '/'"},
      {R"("namespace":"default","uid")", R"("namespace":"a.b","uid")",
       "IncrementalLearningJob: metadata.namespace: \"a.b\" " + kNotNamespace},
      {R"("dataset":{"name":"incremental-dataset")", R"("dataset":{"name":"../x")",
       kId + "spec.dataset.name: \"../x\" must not contain '/'"},
      {R"("initialModel":{"name":"initial-model"})", R"("initialModel":{"name":"M_1"})",
       kId + "spec.initialModel.name: \"M_1\" " + kNotName},
      {R"("model":{"name":"deploy-model"})", R"("model":{"name":"x/y"})",
       kId + "spec.deploySpec.model.name: \"x/y\" must not contain '/'"},
  };
  const std::string base = ReadTestdata("il_job.json");
  for (const auto& c : kCases) {
    std::string text = ReplaceOnce(base, c.from, c.to);
    ASSERT_FALSE(text.empty()) << "no occurrence of " << c.from;
    Result<Decoded<core::IlJob>> d = Result<Decoded<core::IlJob>>::Error("unset");
    EXPECT_NO_THROW(d = DecodeIlJob(text)) << c.to;
    ASSERT_FALSE(d.ok()) << c.to;
    EXPECT_EQ(d.message(), c.error);
  }
}

TEST(ResourceCodec, WholeDocumentErrors) {
  struct Case {
    std::string text;
    std::string error;  // prefix
  };
  const std::string base = ReadTestdata("il_job.json");
  const Case kCases[] = {
      {base.substr(0, base.size() / 2), "IncrementalLearningJob: invalid JSON: "},
      {"", "IncrementalLearningJob: invalid JSON: "},
      {"not json", "IncrementalLearningJob: invalid JSON: "},
      {"[]", "IncrementalLearningJob: expected an object, got array"},
      {"null", "IncrementalLearningJob: expected an object, got null"},
      {"{}", "IncrementalLearningJob: metadata.name: missing"},
      {R"({"metadata":"x"})", "IncrementalLearningJob: metadata: expected an object, got string"},
      {R"({"metadata":{"name":"j","namespace":"n"},"spec":[]})",
       "IncrementalLearningJob n/j: spec: expected an object, got array"},
      {R"({"metadata":{"name":"j"},"status":"Running"})",
       "IncrementalLearningJob j: status: expected an object, got string"},
  };
  for (const auto& c : kCases) {
    auto d = DecodeIlJob(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_EQ(d.message().rfind(c.error, 0), 0u) << d.message();
  }
  auto ds = DecodeDataset(R"({"metadata":{"name":"d","namespace":"n"},"spec":{"url":1}})");
  EXPECT_EQ(ds.message(), "Dataset n/d: spec.url: expected a string, got number");
  auto m = DecodeModel(R"({"metadata":{"name":"m","namespace":"n"},"spec":{"format":true}})");
  EXPECT_EQ(m.message(), "Model n/m: spec.format: expected a string, got boolean");
  auto ll = DecodeLlJob(
      ReplaceOnce(ReadTestdata("ll_job.json"), R"("trainProb":0.8)", R"("trainProb":[0.8])"));
  EXPECT_EQ(ll.message(),
            "LifelongLearningJob default/atcii-classifier-demo: spec.dataset.trainProb: expected a "
            "number, got array");
}

TEST(ResourceCodec, RobustAgainstHugeAndDeepInput) {
  const std::string base = ReadTestdata("il_job.json");
  std::string big(100 * 1024, 'o');
  auto d =
      DecodeIlJob(ReplaceOnce(base, R"("outputDir":"/output")", R"("outputDir":")" + big + "\""));
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.spec.output_dir, big);

  // Deep nesting in an ignored member (e.g. pod volumes) is fine up to Go's limit...
  std::string deep =
      ReplaceOnce(base, R"("resources":{},)", R"("resources":)" + NestedArrays(9990) + ",");
  d = DecodeIlJob(deep);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_NE(d->spec_json.find(NestedArrays(9990)), std::string::npos);
  // ... and an error, not a crash, beyond it.
  deep = ReplaceOnce(base, R"("resources":{},)", R"("resources":)" + NestedArrays(100000) + ",");
  Result<Decoded<core::IlJob>> bad = Result<Decoded<core::IlJob>>::Error("unset");
  EXPECT_NO_THROW(bad = DecodeIlJob(deep));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("exceeded max depth"), std::string::npos) << bad.message();
}

// ---- condition data --------------------------------------------------------------------------

TEST(ResourceCodec, DecodesConditionDataLiterals) {
  auto il1 = DecodeConditionData(ReadTestdata("conddata_il-1.json"));
  ASSERT_TRUE(il1.ok()) << il1.message();
  ASSERT_EQ(il1->input_models.size(), 1u);
  EXPECT_EQ(il1->input_models[0], (core::ModelRef{"ckpt", "/models/base_model", {}}));
  EXPECT_EQ(il1->data_url, "/output/data/train/1/data.txt");
  EXPECT_EQ(il1->data_index_url, "");
  EXPECT_EQ(il1->output_dir, "/output/train/1");
  EXPECT_FALSE(il1->has_output);

  auto il4 = DecodeConditionData(ReadTestdata("conddata_il-4.json"));
  ASSERT_TRUE(il4.ok()) << il4.message();
  EXPECT_TRUE(il4->has_output);
  EXPECT_TRUE(il4->input_models.empty());
  ASSERT_EQ(il4->output_models.size(), 2u);
  EXPECT_EQ(il4->output_models[0].url, "/output/train/1/model_finetune_tensorflow.pb");
  EXPECT_EQ(il4->output_models[0].metrics.at("precision"),
            MetricValue::List({0.81, 0.74, 0.69, 0.52}));
  EXPECT_EQ(il4->output_models[1].metrics.at("recall"),
            MetricValue::List({0.62, 0.66, 0.55, 0.37}));

  auto il7 = DecodeConditionData(ReadTestdata("conddata_il-7.json"));
  ASSERT_TRUE(il7.ok());
  EXPECT_FALSE(il7->has_output);
  EXPECT_TRUE(il7->input_models.empty());

  auto ll1 = DecodeConditionData(ReadTestdata("conddata_ll-1.json"));
  ASSERT_TRUE(ll1.ok());
  EXPECT_TRUE(ll1->input_models.empty());
  EXPECT_EQ(ll1->data_url, "/output/data/train/1/data.csv");
}

TEST(ResourceCodec, ConditionDataMetricKinds) {
  auto d = DecodeConditionData(
      R"({"output":{"models":[{"metrics":{"n":1,"l":[1,2.5],"e":[],"s":"x","o":{"a":1},"m":[1,"x"],"z":null}},null]}})");
  ASSERT_TRUE(d.ok()) << d.message();
  ASSERT_EQ(d->output_models.size(), 2u);
  const core::Metrics& m = d->output_models[0].metrics;
  EXPECT_EQ(m.at("n"), MetricValue::Number(1));
  EXPECT_EQ(m.at("l"), MetricValue::List({1, 2.5}));
  EXPECT_EQ(m.at("e"), MetricValue::List({}));
  EXPECT_EQ(m.at("s"), MetricValue::Other());
  EXPECT_EQ(m.at("o"), MetricValue::Other());
  EXPECT_EQ(m.at("m"), MetricValue::Other());
  EXPECT_EQ(m.at("z"), MetricValue::Other());
  EXPECT_EQ(d->output_models[1], core::ModelRef{});
}

TEST(ResourceCodec, ConditionDataErrorsNameThePath) {
  struct Case {
    std::string data;
    std::string error;
  };
  const Case kCases[] = {
      {R"({"output":{"models":[{"url":1}]}})",
       "output.models[0].url: expected a string, got number"},
      {R"({"output":{"models":{}}})", "output.models: expected an array, got object"},
      {R"({"output":{"models":[{},"x"]}})", "output.models[1]: expected an object, got string"},
      {R"({"input":{"models":[{"metrics":[1]}]}})",
       "input.models[0].metrics: expected an object, got array"},
      {R"({"input":{"model":{"format":2}}})", "input.model.format: expected a string, got number"},
      {R"({"input":{"dataURL":true}})", "input.dataURL: expected a string, got boolean"},
      {R"({"input":[]})", "input: expected an object, got array"},
      {"[]", "data: expected an object, got array"},
      {"{not json", "invalid JSON: "},
      {"", "invalid JSON: "},
  };
  for (const auto& c : kCases) {
    auto d = DecodeConditionData(c.data);
    ASSERT_FALSE(d.ok()) << c.data;
    EXPECT_EQ(d.message().rfind(c.error, 0), 0u) << c.data << " -> " << d.message();
  }
}

// Runs decode(obj) in a forked child under RLIMIT_AS (+256 MiB) and returns "<result>
// rss<=16MiB" or "<result> rss+<n>KiB", <result> being "decoded" or the error; "" when the child
// died (a crash or the address-space cap).
template <class Fn>
std::string DecodeInChild(const std::string& obj, Fn decode) {
  int fds[2];
  if (::pipe(fds) != 0) return "";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)
    std::ifstream statm("/proc/self/statm");
    long pages = 0;
    statm >> pages;
    const rlim_t cap = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (256u << 20);
    rlimit rl{cap, cap};
    ::setrlimit(RLIMIT_AS, &rl);
#endif
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    auto d = decode(obj);
    ::getrusage(RUSAGE_SELF, &after);
    const long grew_kib = after.ru_maxrss - before.ru_maxrss;
    std::string out = d.ok() ? "decoded" : d.message();
    out += grew_kib <= 16 * 1024 ? " rss<=16MiB" : " rss+" + std::to_string(grew_kib) + "KiB";
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "";
}

// `kind` object whose spec member x is `bytes` of "0,".
std::string ManySmallValues(const std::string& kind, size_t bytes) {
  std::string obj = R"({"kind":")" + kind + R"(","metadata":{"name":"big"},"spec":{"x":[0)";
  while (obj.size() < bytes) obj += ",0";
  return obj + "]}}";
}

TEST(ResourceCodec, AnObjectOfManySmallValuesIsRefusedWithinAMemoryBound) {
  EXPECT_EQ(DecodeInChild(ManySmallValues("Dataset", 4u << 20), DecodeDataset),
            "Dataset: 4194307 bytes, more than the 1769472 a GM frame can carry rss<=16MiB");
  EXPECT_EQ(DecodeInChild(ManySmallValues("Dataset", 1u << 20), DecodeDataset),
            "Dataset: invalid JSON: more than 32768 values rss<=16MiB");
}

// ---- pass-through and ignored kinds ----------------------------------------------------------

Result<Decoded<OpaqueObject>> DecodeJi(std::string_view json) {
  return DecodeOpaqueObject(json, "JointInferenceService");
}
Result<Decoded<OpaqueObject>> DecodeFl(std::string_view json) {
  return DecodeOpaqueObject(json, "FederatedLearningJob");
}

TEST(ResourceCodec, PassThroughObjectsKeepTheirPartsWithoutTheCredential) {
  const std::string obj =
      R"({"kind":"JointInferenceService","apiVersion":"sedna.io/v1alpha1","metadata":)"
      R"({"name":"ji","namespace":"default","annotations":{"a":"b","sedna.io/credential":"s"}},)"
      R"("spec":{"edgeWorker":{"model":{"name":"little"}},"x":[1.50,{"z":null}]},"status":{}})";
  auto d = DecodeJi(obj);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.meta.name, "ji");
  EXPECT_EQ(d->object.meta.ns, "default");
  EXPECT_EQ(d->type_meta_json,
            R"({"kind":"JointInferenceService","apiVersion":"sedna.io/v1alpha1"})");
  EXPECT_EQ(d->object_meta_json, R"({"name":"ji","namespace":"default","annotations":{"a":"b"}})");
  EXPECT_EQ(d->spec_json, R"({"edgeWorker":{"model":{"name":"little"}},"x":[1.50,{"z":null}]})");
  EXPECT_EQ(d->credential_json, std::optional<std::string>("s"));

  auto no_spec = DecodeFl(R"({"metadata":{"name":"fl"}})");
  ASSERT_TRUE(no_spec.ok()) << no_spec.message();
  EXPECT_EQ(no_spec->spec_json, "{}");
  EXPECT_EQ(DecodeFl(R"({"metadata":{"name":"a/b"}})").message(),
            R"(FederatedLearningJob: metadata.name: "a/b" must not contain '/')");
  EXPECT_EQ(DecodeFl(R"({"spec":{}})").message(), "FederatedLearningJob: metadata.name: missing");
  EXPECT_EQ(DecodeJi("[1]").message(), "JointInferenceService: expected an object, got array");
}

// [D:I21.4]: a pass-through object nesting 100,000 (JI) or 600,000 (FL) deep crashed the LC
// (a recursive parse and destruction); 800,000 values in a 1.6 MB object took 53 MB. Now every
// kind has the limits of the others, before any recursive code sees the content.
TEST(ResourceCodec, PassThroughObjectsHaveTheLimitsOfEveryObject) {
  const std::string head = R"({"kind":"X","metadata":{"name":"deep"},"spec":{"x":)";
  EXPECT_EQ(DecodeInChild(head + NestedArrays(100000) + "}}", DecodeJi),
            "JointInferenceService: invalid JSON: exceeded max depth 10000 rss<=16MiB");
  EXPECT_EQ(DecodeInChild(head + NestedArrays(600000) + "}}", DecodeFl),
            "FederatedLearningJob: invalid JSON: exceeded max depth 10000 rss<=16MiB");
  // 800,000 values in 1.6 MB: refused at the 32769th, within the bound the other kinds have.
  EXPECT_EQ(DecodeInChild(ManySmallValues("FederatedLearningJob", 1600000), DecodeFl),
            "FederatedLearningJob: invalid JSON: more than 32768 values rss<=16MiB");
  EXPECT_EQ(DecodeInChild(ManySmallValues("JointInferenceService", kMaxObjectBytes + 1), DecodeJi),
            "JointInferenceService: 1769477 bytes, more than the 1769472 a GM frame can carry "
            "rss<=16MiB");
  // Up to Go's nesting limit the object is kept whole.
  auto ok = DecodeJi(head + NestedArrays(9990) + "}}");
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->spec_json, R"({"x":)" + NestedArrays(9990) + "}");
}

TEST(ResourceCodec, IgnoredKindsAreCheckedAgainstTheSameLimits) {
  EXPECT_TRUE(CheckObjectLimits(R"({"kind":"ReidJob","spec":"anything"})").ok());
  EXPECT_TRUE(CheckObjectLimits("null").ok());
  EXPECT_EQ(CheckObjectLimits(NestedArrays(100000)).message(),
            "invalid JSON: exceeded max depth 10000");
  EXPECT_EQ(CheckObjectLimits(ManySmallValues("ReidJob", 1600000)).message(),
            "invalid JSON: more than 32768 values");
  EXPECT_EQ(CheckObjectLimits(std::string(kMaxObjectBytes + 1, ' ')).message(),
            "1769473 bytes, more than the 1769472 a GM frame can carry");
  EXPECT_NE(CheckObjectLimits("{").message().find("invalid JSON: parse error"), std::string::npos);
}

TEST(ResourceCodec, AJobsConditionDataShareOneValueBudget) {
  // Two conditions whose data hold 20000 values each: the first is parsed, the second is over
  // the shared budget and left empty, as a malformed data string is.
  std::string data = R"({"input":{"models":[{"url":"/m","metrics":{"x":[0)";
  for (int i = 1; i < 20000; ++i) data += ",0";
  data += "]}}]}}";
  const std::string cond = R"({"type":"Ready","stage":"Train","data":)" + GoString(data) + "}";
  const std::string job =
      R"({"kind":"IncrementalLearningJob","metadata":{"name":"j"},"status":{"conditions":[)" +
      cond + "," + cond + "]}}";
  auto d = DecodeIlJob(job);
  ASSERT_TRUE(d.ok()) << d.message();
  ASSERT_EQ(d->object.conditions.size(), 2u);
  ASSERT_EQ(d->object.conditions[0].data.input_models.size(), 1u);
  EXPECT_EQ(d->object.conditions[0].data.input_models[0].url, "/m");
  EXPECT_TRUE(d->object.conditions[1].data.input_models.empty());
  EXPECT_EQ(d->object.conditions[1].data_json, data);
}

// ---- G2 payloads (docs/protocol.md §H1.5, §H1.9, §H4) --------------------------------------

core::ModelRef Ref(std::string format, std::string url, core::Metrics metrics = {},
                   std::vector<std::string> devices = {}) {
  return core::ModelRef{std::move(format), std::move(url), std::move(metrics), std::move(devices)};
}

// Every condition `data` a v0.7.0 GM stores for the §H1.9 messages decodes ("classes":null in
// every model, re-marshalled metrics) to what the LC needs.
TEST(ResourceCodec, DecodesG2ConditionDataOfSection19) {
  const std::string kT = "/output/train/1/model_finetune_tensorflow.pb";
  const std::string kD = "/models/deploy_model/saved_model.pb";
  const core::Metrics kLoss = {{"loss", MetricValue::Number(0.8113)}};
  struct Case {
    std::string file;
    core::ConditionData want;
  };
  auto in = [](std::vector<core::ModelRef> models, std::string data_url, std::string out_dir) {
    core::ConditionData d;
    d.input_models = std::move(models);
    d.data_url = std::move(data_url);
    d.output_dir = std::move(out_dir);
    return d;
  };
  auto out = [](std::vector<core::ModelRef> models) {
    core::ConditionData d;
    d.output_models = std::move(models);
    d.has_output = true;
    return d;
  };
  const core::ConditionData kN5 = in({Ref("pb", kT, kLoss), Ref("pb", kD)}, "", "");
  const Case kCases[] = {
      {"n1",
       in({Ref("ckpt", "/models/base_model")}, "/output/data/train/1/data.txt", "/output/train/1")},
      {"n2", out({Ref("pb", kT, kLoss), Ref("ckpt", "/output/train/1", kLoss)})},
      {"n3", in({Ref("pb", kT, kLoss), Ref("pb", kD)}, "/output/data/eval/1/data.txt", "")},
      {"n4", out({Ref("pb", kT,
                      {{"precision", MetricValue::List({0.81, 0.74, 0.69, 0.52})},
                       {"recall", MetricValue::List({0.77, 0.7, 0.61, 0.48})}}),
                  Ref("pb", kD,
                      {{"precision", MetricValue::List({0.66, 0.71, 0.58, 0.4})},
                       {"recall", MetricValue::List({0.62, 0.66, 0.55, 0.37})}})})},
      {"n5", kN5},
      {"n6", kN5},
      {"n7", core::ConditionData{}},
      {"n8", in({Ref("ckpt", "/output/train/1", kLoss)}, "/output/data/train/2/data.txt",
                "/output/train/2")},
      {"nhot", out({})},
      {"l1", in({}, "/output/data/train/1/data.csv", "/output/train/1")},
      {"l2", out({Ref("pkl", "/output/train/1/index.pkl", {{"summer_2", MetricValue::Other()}})})},
      {"l3", in({Ref("pkl", "/output/train/1/index.pkl", {{"summer_2", MetricValue::Other()}})},
                "/output/data/eval/1/data.csv", "/output/eval/1")},
      {"l4", out({Ref("pkl", "/output/eval/1/index.pkl",
                      {{"precision_score", MetricValue::Number(0.62)}})})},
      {"l5", in({Ref("pkl", "/output/eval/1/index.pkl")}, "", "")},
      {"l6", core::ConditionData{}},
  };
  for (const auto& c : kCases) {
    const std::string text = ReadTestdata("g2_conddata_" + c.file + ".json");
    auto d = DecodeConditionData(text);
    ASSERT_TRUE(d.ok()) << c.file << ": " << d.message();
    EXPECT_EQ(d->input_models, c.want.input_models) << c.file;
    EXPECT_EQ(d->output_models, c.want.output_models) << c.file;
    EXPECT_EQ(d->has_output, c.want.has_output) << c.file;
    EXPECT_EQ(d->data_url, c.want.data_url) << c.file;
    EXPECT_EQ(d->data_index_url, "") << c.file;
    EXPECT_EQ(d->output_dir, c.want.output_dir) << c.file;
  }
}

TEST(ResourceCodec, DecodesG2HotUpdateIlJob) {
  const std::string text = ReadTestdata("g2_il_job_hot.json");
  auto d = DecodeIlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::IlJob& job = d->object;
  EXPECT_EQ(job.spec.initial_eval_model_name, "eval-model");
  EXPECT_EQ(job.spec.initial_model_name, "initial-model");
  EXPECT_EQ(job.spec.deploy_model_name, "deploy-model");
  EXPECT_TRUE(job.spec.hot_update_enabled);
  EXPECT_EQ(job.spec.poll_period_seconds, 60);
  EXPECT_EQ(job.meta.annotations.at(core::kHotUpdateConfigAnnotation),
            "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet-detection-demo/"
            "model_config.json");
  EXPECT_EQ(job.meta.annotations.at(core::StageNodeAnnotation(Stage::kDeploy)), "edge-node");
  EXPECT_EQ(job.spec.eval_template.containers.size(), 1u);
  ASSERT_EQ(job.conditions.size(), 14u);
  EXPECT_EQ(job.conditions[13].type, ConditionType::kRunning);
  EXPECT_EQ(job.conditions[13].stage, Stage::kDeploy);
  EXPECT_EQ(job.conditions[11].data_json, ReadTestdata("g2_conddata_n5.json"));
  ASSERT_EQ(job.conditions[11].data.input_models.size(), 2u);
  EXPECT_EQ(job.conditions[4].data.output_models.size(), 2u);
  EXPECT_EQ(job.conditions[9].data.output_models[1].url, "/models/deploy_model/saved_model.pb");
  EXPECT_TRUE(d->warnings.empty()) << d->warnings[0];
  EXPECT_EQ(Reassemble(*d), text);

  // Absent (a 2021 job, or a v0.7 one without them): the zero values.
  auto old = DecodeIlJob(ReadTestdata("il_job.json"));
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_EQ(old->object.spec.initial_eval_model_name, "");
  EXPECT_FALSE(old->object.spec.hot_update_enabled);
  EXPECT_EQ(old->object.spec.poll_period_seconds, 60);
}

TEST(ResourceCodec, DecodesModelDeviceSocVersions) {
  const std::string text = ReadTestdata("g2_model_devices.json");
  auto d = DecodeModel(text);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->object.spec.format, "om");
  EXPECT_EQ(d->object.spec.device_soc_versions,
            (std::vector<std::string>{"Ascend310", "Ascend710"}));
  EXPECT_EQ(Reassemble(*d), text);
  auto none = DecodeModel(ReadTestdata("content_gm_model_insert.json"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->object.spec.device_soc_versions.empty());
  auto empty = DecodeModel(R"({"metadata":{"name":"m"},"spec":{"device_soc_versions":[]}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->object.spec.device_soc_versions.empty());
}

TEST(ResourceCodec, LlJobKnowledgeBaseIsIgnored) {
  const std::string text = ReadTestdata("g2_ll_job_kb.json");
  auto d = DecodeLlJob(text);
  ASSERT_TRUE(d.ok()) << d.message();
  ASSERT_EQ(d->object.conditions.size(), 6u);
  EXPECT_EQ(d->object.conditions[5].type, ConditionType::kWaiting);
  EXPECT_EQ(d->object.conditions[5].stage, Stage::kEval);
  ASSERT_EQ(d->object.conditions[4].data.output_models.size(), 1u);
  EXPECT_EQ(d->object.conditions[4].data.output_models[0].url, "/output/train/1/index.pkl");
  EXPECT_NE(d->status_json.find(R"("knowledgeBase":{"AIModels":{"numberOfAIModels":0})"),
            std::string::npos);
  EXPECT_TRUE(d->warnings.empty());
  EXPECT_EQ(Reassemble(*d), text);
  // Whatever the GM puts there (a custom worker's classes and metrics, or nonsense).
  const std::string kZero =
      R"("knowledgeBase":{"AIModels":{"numberOfAIModels":0},"AIClasses":{"numberOfAIClasses":0},"samples":{"numberOfLabeledUnseenSample":0,"numberOfUnseenSample":0}})";
  for (
      const std::string kb :
      {R"("knowledgeBase":{"AIModels":{"numberOfAIModels":1,"listOfAIModels":[{"modelID":"front_model","averagePrecision":0.61,"numberOfTrainSamples":12}]},"AIClasses":{"numberOfAIClasses":2,"listOfAIClasses":["road","sidewalk"]},"samples":{"numberOfLabeledUnseenSample":12,"numberOfUnseenSample":0}})",
       R"("knowledgeBase":"x")", R"("knowledgeBase":[1,{}])", R"("knowledgeBase":null)"}) {
    std::string variant = ReplaceOnce(text, kZero, kb);
    ASSERT_FALSE(variant.empty());
    auto v = DecodeLlJob(variant);
    ASSERT_TRUE(v.ok()) << kb << ": " << v.message();
    EXPECT_EQ(v->object.conditions.size(), 6u);
  }
}

// runtime.Model keys the LC does not use are accepted whatever their type (a GM never stores a
// condition whose models do not decode, but a custom worker's keys reach the LC through it).
TEST(ResourceCodec, ConditionDataToleratesOtherRuntimeModelKeys) {
  const std::string kModels[] = {
      R"({"format":"pb","url":"/a","classes":null})",
      R"({"format":"pb","url":"/a","classes":["road","sidewalk"],"current_metric":{"front_model":{"mIoU":0.61}},"history_metric":0.5,"number_of_labeled_unseen_sample":12,"number_of_model":2,"number_of_unseen_sample":0})",
      R"({"format":"pb","url":"/a","classes":"road","current_metric":7,"history_metric":"x","number_of_labeled_unseen_sample":12.0,"number_of_model":[],"number_of_unseen_sample":{}})",
  };
  for (const auto& m : kModels) {
    auto d = DecodeConditionData(R"({"input":{"models":[)" + m + R"(]},"output":{"models":[)" + m +
                                 "]}}");
    ASSERT_TRUE(d.ok()) << m << ": " << d.message();
    EXPECT_EQ(d->input_models, std::vector<core::ModelRef>{Ref("pb", "/a")}) << m;
    EXPECT_EQ(d->output_models, std::vector<core::ModelRef>{Ref("pb", "/a")}) << m;
  }
}

TEST(ResourceCodec, ConditionDataDeviceSocVersions) {
  auto d = DecodeConditionData(
      R"({"output":{"models":[{"format":"om","url":"/x","device_soc_versions":["Ascend310"]},{"format":"om","url":"/y","device_soc_versions":["Ascend710","Ascend910"]},{"format":"pb","url":"/z","device_soc_versions":null}]},"input":{"model":{"device_soc_versions":[]}}})");
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->output_models,
            (std::vector<core::ModelRef>{Ref("om", "/x", {}, {"Ascend310"}),
                                         Ref("om", "/y", {}, {"Ascend710", "Ascend910"}),
                                         Ref("pb", "/z")}));
  struct Case {
    std::string data;
    std::string error;
  };
  const Case kCases[] = {
      {R"({"output":{"models":[{"url":"/x","device_soc_versions":"Ascend310"}]}})",
       "output.models[0].device_soc_versions: expected an array, got string"},
      {R"({"input":{"models":[{},{"device_soc_versions":["a",1]}]}})",
       "input.models[1].device_soc_versions[1]: expected a string, got number"},
      {R"({"output":{"model":{"device_soc_versions":{}}}})",
       "output.model.device_soc_versions: expected an array, got object"},
  };
  for (const auto& c : kCases) {
    auto bad = DecodeConditionData(c.data);
    ASSERT_FALSE(bad.ok()) << c.data;
    EXPECT_EQ(bad.message(), c.error);
  }
}

// A condition whose data the LC cannot use leaves that data empty, names it in a warning, and
// keeps the job and its other conditions.
TEST(ResourceCodec, UnusableConditionDataIsAWarning) {
  const std::string text = ReadTestdata("g2_il_job_hot.json");
  const std::string n2 = ReadTestdata("g2_conddata_n2.json");
  std::string bad_n2 =
      ReplaceOnce(n2, R"("format":"pb",)", R"("format":"pb","device_soc_versions":"Ascend310",)");
  ASSERT_FALSE(bad_n2.empty());
  std::string job = ReplaceOnce(text, GoString(n2), GoString(bad_n2));
  ASSERT_FALSE(job.empty());
  auto d = DecodeIlJob(job);
  ASSERT_TRUE(d.ok()) << d.message();
  ASSERT_EQ(d->object.conditions.size(), 14u);
  EXPECT_FALSE(d->object.conditions[4].data.has_output);
  EXPECT_EQ(d->object.conditions[4].data_json, bad_n2);
  EXPECT_EQ(d->object.conditions[11].data.input_models.size(), 2u);
  EXPECT_EQ(d->warnings,
            std::vector<std::string>{
                "IncrementalLearningJob default/helmet-detection-demo: status.conditions[4].data: "
                "output.models[0].device_soc_versions: expected an array, got string (data "
                "ignored)"});
  auto round2 = DecodeIlJob(ReadTestdata("il_job_round2.json"));
  ASSERT_TRUE(round2.ok());
  ASSERT_EQ(round2->warnings.size(), 1u);
  EXPECT_EQ(round2->warnings[0].rfind("IncrementalLearningJob default/helmet-detection-demo: "
                                      "status.conditions[6].data: invalid JSON: ",
                                      0),
            0u)
      << round2->warnings[0];
}

TEST(ResourceCodec, G2FieldErrorsNameObjectAndPath) {
  const std::string kId = "IncrementalLearningJob default/helmet-detection-demo: ";
  const BadJob kCases[] = {
      {R"("hotUpdateEnabled":true)", R"("hotUpdateEnabled":"true")",
       kId + "spec.deploySpec.model.hotUpdateEnabled: expected a boolean, got string"},
      {R"("hotUpdateEnabled":true)", R"("hotUpdateEnabled":1)",
       kId + "spec.deploySpec.model.hotUpdateEnabled: expected a boolean, got number"},
      {R"("initialEvalModel":{"name":"eval-model"})", R"("initialEvalModel":"eval-model")",
       kId + "spec.evalSpec.initialEvalModel: expected an object, got string"},
      {R"("initialEvalModel":{"name":"eval-model"})", R"("initialEvalModel":{"name":7})",
       kId + "spec.evalSpec.initialEvalModel.name: expected a string, got number"},
      {R"("initialEvalModel":{"name":"eval-model"})", R"("initialEvalModel":{"name":"a/b"})",
       kId + "spec.evalSpec.initialEvalModel.name: \"a/b\" must not contain '/'"},
  };
  const std::string base = ReadTestdata("g2_il_job_hot.json");
  for (const auto& c : kCases) {
    std::string text = ReplaceOnce(base, c.from, c.to);
    ASSERT_FALSE(text.empty()) << "no occurrence of " << c.from;
    auto d = DecodeIlJob(text);
    ASSERT_FALSE(d.ok()) << c.to;
    EXPECT_EQ(d.message(), c.error);
  }
  // Null is Go's zero value.
  auto d =
      DecodeIlJob(ReplaceOnce(base, R"("hotUpdateEnabled":true)", R"("hotUpdateEnabled":null)"));
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_FALSE(d->object.spec.hot_update_enabled);

  const std::string model = ReadTestdata("g2_model_devices.json");
  auto m = DecodeModel(ReplaceOnce(model, R"(["Ascend310","Ascend710"])", R"("Ascend310")"));
  EXPECT_EQ(m.message(),
            "Model default/deploy-model: spec.device_soc_versions: expected an array, got string");
  m = DecodeModel(ReplaceOnce(model, R"(["Ascend310","Ascend710"])", R"(["Ascend310",310])"));
  EXPECT_EQ(m.message(),
            "Model default/deploy-model: spec.device_soc_versions[1]: expected a string, got "
            "number");
}

// pollPeriodSeconds is only passed on: a value the CRD would refuse leaves the default.
TEST(ResourceCodec, PollPeriodSecondsIsNeverAnError) {
  const std::string base = ReadTestdata("g2_il_job_hot.json");
  const std::pair<std::string, int64_t> kCases[] = {
      {"30", 30},  {"1", 1},       {"0", 60},    {"-5", 60}, {"30.5", 60},
      {"3e1", 60}, {"\"30\"", 60}, {"null", 60}, {"[]", 60}, {"99999999999999999999", 60},
  };
  for (const auto& [value, want] : kCases) {
    std::string text =
        ReplaceOnce(base, R"("pollPeriodSeconds":60)", R"("pollPeriodSeconds":)" + value);
    auto d = DecodeIlJob(text);
    ASSERT_TRUE(d.ok()) << value << ": " << d.message();
    EXPECT_EQ(d->object.spec.poll_period_seconds, want) << value;
  }
}

}  // namespace
}  // namespace sedna::json
