// Sedna resource types as the LC uses them (docs/protocol.md §P2). Plain data, no JSON: codecs in
// adapters/json convert wire objects to and from these.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_map.h"

namespace sedna::core {

inline constexpr const char* kApiVersion = "sedna.io/v1alpha1";
inline constexpr const char* kCredentialAnnotation = "sedna.io/credential";
// Model hot update (docs/protocol.md §H4.1): the host path of the job's model_config.json,
// set by a GM >= v0.4 on hot-update IL jobs; the inference pod mounts its directory here.
inline constexpr const char* kHotUpdateConfigAnnotation = "sedna.io/model-hot-update-config";
inline constexpr const char* kHotUpdateContainerPrefix = "/model-hot-update";
// A G2 GM names the node a stage's pod runs on in "sedna.io/Train|Eval|Deploy" (§H1.4).
inline constexpr const char* kStageNodeAnnotationPrefix = "sedna.io/";

// Lower-case kind strings: GM->LC resourceKind and worker ownerKind routing keys (§P0, §P1.4).
inline constexpr const char* kKindDataset = "dataset";
inline constexpr const char* kKindModel = "model";
inline constexpr const char* kKindIlJob = "incrementallearningjob";
inline constexpr const char* kKindLlJob = "lifelonglearningjob";
inline constexpr const char* kKindJointInference = "jointinferenceservice";
inline constexpr const char* kKindFederated = "federatedlearningjob";

struct ObjectMeta {
  std::string name;
  std::string ns;  // metadata.namespace
  std::string uid;
  std::map<std::string, std::string> annotations;
};

// ResourceKey(ns, kind_lower, name) written over `out`, whose capacity is reused: a lookup that
// keeps its buffer allocates nothing once the buffer has grown (several a worker report).
inline const std::string& ResourceKeyInto(std::string& out, std::string_view ns,
                                          std::string_view kind_lower, std::string_view name) {
  out.clear();
  out.reserve(ns.size() + kind_lower.size() + name.size() + 2);
  out.append(ns).append(1, '/').append(kind_lower).append(1, '/').append(name);
  return out;
}

// "<namespace>/<kind lower-case>/<name>" (§P0): the unique key of every resource.
inline std::string ResourceKey(std::string_view ns, std::string_view kind_lower,
                               std::string_view name) {
  std::string key;  // one allocation
  ResourceKeyInto(key, ns, kind_lower, name);
  return key;
}

struct DatasetSpec {
  std::string url;     // host path (no scheme) or s3://bucket/key
  std::string format;  // "txt" | "csv", compared case-insensitively
  std::string node_name;
  std::string credential_name;
};

struct Dataset {
  ObjectMeta meta;
  DatasetSpec spec;
};

// A metric value reported by a worker. Numbers and lists of numbers are usable by triggers;
// anything else (nested objects, strings) is kept as kOther and rejected by a trigger that names
// it.
struct MetricValue {
  enum class Kind { kNumber, kList, kOther };
  Kind kind = Kind::kOther;
  double number = 0;
  std::vector<double> list;

  static MetricValue Number(double v) { return {Kind::kNumber, v, {}}; }
  static MetricValue List(std::vector<double> v) { return {Kind::kList, 0, std::move(v)}; }
  static MetricValue Other() { return {}; }
  bool operator==(const MetricValue&) const = default;
};
using Metrics = NameMap<MetricValue>;

// A model reference as it appears in upstream messages and condition data: {format, url, metrics}
// and, from a G2 GM, device_soc_versions (§H4.3). Other runtime.Model keys (classes, ...) are not
// kept: the LC never sends them of its own, and forwarded worker results are passed verbatim.
struct ModelRef {
  std::string format;
  std::string url;
  Metrics metrics;
  std::vector<std::string> devices;  // device_soc_versions
  bool operator==(const ModelRef&) const = default;
};

struct ModelSpec {
  std::string url;
  std::string format;
  std::string credential_name;
  std::vector<std::string> device_soc_versions;  // G2 (§H4.3); empty when absent
};

struct Model {
  ObjectMeta meta;
  ModelSpec spec;
};

struct TimerSpec {
  std::string start;
  std::string end;
};

// The CR trigger (§P2.3): `condition` is always present on the wire, possibly empty.
struct TriggerSpec {
  std::optional<int64_t> check_period_seconds;
  std::optional<TimerSpec> timer;
  std::string op;  // condition.operator
  double threshold = 0;
  std::string metric;
};

struct EnvVar {
  std::string name;
  std::string value;
};

struct ContainerSpec {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::string working_dir;
};

struct PodTemplate {
  std::vector<ContainerSpec> containers;
  std::string node_name;
};

enum class Stage { kTrain, kEval, kDeploy };
enum class ConditionType { kWaiting, kReady, kStarting, kRunning, kCompleted, kFailed };

// Wire spellings: "Train"/"Eval"/"Deploy", "Waiting"/"Ready"/...
const char* StageName(Stage s);
// "sedna.io/Train", "sedna.io/Eval", "sedna.io/Deploy".
std::string StageNodeAnnotation(Stage s);
const char* ConditionTypeName(ConditionType t);
std::optional<Stage> ParseStage(const std::string& s);                  // exact spelling
std::optional<ConditionType> ParseConditionType(const std::string& s);  // exact spelling

// The parsed `data` of a job condition (§P4.1 IncrementalCondData).
struct ConditionData {
  std::vector<ModelRef> input_models;
  std::string data_url;
  std::string data_index_url;
  std::string output_dir;
  std::vector<ModelRef> output_models;
  bool has_output = false;  // `output` present in data
};

struct JobCondition {
  ConditionType type = ConditionType::kWaiting;
  Stage stage = Stage::kTrain;
  std::string last_transition_time;  // RFC 3339, as received
  std::string reason;
  std::string message;
  std::string data_json;  // the raw `data` string, "" when absent
  ConditionData data;     // parsed from data_json
};

struct HardExampleMining {
  std::string name;
  std::vector<std::pair<std::string, std::string>> parameters;
  bool has_parameters = false;  // `parameters` key present (HEM_PARAMETERS is "null" otherwise)
};

struct IlJobSpec {
  std::string dataset_name;
  double train_prob = 0;
  std::string initial_model_name;
  PodTemplate train_template;
  TriggerSpec train_trigger;
  PodTemplate eval_template;
  std::string initial_eval_model_name;  // evalSpec.initialEvalModel.name (G2, §H4.2); "" if absent
  std::string deploy_model_name;
  bool hot_update_enabled = false;   // deploySpec.model.hotUpdateEnabled (§H4.1)
  int64_t poll_period_seconds = 60;  // deploySpec.model.pollPeriodSeconds
  TriggerSpec deploy_trigger;
  HardExampleMining hem;
  PodTemplate deploy_template;
  std::string credential_name;
  std::string output_dir;
};

struct IlJob {
  ObjectMeta meta;
  IlJobSpec spec;
  std::vector<JobCondition> conditions;
};

struct LlJobSpec {
  std::string dataset_name;
  double train_prob = 0;
  PodTemplate train_template;
  TriggerSpec train_trigger;
  PodTemplate eval_template;
  PodTemplate deploy_template;
  std::string credential_name;
  std::string output_dir;
};

struct LlJob {
  ObjectMeta meta;
  LlJobSpec spec;
  std::vector<JobCondition> conditions;
};

}  // namespace sedna::core
