#include "objects.h"

namespace sedna::testing {

Json Meta(const std::string& name, const std::string& uid) {
  return Json{{"name", name},    {"namespace", "default"},
              {"uid", uid},      {"resourceVersion", "12345"},
              {"generation", 1}, {"creationTimestamp", "2021-08-20T08:00:00Z"}};
}

Json DatasetObject(const std::string& name, const std::string& url, const std::string& format,
                   const std::string& uid) {
  return Json{{"kind", "Dataset"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta(name, uid)},
              {"spec", {{"url", url}, {"format", format}, {"nodeName", "edge-node"}}},
              {"status", {{"numberOfSamples", 0}}}};
}

Json ModelObject(const std::string& name, const std::string& url, const std::string& format,
                 const std::string& uid) {
  return Json{{"kind", "Model"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta(name, uid)},
              {"spec", {{"url", url}, {"format", format}}},
              {"status", Json::object()}};
}

Json Template(const std::string& name, const std::string& script, const std::string& image,
              const std::string& pull_policy) {
  Json container{{"name", name},
                 {"image", image},
                 {"args", Json::array({script})},
                 {"resources", Json::object()}};
  if (!pull_policy.empty()) container["imagePullPolicy"] = pull_policy;
  return Json{{"metadata", {{"creationTimestamp", nullptr}}},
              {"spec", {{"containers", Json::array({container})}, {"nodeName", "edge-node"}}}};
}

Json TrainTrigger(int64_t threshold, int check_period_seconds) {
  return Json{
      {"checkPeriodSeconds", check_period_seconds},
      {"timer", {{"start", "00:00"}, {"end", "24:00"}}},
      {"condition", {{"operator", ">"}, {"threshold", threshold}, {"metric", "num_of_samples"}}}};
}

Json IlJobObject(const IlJobSpec& s) {
  Json job{{"kind", "IncrementalLearningJob"},
           {"apiVersion", "sedna.io/v1alpha1"},
           {"metadata", Meta(s.name, s.uid)},
           {"spec",
            {{"dataset", {{"name", s.dataset}, {"trainProb", s.train_prob}}},
             {"initialModel", {{"name", s.initial_model}}},
             {"trainSpec",
              {{"template", Template("train-worker", "train.py")},
               {"trigger", TrainTrigger(s.threshold, s.check_period_seconds)}}},
             {"evalSpec", {{"template", Template("eval-worker", "eval.py")}}},
             {"deploySpec",
              {{"model", {{"name", "deploy-model"}}},
               {"trigger",
                {{"condition",
                  {{"operator", ">"}, {"threshold", 0.1}, {"metric", "precision_delta[0]"}}}}},
               {"hardExampleMining", {{"name", "IBT"}}},
               {"template", Template("infer-worker", "inference.py")}}},
             {"outputDir", s.output_dir}}}};
  if (s.hot_update) {
    job["spec"]["deploySpec"]["model"]["hotUpdateEnabled"] = true;
    job["spec"]["deploySpec"]["model"]["pollPeriodSeconds"] = 60;
  }
  if (!s.initial_eval_model.empty()) {
    job["spec"]["evalSpec"]["initialEvalModel"] = Json{{"name", s.initial_eval_model}};
  }
  return job;
}

Json LlJobObject(const LlJobSpec& s) {
  auto tmpl = [&](const std::string& name, const std::string& script) {
    return Template(name, script, s.image, s.pull_policy);
  };
  return Json{{"kind", "LifelongLearningJob"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta(s.name, s.uid)},
              {"spec",
               {{"dataset", {{"name", s.dataset}, {"trainProb", s.train_prob}}},
                {"trainSpec",
                 {{"template", tmpl("train-worker", "train.py")},
                  {"trigger", TrainTrigger(s.threshold, s.check_period_seconds)}}},
                {"evalSpec", {{"template", tmpl("eval-worker", "eval.py")}}},
                {"deploySpec", {{"template", tmpl("infer-worker", "inference.py")}}},
                {"outputDir", s.output_dir}}}};
}

std::vector<Json> IlDownstream(const GmJob& job, const std::string& deploy_url) {
  const auto d = job.Downstream();
  if (!d.send_job) return {};
  std::vector<Json> out{job.Object()};
  if (d.model == core::gm::Downstream::ModelToSend::kInitial) {
    out.push_back(ModelObject("initial-model", kBaseModelUrl, "ckpt"));
  } else if (d.model == core::gm::Downstream::ModelToSend::kDeploy) {
    out.push_back(ModelObject("deploy-model", deploy_url, "pb"));
  }
  return out;
}

void SetIlModels(GmJob& job, const std::string& deploy_url) {
  job.SetModel(core::gm::EdgeSend::What::kInitialModel,
               ModelObject("initial-model", kBaseModelUrl, "ckpt"));
  job.SetModel(core::gm::EdgeSend::What::kDeployModel,
               ModelObject("deploy-model", deploy_url, "pb"));
}

}  // namespace sedna::testing
