// The IL model hot update (docs/protocol.md §H4.1): on (Deploy, Running) of a job with hot update
// enabled, the trained model and model_config.json written for the inference worker to load,
// once per condition index.
#include <optional>
#include <string>

#include "core/il_job.h"
#include "core/il_stepper.h"
#include "core/model_select.h"

namespace sedna::core::il {
namespace internal {
namespace {

constexpr int64_t kHotUpdateRetryMs = 10000;

std::string BaseName(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  const size_t slash = url.rfind('/');
  return slash == std::string::npos ? url : url.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

// §H4.1: on (Deploy, Running) of a hot-update job, write the model and model_config.json once per
// condition index (every round, unlike upstream [P:U381]), only on a condition a GM message of this
// connection confirmed (§H3.3).
void Stepper::MaybeHotUpdate(int64_t idx) {
  const IlJob& job = *spec.job;
  if (!job.spec.hot_update_enabled || idx == s.answered_hot_update) return;
  if (!spec.conditions_fresh || now.unix_ms < s.retry_after_ms) return;
  auto cfg = job.meta.annotations.find(kHotUpdateConfigAnnotation);
  if (cfg == job.meta.annotations.end() || cfg->second.empty()) {
    Blocked(std::string("(Deploy, Running) of a hot-update job without the ") +
            kHotUpdateConfigAnnotation + " annotation; waiting for it");
    return;
  }
  if (!spec.deploy_model) {
    Blocked("hot update: Model " + job.meta.ns + "/" + job.spec.deploy_model_name +
            " (spec.deploySpec.model.name) is not known yet");
    return;
  }
  std::optional<ModelRef> eval_model = EvalModel();
  if (!job.spec.initial_eval_model_name.empty() && !eval_model) {
    Blocked("hot update: Model " + job.meta.ns + "/" + job.spec.initial_eval_model_name +
            " (spec.evalSpec.initialEvalModel) is not known yet");
    return;
  }
  const auto* out = TrainOutputBefore(job, idx);
  std::optional<ModelRef> trained;
  if (out) {
    ModelChoice c = SelectModel(*out, *spec.deploy_model, 0);
    if (!c.matched && c.model) Warn("hot update: " + c.note);
    trained = c.model;
  } else if (s.trained) {
    trained = s.trained;
  }
  if (!trained) {
    s.answered_hot_update = idx;
    Error("hot update at condition " + std::to_string(idx) +
          ": no trained model is known (no Train/Completed output); nothing written");
    return;
  }
  const std::string dir = DirName(cfg->second);
  const std::string name = BaseName(trained->url);
  WriteHotUpdate w;
  w.condition = idx;
  w.job_namespace = job.meta.ns;
  w.job_name = job.meta.name;
  w.config_path = cfg->second;
  w.model_path = std::string(kHotUpdateContainerPrefix) + "/" + name;
  w.copies.push_back(CopyModel{trained->url, dir + "/" + name});
  w.copies.push_back(CopyModel{trained->url, spec.deploy_model->url});
  if (!job.spec.initial_eval_model_name.empty() && out) {
    ModelChoice c = SelectModel(*out, *eval_model, 0);
    if (c.model) w.copies.push_back(CopyModel{c.model->url, eval_model->url});
  }
  s.last_error.clear();
  s.work = Work::kHotUpdate;
  s.work_condition = idx;
  s.work_models = {WithoutMetrics(*trained)};
  Info("hot update: writing " + w.config_path + " for " + trained->url);
  actions.push_back(std::move(w));
}

void Stepper::OnHotUpdateWritten(const HotUpdateWritten& e) {
  if (s.work != Work::kHotUpdate || e.condition != s.work_condition) return;
  const std::string model = s.work_models.empty() ? "" : s.work_models[0].url;
  s.work = Work::kNone;
  s.work_condition = -1;
  s.work_models.clear();
  if (!e.ok) {
    Blocked("hot update at condition " + std::to_string(e.condition) + " failed: " + e.error +
            "; retrying in 10 s");
    s.retry_after_ms = now.unix_ms + kHotUpdateRetryMs;
    return;
  }
  s.answered_hot_update = e.condition;
  s.last_error.clear();
  RecordDeployment(s.decided_round, model);
  Info("hot update written: the inference worker loads " + model);
}

}  // namespace internal
}  // namespace sedna::core::il
