#include "adapters/json/resource_codec.h"

#include <array>
#include <utility>

#include "adapters/json/field_reader.h"
#include "adapters/json/go_json.h"
#include "adapters/json/k8s_names.h"

namespace sedna::json {

// DecodeConditionData with the values parsed taken off *budget (shared by a job's conditions).
Result<core::ConditionData> DecodeConditionData(std::string_view data_json, size_t* budget);

namespace {

using internal::Index;
using internal::Join;
using internal::ReadArray;
using internal::ReadBool;
using internal::ReadDouble;
using internal::ReadInt64;
using internal::ReadObject;
using internal::ReadString;
using internal::ReadStringList;
using internal::TypeError;

constexpr std::string_view kCredential = core::kCredentialAnnotation;

// Evaluates a Status-returning expression and returns it from the enclosing function on error.
#define SEDNA_RETURN_IF_ERROR(expr) \
  do {                              \
    ::sedna::Status _st = (expr);   \
    if (!_st.ok()) return _st;      \
  } while (false)

// ---- metadata --------------------------------------------------------------------------------

// metadata.name (required) and metadata.namespace: what identifies the object in errors.
Status DecodeIdentity(const RawJson& root, core::ObjectMeta* meta) {
  const RawJson* md = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "metadata", "", &md));
  if (md == nullptr) return Status::Error("metadata.name: missing");
  SEDNA_RETURN_IF_ERROR(ReadString(*md, "name", "metadata", &meta->name));
  SEDNA_RETURN_IF_ERROR(CheckObjectName("metadata.name", meta->name));
  SEDNA_RETURN_IF_ERROR(ReadString(*md, "namespace", "metadata", &meta->ns));
  return meta->ns.empty() ? Status::Ok() : CheckNamespace("metadata.namespace", meta->ns);
}

// A reference to another object by name (absent or "": none).
Status CheckRefName(std::string_view path, const std::string& name) {
  return name.empty() ? Status::Ok() : CheckObjectName(path, name);
}

// The rest of the metadata, once DecodeIdentity succeeded.
Status DecodeMetaRest(const RawJson& root, core::ObjectMeta* meta,
                      std::optional<std::string>* credential) {
  const RawJson& md = *root.Find("metadata");
  SEDNA_RETURN_IF_ERROR(ReadString(md, "uid", "metadata", &meta->uid));
  const RawJson* ann = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(md, "annotations", "metadata", &ann));
  if (ann == nullptr) return Status::Ok();
  for (size_t i = 0; i < ann->size(); ++i) {
    const RawJson& v = (*ann)[i];
    const std::string_view key = ann->key(i);
    if (!v.is_null() && !v.is_string()) {
      return TypeError("metadata.annotations[" + GoString(key) + "]", "a string", v);
    }
    meta->annotations[std::string(key)] = v.string_value();
  }
  if (auto it = meta->annotations.find(std::string(kCredential)); it != meta->annotations.end()) {
    *credential = it->second;
  }
  return Status::Ok();
}

// `annotations` without the credential, "" when nothing is left (Go: omitempty map).
std::string FilteredAnnotations(const RawJson& ann) {
  std::string out = "{";
  bool any = false;
  for (size_t i = 0; i < ann.size(); ++i) {
    if (ann.key(i) == kCredential) continue;
    if (any) out += ',';
    any = true;
    AppendGoString(out, ann.key(i));
    out += ':';
    out += ann[i].DumpInOrder();
  }
  out += '}';
  return any ? out : std::string();
}

std::string MetaWithoutCredential(const RawJson& md) {
  std::string out = "{";
  bool first = true;
  for (size_t i = 0; i < md.size(); ++i) {
    std::string value;
    if (md.key(i) == "annotations" && md[i].is_object()) {
      value = FilteredAnnotations(md[i]);
      if (value.empty()) continue;
    } else {
      value = md[i].DumpInOrder();
    }
    if (!first) out += ',';
    first = false;
    AppendGoString(out, md.key(i));
    out += ':';
    out += value;
  }
  out += '}';
  return out;
}

// ---- shared parts ----------------------------------------------------------------------------

template <class T>
Status DecodeParts(const RawJson& root, Decoded<T>* d) {
  std::string kind, api_version;
  SEDNA_RETURN_IF_ERROR(ReadString(root, "kind", "", &kind));
  SEDNA_RETURN_IF_ERROR(ReadString(root, "apiVersion", "", &api_version));
  d->type_meta_json = "{";
  if (!kind.empty()) {
    d->type_meta_json += "\"kind\":";
    AppendGoString(d->type_meta_json, kind);
  }
  if (!api_version.empty()) {
    if (!kind.empty()) d->type_meta_json += ',';
    d->type_meta_json += "\"apiVersion\":";
    AppendGoString(d->type_meta_json, api_version);
  }
  d->type_meta_json += '}';

  d->object_meta_json = MetaWithoutCredential(*root.Find("metadata"));

  const RawJson* spec = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "spec", "", &spec));
  d->spec_json = spec != nullptr ? spec->DumpInOrder() : "{}";
  const RawJson* status = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "status", "", &status));
  d->status_json = status != nullptr ? status->DumpInOrder() : "";
  return Status::Ok();
}

// Parses `json` as a `kind` object, decodes metadata and the stored parts, then calls
// decode(root, &object) for the kind-specific fields; errors get the object's identity.
// The bounded parse every GM object goes through (resource_codec.h: bytes, values, depth).
Result<RawJson> ParseObject(std::string_view json) {
  if (json.size() > kMaxObjectBytes) {
    return Result<RawJson>::Error(std::to_string(json.size()) + " bytes, more than the " +
                                  std::to_string(kMaxObjectBytes) + " a GM frame can carry");
  }
  return RawJson::Parse(json, kMaxObjectValues);
}

template <class T, class Fn>
Result<Decoded<T>> DecodeObject(std::string_view json, const std::string& kind, Fn decode) {
  auto parsed = ParseObject(json);
  if (!parsed.ok()) return parsed.status().With(kind);
  const RawJson& root = *parsed;
  if (!root.is_object()) return TypeError(kind, "an object", root);
  Decoded<T> d;
  if (Status s = DecodeIdentity(root, &d.object.meta); !s.ok()) return s.With(kind);
  const core::ObjectMeta& m = d.object.meta;
  std::string id = kind + " " + (m.ns.empty() ? m.name : m.ns + "/" + m.name);
  if (Status s = DecodeMetaRest(root, &d.object.meta, &d.credential_json); !s.ok()) {
    return s.With(id);
  }
  if (Status s = DecodeParts(root, &d); !s.ok()) return s.With(id);
  if (Status s = decode(root, &d.object, &d.warnings); !s.ok()) return s.With(id);
  for (std::string& w : d.warnings) w = id + ": " + w;
  return d;
}

// ---- spec pieces -----------------------------------------------------------------------------

Status DecodeModelRef(const RawJson& obj, std::string_view path, core::ModelRef* out) {
  if (!obj.is_null() && !obj.is_object()) return TypeError(path, "an object", obj);
  SEDNA_RETURN_IF_ERROR(ReadString(obj, "format", path, &out->format));
  SEDNA_RETURN_IF_ERROR(ReadString(obj, "url", path, &out->url));
  // runtime.Model (v0.5+): the LC selects models by these (§H4.3). The other runtime.Model keys
  // (classes, current_metric, history_metric, number_of_*) are not used and not checked.
  SEDNA_RETURN_IF_ERROR(ReadStringList(obj, "device_soc_versions", path, &out->devices));
  const RawJson* metrics = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(obj, "metrics", path, &metrics));
  if (metrics != nullptr) out->metrics = internal::DecodeMetrics(*metrics);
  return Status::Ok();
}

Status DecodeModelRefs(const RawJson& obj, std::string_view key, std::string_view path,
                       std::vector<core::ModelRef>* out) {
  const RawJson* arr = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadArray(obj, key, path, &arr));
  if (arr == nullptr) return Status::Ok();
  std::string arr_path = Join(path, key);
  for (size_t i = 0; i < arr->size(); ++i) {
    core::ModelRef ref;
    SEDNA_RETURN_IF_ERROR(DecodeModelRef((*arr)[i], Index(arr_path, i), &ref));
    out->push_back(std::move(ref));
  }
  return Status::Ok();
}

// Type-checks a single `model` member without keeping it.
Status CheckSingleModel(const RawJson& obj, std::string_view path) {
  const RawJson* model = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(obj, "model", path, &model));
  core::ModelRef ignored;
  return model != nullptr ? DecodeModelRef(*model, Join(path, "model"), &ignored) : Status::Ok();
}

Status DecodeConditionDataObject(const RawJson& root, core::ConditionData* out) {
  if (!root.is_object()) return TypeError("data", "an object", root);
  const RawJson* input = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "input", "", &input));
  if (input != nullptr) {
    SEDNA_RETURN_IF_ERROR(CheckSingleModel(*input, "input"));
    SEDNA_RETURN_IF_ERROR(DecodeModelRefs(*input, "models", "input", &out->input_models));
    SEDNA_RETURN_IF_ERROR(ReadString(*input, "dataURL", "input", &out->data_url));
    SEDNA_RETURN_IF_ERROR(ReadString(*input, "dataIndexURL", "input", &out->data_index_url));
    SEDNA_RETURN_IF_ERROR(ReadString(*input, "outputDir", "input", &out->output_dir));
  }
  const RawJson* output = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "output", "", &output));
  if (output != nullptr) {
    out->has_output = true;
    SEDNA_RETURN_IF_ERROR(CheckSingleModel(*output, "output"));
    SEDNA_RETURN_IF_ERROR(DecodeModelRefs(*output, "models", "output", &out->output_models));
  }
  return Status::Ok();
}

Status DecodeNamed(const RawJson& spec, std::string_view key, std::string_view path,
                   std::string* name) {
  const RawJson* obj = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(spec, key, path, &obj));
  if (obj == nullptr) return Status::Ok();
  SEDNA_RETURN_IF_ERROR(ReadString(*obj, "name", Join(path, key), name));
  return CheckRefName(Join(Join(path, key), "name"), *name);
}

Status DecodeDatasetRef(const RawJson& spec, std::string* name, double* train_prob) {
  const RawJson* ds = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(spec, "dataset", "spec", &ds));
  if (ds == nullptr) return Status::Ok();
  SEDNA_RETURN_IF_ERROR(ReadString(*ds, "name", "spec.dataset", name));
  SEDNA_RETURN_IF_ERROR(CheckRefName("spec.dataset.name", *name));
  return ReadDouble(*ds, "trainProb", "spec.dataset", train_prob);
}

Status DecodeContainer(const RawJson& c, std::string_view path, core::ContainerSpec* out) {
  if (!c.is_null() && !c.is_object()) return TypeError(path, "an object", c);
  SEDNA_RETURN_IF_ERROR(ReadString(c, "name", path, &out->name));
  SEDNA_RETURN_IF_ERROR(ReadString(c, "image", path, &out->image));
  SEDNA_RETURN_IF_ERROR(ReadStringList(c, "command", path, &out->command));
  SEDNA_RETURN_IF_ERROR(ReadStringList(c, "args", path, &out->args));
  SEDNA_RETURN_IF_ERROR(ReadString(c, "workingDir", path, &out->working_dir));
  const RawJson* env = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadArray(c, "env", path, &env));
  if (env != nullptr) {
    std::string env_path = Join(path, "env");
    for (size_t i = 0; i < env->size(); ++i) {
      const RawJson& e = (*env)[i];
      std::string e_path = Index(env_path, i);
      if (!e.is_null() && !e.is_object()) return TypeError(e_path, "an object", e);
      core::EnvVar var;
      SEDNA_RETURN_IF_ERROR(ReadString(e, "name", e_path, &var.name));
      SEDNA_RETURN_IF_ERROR(ReadString(e, "value", e_path, &var.value));
      out->env.push_back(std::move(var));
    }
  }
  return Status::Ok();
}

// `holder.template` (a PodTemplateSpec) at path `path`.
Status DecodeTemplate(const RawJson& holder, std::string_view path, core::PodTemplate* out) {
  const RawJson* tpl = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(holder, "template", path, &tpl));
  if (tpl == nullptr) return Status::Ok();
  std::string tpl_path = Join(path, "template");
  const RawJson* pod = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(*tpl, "spec", tpl_path, &pod));
  if (pod == nullptr) return Status::Ok();
  std::string pod_path = Join(tpl_path, "spec");
  SEDNA_RETURN_IF_ERROR(ReadString(*pod, "nodeName", pod_path, &out->node_name));
  const RawJson* containers = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadArray(*pod, "containers", pod_path, &containers));
  if (containers != nullptr) {
    std::string c_path = Join(pod_path, "containers");
    for (size_t i = 0; i < containers->size(); ++i) {
      core::ContainerSpec c;
      SEDNA_RETURN_IF_ERROR(DecodeContainer((*containers)[i], Index(c_path, i), &c));
      out->containers.push_back(std::move(c));
    }
  }
  return Status::Ok();
}

// `holder.trigger` at path `path`.
Status DecodeTrigger(const RawJson& holder, std::string_view path, core::TriggerSpec* out) {
  const RawJson* trig = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(holder, "trigger", path, &trig));
  if (trig == nullptr) return Status::Ok();
  std::string t_path = Join(path, "trigger");
  SEDNA_RETURN_IF_ERROR(ReadInt64(*trig, "checkPeriodSeconds", t_path, &out->check_period_seconds));
  const RawJson* timer = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(*trig, "timer", t_path, &timer));
  if (timer != nullptr) {
    core::TimerSpec t;
    std::string timer_path = Join(t_path, "timer");
    SEDNA_RETURN_IF_ERROR(ReadString(*timer, "start", timer_path, &t.start));
    SEDNA_RETURN_IF_ERROR(ReadString(*timer, "end", timer_path, &t.end));
    out->timer = std::move(t);
  }
  const RawJson* cond = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(*trig, "condition", t_path, &cond));
  if (cond != nullptr) {
    std::string c_path = Join(t_path, "condition");
    SEDNA_RETURN_IF_ERROR(ReadString(*cond, "operator", c_path, &out->op));
    SEDNA_RETURN_IF_ERROR(ReadDouble(*cond, "threshold", c_path, &out->threshold));
    SEDNA_RETURN_IF_ERROR(ReadString(*cond, "metric", c_path, &out->metric));
  }
  return Status::Ok();
}

Status DecodeHem(const RawJson& deploy, std::string_view path, core::HardExampleMining* out) {
  const RawJson* hem = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(deploy, "hardExampleMining", path, &hem));
  if (hem == nullptr) return Status::Ok();
  std::string h_path = Join(path, "hardExampleMining");
  SEDNA_RETURN_IF_ERROR(ReadString(*hem, "name", h_path, &out->name));
  const RawJson* params = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadArray(*hem, "parameters", h_path, &params));
  if (params == nullptr) return Status::Ok();
  out->has_parameters = true;
  std::string p_path = Join(h_path, "parameters");
  for (size_t i = 0; i < params->size(); ++i) {
    const RawJson& p = (*params)[i];
    std::string e_path = Index(p_path, i);
    if (!p.is_null() && !p.is_object()) return TypeError(e_path, "an object", p);
    std::pair<std::string, std::string> kv;
    SEDNA_RETURN_IF_ERROR(ReadString(p, "key", e_path, &kv.first));
    SEDNA_RETURN_IF_ERROR(ReadString(p, "value", e_path, &kv.second));
    out->parameters.push_back(std::move(kv));
  }
  return Status::Ok();
}

Status DecodeConditions(const RawJson& root, std::vector<core::JobCondition>* out,
                        std::vector<std::string>* warnings) {
  const RawJson* status = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "status", "", &status));
  if (status == nullptr) return Status::Ok();
  const RawJson* conds = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadArray(*status, "conditions", "status", &conds));
  if (conds == nullptr) return Status::Ok();
  size_t data_budget = kMaxObjectValues;  // for all the conditions' data together
  for (size_t i = 0; i < conds->size(); ++i) {
    const RawJson& c = (*conds)[i];
    std::string path = Index("status.conditions", i);
    if (!c.is_null() && !c.is_object()) return TypeError(path, "an object", c);
    core::JobCondition cond;
    std::string type, stage, unused;
    SEDNA_RETURN_IF_ERROR(ReadString(c, "type", path, &type));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "status", path, &unused));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "stage", path, &stage));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "lastHeartbeatTime", path, &unused));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "lastTransitionTime", path, &cond.last_transition_time));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "reason", path, &cond.reason));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "message", path, &cond.message));
    SEDNA_RETURN_IF_ERROR(ReadString(c, "data", path, &cond.data_json));
    auto parsed_type = core::ParseConditionType(type);
    if (!parsed_type) {
      return Status::Error(Join(path, "type") + ": unknown condition type " + GoString(type));
    }
    auto parsed_stage = core::ParseStage(stage);
    if (!parsed_stage) {
      return Status::Error(Join(path, "stage") + ": unknown stage " + GoString(stage));
    }
    cond.type = *parsed_type;
    cond.stage = *parsed_stage;
    if (!cond.data_json.empty()) {
      // A malformed data string does not invalidate the job; its data stays empty.
      if (auto data = DecodeConditionData(cond.data_json, &data_budget); data.ok()) {
        cond.data = std::move(*data);
      } else {
        warnings->push_back(Join(path, "data") + ": " + data.message() + " (data ignored)");
      }
    }
    out->push_back(std::move(cond));
  }
  return Status::Ok();
}

// ---- per kind --------------------------------------------------------------------------------

Status DecodeDatasetFields(const RawJson& root, core::Dataset* ds, std::vector<std::string>*) {
  const RawJson* spec = root.Find("spec");
  if (spec == nullptr || !spec->is_object()) return Status::Ok();  // type checked in DecodeParts
  SEDNA_RETURN_IF_ERROR(ReadString(*spec, "url", "spec", &ds->spec.url));
  SEDNA_RETURN_IF_ERROR(ReadString(*spec, "format", "spec", &ds->spec.format));
  SEDNA_RETURN_IF_ERROR(ReadString(*spec, "nodeName", "spec", &ds->spec.node_name));
  return ReadString(*spec, "credentialName", "spec", &ds->spec.credential_name);
}

Status DecodeModelFields(const RawJson& root, core::Model* model, std::vector<std::string>*) {
  const RawJson* spec = root.Find("spec");
  if (spec == nullptr || !spec->is_object()) return Status::Ok();
  SEDNA_RETURN_IF_ERROR(ReadString(*spec, "url", "spec", &model->spec.url));
  SEDNA_RETURN_IF_ERROR(ReadString(*spec, "format", "spec", &model->spec.format));
  SEDNA_RETURN_IF_ERROR(
      ReadStringList(*spec, "device_soc_versions", "spec", &model->spec.device_soc_versions));
  return ReadString(*spec, "credentialName", "spec", &model->spec.credential_name);
}

// spec.deploySpec.model: the name (checked as DecodeNamed does), hotUpdateEnabled (a wrong type
// is an error: it decides whether the LC writes model_config.json) and pollPeriodSeconds (not
// used by the LC, which only passes the job on: anything but an integer >= 1, the CRD minimum,
// leaves the default 60, the value lib/sedna falls back to).
Status DecodeDeployModel(const RawJson& deploy, core::IlJobSpec* s) {
  SEDNA_RETURN_IF_ERROR(DecodeNamed(deploy, "model", "spec.deploySpec", &s->deploy_model_name));
  const RawJson* model = internal::Member(deploy, "model");
  if (model == nullptr) return Status::Ok();
  SEDNA_RETURN_IF_ERROR(
      ReadBool(*model, "hotUpdateEnabled", "spec.deploySpec.model", &s->hot_update_enabled));
  if (const RawJson* poll = internal::Member(*model, "pollPeriodSeconds"); poll != nullptr) {
    if (auto v = poll->AsInt64(); v.ok() && *v >= 1) s->poll_period_seconds = *v;
  }
  return Status::Ok();
}

Status DecodeIlFields(const RawJson& root, core::IlJob* job, std::vector<std::string>* warnings) {
  core::IlJobSpec& s = job->spec;
  if (const RawJson* spec = root.Find("spec"); spec != nullptr && spec->is_object()) {
    SEDNA_RETURN_IF_ERROR(DecodeDatasetRef(*spec, &s.dataset_name, &s.train_prob));
    SEDNA_RETURN_IF_ERROR(DecodeNamed(*spec, "initialModel", "spec", &s.initial_model_name));
    const RawJson* train = nullptr;
    SEDNA_RETURN_IF_ERROR(ReadObject(*spec, "trainSpec", "spec", &train));
    if (train != nullptr) {
      SEDNA_RETURN_IF_ERROR(DecodeTemplate(*train, "spec.trainSpec", &s.train_template));
      SEDNA_RETURN_IF_ERROR(DecodeTrigger(*train, "spec.trainSpec", &s.train_trigger));
    }
    const RawJson* eval = nullptr;
    SEDNA_RETURN_IF_ERROR(ReadObject(*spec, "evalSpec", "spec", &eval));
    if (eval != nullptr) {
      SEDNA_RETURN_IF_ERROR(
          DecodeNamed(*eval, "initialEvalModel", "spec.evalSpec", &s.initial_eval_model_name));
      SEDNA_RETURN_IF_ERROR(DecodeTemplate(*eval, "spec.evalSpec", &s.eval_template));
    }
    const RawJson* deploy = nullptr;
    SEDNA_RETURN_IF_ERROR(ReadObject(*spec, "deploySpec", "spec", &deploy));
    if (deploy != nullptr) {
      SEDNA_RETURN_IF_ERROR(DecodeDeployModel(*deploy, &s));
      SEDNA_RETURN_IF_ERROR(DecodeTrigger(*deploy, "spec.deploySpec", &s.deploy_trigger));
      SEDNA_RETURN_IF_ERROR(DecodeHem(*deploy, "spec.deploySpec", &s.hem));
      SEDNA_RETURN_IF_ERROR(DecodeTemplate(*deploy, "spec.deploySpec", &s.deploy_template));
    }
    SEDNA_RETURN_IF_ERROR(ReadString(*spec, "credentialName", "spec", &s.credential_name));
    SEDNA_RETURN_IF_ERROR(ReadString(*spec, "outputDir", "spec", &s.output_dir));
  }
  return DecodeConditions(root, &job->conditions, warnings);
}

// status.knowledgeBase (every LL job from a v0.6+ GM, §H1.7) is the GM's; it is kept in
// status_json and not read.
Status DecodeLlFields(const RawJson& root, core::LlJob* job, std::vector<std::string>* warnings) {
  core::LlJobSpec& s = job->spec;
  if (const RawJson* spec = root.Find("spec"); spec != nullptr && spec->is_object()) {
    SEDNA_RETURN_IF_ERROR(DecodeDatasetRef(*spec, &s.dataset_name, &s.train_prob));
    const RawJson* train = nullptr;
    SEDNA_RETURN_IF_ERROR(ReadObject(*spec, "trainSpec", "spec", &train));
    if (train != nullptr) {
      SEDNA_RETURN_IF_ERROR(DecodeTemplate(*train, "spec.trainSpec", &s.train_template));
      SEDNA_RETURN_IF_ERROR(DecodeTrigger(*train, "spec.trainSpec", &s.train_trigger));
    }
    const RawJson* eval = nullptr;
    SEDNA_RETURN_IF_ERROR(ReadObject(*spec, "evalSpec", "spec", &eval));
    if (eval != nullptr) {
      SEDNA_RETURN_IF_ERROR(DecodeTemplate(*eval, "spec.evalSpec", &s.eval_template));
    }
    const RawJson* deploy = nullptr;
    SEDNA_RETURN_IF_ERROR(ReadObject(*spec, "deploySpec", "spec", &deploy));
    if (deploy != nullptr) {
      SEDNA_RETURN_IF_ERROR(DecodeTemplate(*deploy, "spec.deploySpec", &s.deploy_template));
    }
    SEDNA_RETURN_IF_ERROR(ReadString(*spec, "credentialName", "spec", &s.credential_name));
    SEDNA_RETURN_IF_ERROR(ReadString(*spec, "outputDir", "spec", &s.output_dir));
  }
  return DecodeConditions(root, &job->conditions, warnings);
}

// ---- reassembly ------------------------------------------------------------------------------

// `ann` (an object) with the credential set to `credential`, keys kept in sorted position.
std::string AnnotationsWithCredential(const RawJson* ann, const std::string& credential) {
  std::string out = "{";
  bool first = true;
  bool inserted = false;
  auto put = [&](std::string_view key, const std::string& value_json) {
    if (!first) out += ',';
    first = false;
    AppendGoString(out, key);
    out += ':';
    out += value_json;
  };
  std::string cred_value = GoString(credential);
  if (ann != nullptr) {
    for (size_t i = 0; i < ann->size(); ++i) {
      const std::string_view key = ann->key(i);
      if (key == kCredential) continue;
      if (!inserted && key > kCredential) {
        put(kCredential, cred_value);
        inserted = true;
      }
      put(key, (*ann)[i].DumpInOrder());
    }
  }
  if (!inserted) put(kCredential, cred_value);
  out += '}';
  return out;
}

// `md` (an object) with the credential annotation set; a new `annotations` member goes where
// Go's ObjectMeta marshals it (before ownerReferences/finalizers/clusterName/managedFields).
std::string MetaWithCredential(const RawJson& md, const std::string& credential) {
  static constexpr std::array<std::string_view, 4> kAfterAnnotations = {
      "ownerReferences", "finalizers", "clusterName", "managedFields"};
  size_t ann_index = md.size();
  for (size_t i = 0; i < md.size(); ++i) {
    if (md.key(i) == "annotations") ann_index = i;
  }
  std::string out = "{";
  bool first = true;
  auto put = [&](std::string_view key, const std::string& value_json) {
    if (!first) out += ',';
    first = false;
    AppendGoString(out, key);
    out += ':';
    out += value_json;
  };
  bool inserted = false;
  for (size_t i = 0; i < md.size(); ++i) {
    const std::string_view key = md.key(i);
    if (key == "annotations") {
      if (i != ann_index) continue;  // Go keeps the last duplicate
      put(key, AnnotationsWithCredential(md[i].is_object() ? &md[i] : nullptr, credential));
      inserted = true;
      continue;
    }
    if (!inserted && ann_index == md.size()) {
      for (auto after : kAfterAnnotations) {
        if (key == after) {
          put("annotations", AnnotationsWithCredential(nullptr, credential));
          inserted = true;
          break;
        }
      }
    }
    put(key, md[i].DumpInOrder());
  }
  if (!inserted) put("annotations", AnnotationsWithCredential(nullptr, credential));
  out += '}';
  return out;
}

}  // namespace

Result<Decoded<core::Dataset>> DecodeDataset(std::string_view json) {
  return DecodeObject<core::Dataset>(json, "Dataset", DecodeDatasetFields);
}

Result<Decoded<core::Model>> DecodeModel(std::string_view json) {
  return DecodeObject<core::Model>(json, "Model", DecodeModelFields);
}

Result<Decoded<core::IlJob>> DecodeIlJob(std::string_view json) {
  return DecodeObject<core::IlJob>(json, "IncrementalLearningJob", DecodeIlFields);
}

Result<Decoded<core::LlJob>> DecodeLlJob(std::string_view json) {
  return DecodeObject<core::LlJob>(json, "LifelongLearningJob", DecodeLlFields);
}

Result<Decoded<OpaqueObject>> DecodeOpaqueObject(std::string_view json, const std::string& kind) {
  return DecodeObject<OpaqueObject>(
      json, kind,
      [](const RawJson&, OpaqueObject*, std::vector<std::string>*) { return Status::Ok(); });
}

Status CheckObjectLimits(std::string_view json) {
  auto parsed = ParseObject(json);
  return parsed.ok() ? Status::Ok() : parsed.status();
}

Result<core::ConditionData> DecodeConditionData(std::string_view data_json) {
  size_t budget = kMaxObjectValues;
  return DecodeConditionData(data_json, &budget);
}

Result<core::ConditionData> DecodeConditionData(std::string_view data_json, size_t* budget) {
  auto parsed = RawJson::Parse(data_json, budget);
  if (!parsed.ok()) return parsed.status();
  core::ConditionData data;
  if (Status s = DecodeConditionDataObject(*parsed, &data); !s.ok()) return s;
  return data;
}

std::string AssembleObject(std::string_view type_meta, std::string_view object_meta,
                           std::string_view spec, std::string_view status,
                           const std::optional<std::string>& credential_json) {
  std::string out = "{";
  bool first = true;
  auto put_raw = [&](std::string_view text) {
    if (!first) out += ',';
    first = false;
    out += text;
  };
  auto put = [&](std::string_view key, std::string_view value_json) {
    std::string member;
    AppendGoString(member, key);
    member += ':';
    member += value_json;
    put_raw(member);
  };
  if (auto tm = RawJson::Parse(type_meta); tm.ok() && tm->is_object()) {
    for (size_t i = 0; i < tm->size(); ++i) put(tm->key(i), (*tm)[i].DumpInOrder());
  } else if (!type_meta.empty()) {
    put_raw(type_meta);
  }
  if (credential_json) {
    auto md =
        object_meta.empty() ? Result<RawJson>(RawJson::Object({})) : RawJson::Parse(object_meta);
    if (md.ok() && md->is_object()) {
      put("metadata", MetaWithCredential(*md, *credential_json));
    } else {
      put("metadata", object_meta);
    }
  } else if (!object_meta.empty()) {
    put("metadata", object_meta);
  }
  if (!spec.empty()) put("spec", spec);
  if (!status.empty()) put("status", status);
  out += '}';
  return out;
}

}  // namespace sedna::json
