// LocalGm::Impl, workers: train/eval/inference processes run from the job's pod templates (§P4.4).
#include "app/standalone/local_gm_impl.h"

#include <unistd.h>
#include "adapters/log/log.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string_view>

#include "adapters/json/resource_codec.h"
#include "app/standalone/worker_security.h"

namespace sedna::app {

using NJ = nlohmann::json;
using core::Stage;
using core::gm::PodPhase;
using local_gm_detail::KindName;

namespace {

std::string RandomSuffix() {
  static std::mt19937 rng{std::random_device{}()};
  static const char* kChars = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += kChars[rng() % 27];
  return s;
}

const char* StageWorkerPrefix(Stage s) {
  return s == Stage::kTrain ? "train-worker-" : "eval-worker-";
}

// spec.<part>.name of an object ("" when absent), e.g. the job's spec.dataset.name.
std::string SpecRefName(const NJ& obj, const char* part) {
  if (!obj.is_object() || !obj.contains("spec") || !obj["spec"].is_object()) return "";
  const NJ& spec = obj["spec"];
  if (!spec.contains(part) || !spec[part].is_object()) return "";
  auto name = spec[part].find("name");
  return name != spec[part].end() && name->is_string() ? name->get<std::string>() : "";
}

// " as uid U gid G" for the start log line when the worker gets its own credentials.
std::string CredentialsText(const process::ProcessSpec& p) {
  if (!p.uid && !p.gid) return "";
  return " as uid " + std::to_string(p.uid.value_or(::geteuid())) + " gid " +
         std::to_string(p.gid.value_or(::getegid()));
}

}  // namespace

// ------------------------------------------------------------------ workers

core::PodTemplate LocalGm::Impl::Template(const GmJob& j, const char* which) {
  const std::string_view w = which;
  auto pick = [&](const auto& spec) {
    return w == "train"  ? spec.train_template
           : w == "eval" ? spec.eval_template
                         : spec.deploy_template;
  };
  const std::string text = j.object.dump();
  if (j.gm_kind == core::gm::JobKind::kIncremental) {
    auto d = json::DecodeIlJob(text);
    return d.ok() ? pick(d->object.spec) : core::PodTemplate{};
  }
  auto d = json::DecodeLlJob(text);
  return d.ok() ? pick(d->object.spec) : core::PodTemplate{};
}

std::string LocalGm::Impl::DatasetUrl(const GmJob& j) {
  std::string ds = j.object["spec"]["dataset"].value("name", "");
  auto it = plain.find(core::ResourceKey(j.ns, core::kKindDataset, ds));
  if (it == plain.end()) return "";
  return NJ::parse(it->second)["spec"].value("url", "");
}

void LocalGm::Impl::AddKnowledgeBaseEnv(const GmJob& j, std::map<std::string, std::string>& env) {
  // hasCompletedInitialTraining: any (Train, Completed), data-less ones included; getCloudKBIndex:
  // models[0].url of the latest (Train, Completed) whose data has output models.
  bool completed = false;
  std::string index;
  for (auto it = j.state.conditions.rbegin(); it != j.state.conditions.rend(); ++it) {
    if (it->stage != Stage::kTrain || it->type != core::ConditionType::kCompleted) continue;
    completed = true;
    if (!index.empty()) continue;
    auto data = json::DecodeConditionData(it->data_json);
    if (data.ok() && !data->output_models.empty()) index = data->output_models[0].url;
  }
  env["HAS_COMPLETED_INITIAL_TRAINING"] = completed ? "true" : "false";
  if (completed) env["CLOUD_KB_INDEX"] = index;
}

// ------------------------------------------------------------------ S3 env of workers

std::string LocalGm::Impl::ObjectCredentialName(const GmJob& j, const char* kind_lower,
                                                const std::string& name) {
  auto it = plain.find(core::ResourceKey(j.ns, kind_lower, name));
  if (it == plain.end()) return "";
  return CredentialRef(NJ::parse(it->second, nullptr, false)).second;
}

WorkerUrl LocalGm::Impl::JobUrl(const GmJob& j, const std::string& var, const std::string& url) {
  const std::string ds = SpecRefName(j.object, "dataset");
  return {var,
          url,
          j.kind + " " + j.ns + "/" + j.name,
          j.ns,
          CredentialRef(j.object).second,
          "Dataset " + j.ns + "/" + ds,
          ObjectCredentialName(j, core::kKindDataset, ds)};
}

WorkerUrl LocalGm::Impl::ObjectUrl(const GmJob& j, const char* kind_lower, const std::string& name,
                                   const std::string& var, const std::string& url) {
  return {var,
          url,
          KindName(kind_lower) + " " + j.ns + "/" + name,
          j.ns,
          ObjectCredentialName(j, kind_lower, name),
          j.kind + " " + j.ns + "/" + j.name,
          CredentialRef(j.object).second};
}

WorkerUrl LocalGm::Impl::DatasetOwned(const GmJob& j, const std::string& var,
                                      const std::string& url) {
  return ObjectUrl(j, core::kKindDataset, SpecRefName(j.object, "dataset"), var, url);
}

WorkerUrl LocalGm::Impl::InputModelUrl(const GmJob& j, const std::string& var,
                                       const std::string& url) {
  const std::string initial = SpecRefName(j.object, "initialModel");
  auto it = plain.find(core::ResourceKey(j.ns, core::kKindModel, initial));
  if (!initial.empty() && it != plain.end()) {
    NJ m = NJ::parse(it->second, nullptr, false);
    if (m.is_object() && m["spec"].value("url", "") == url) {
      return ObjectUrl(j, core::kKindModel, initial, var, url);
    }
  }
  return JobUrl(j, var, url);
}

void LocalGm::Impl::AddS3Env(const GmJob& j, const std::string& worker,
                             const std::vector<WorkerUrl>& urls,
                             std::map<std::string, std::string>& env) {
  WorkerS3Env s3 = S3EnvForWorker(urls, secrets);
  for (const auto& w : s3.warnings) spdlog::warn("standalone: {}: {}: {}", j.key, worker, w);
  if (s3.env.empty()) return;
  spdlog::info(
      "standalone: {}: {} gets S3_ENDPOINT_URL={}, ACCESS_KEY_ID and SECRET_ACCESS_KEY of "
      "Secret {}",
      j.key, worker, s3.env["S3_ENDPOINT_URL"], s3.secret);
  for (auto& [k, v] : s3.env) env[k] = std::move(v);
}

Result<process::ProcessSpec> LocalGm::Impl::WorkerSpec(
    const GmJob& j, const core::PodTemplate& t, const std::string& worker,
    const std::map<std::string, std::string>& contract) {
  if (t.containers.empty()) return Result<process::ProcessSpec>::Error("no containers");
  const core::ContainerSpec& c = t.containers[0];
  process::ProcessSpec p;
  p.argv = c.command;
  for (const auto& a : c.args) p.argv.push_back(a);
  if (c.command.empty() && !c.args.empty() && c.args[0].size() > 3 &&
      c.args[0].compare(c.args[0].size() - 3, 3, ".py") == 0) {
    p.argv.insert(p.argv.begin(), "python3");
  }
  if (p.argv.empty()) {
    return Result<process::ProcessSpec>::Error("container " + c.name +
                                               ": neither command nor args is set");
  }
  const char* path = std::getenv("PATH");
  p.env["PATH"] = path ? path : "/usr/local/bin:/usr/bin:/bin";
  if (const char* home = std::getenv("HOME")) p.env["HOME"] = home;
  p.env["PYTHONUNBUFFERED"] = "1";
  for (const auto& e : c.env) p.env[e.name] = e.value;
  p.env["NAMESPACE"] = j.ns;
  p.env["JOB_NAME"] = j.name;
  p.env["WORKER_NAME"] = worker;
  p.env["LC_SERVER"] = opt.lc_server;
  for (const auto& [k, v] : contract) p.env[k] = v;
  p.working_dir = c.working_dir;
  p.log_path = opt.log_dir + "/" + j.name + "/" + worker + ".log";
  return p;
}

Status LocalGm::Impl::ApplySecurityContext(GmJob& j, const char* part, process::ProcessSpec& p) {
  NJ none;
  const NJ* tpl = &none;
  if (j.object.contains("spec") && j.object["spec"].is_object()) {
    const NJ& spec = j.object["spec"];
    auto holder = spec.find(part);
    if (holder != spec.end() && holder->is_object() && holder->contains("template")) {
      tpl = &(*holder)["template"];
    }
  }
  auto request = ReadSecurityRequest(*tpl, std::string("spec.") + part + ".template");
  if (!request.ok()) return request.status();
  for (const auto& field : request->unhonoured) {
    if (j.warned_security.insert(field).second) {
      spdlog::warn(
          "standalone: {}: {} is not honoured in standalone mode (workers are local processes); "
          "ignored",
          j.key, field);
    }
  }
  auto creds = ResolveCredentials(*request, ::geteuid(), ::getegid());
  if (!creds.ok()) return creds.status();
  for (const auto& note : creds->not_applied) {
    if (j.warned_security.insert(note.substr(0, note.find(':'))).second) {
      spdlog::warn("standalone: {}: {}", j.key, note);
    }
  }
  p.uid = creds->uid;
  p.gid = creds->gid;
  p.groups = creds->groups;
  p.no_new_privs = creds->no_new_privs;
  return Status::Ok();
}

void LocalGm::Impl::StartWorker(GmJob& j, Stage stage, const std::string& data_json) {
  auto data = json::DecodeConditionData(data_json);
  core::ConditionData d = data.ok() ? *data : core::ConditionData{};
  const bool il = j.gm_kind == core::gm::JobKind::kIncremental;
  const std::string worker = StageWorkerPrefix(stage) + RandomSuffix();
  std::string original = d.data_index_url.empty() ? DatasetUrl(j) : d.data_index_url;
  std::map<std::string, std::string> env;
  std::string urls;
  for (const auto& m : d.input_models) urls += (urls.empty() ? "" : ";") + m.url;
  // The worker's URLs with the object whose Secret applies, in the GM's mount order (§P4.4).
  std::vector<WorkerUrl> owned;
  if (stage == Stage::kTrain) {
    env["TRAIN_DATASET_URL"] = d.data_url;
    env["ORIGINAL_DATASET_URL"] = original;
    if (il) {
      env["BASE_MODEL_URL"] = d.input_models.empty() ? "" : d.input_models[0].url;
      env["MODEL_URL"] = d.output_dir;
      owned.push_back(InputModelUrl(j, "BASE_MODEL_URL", env["BASE_MODEL_URL"]));
      owned.push_back(JobUrl(j, "MODEL_URL", d.output_dir));
    } else {
      env["KB_SERVER"] = "http://localhost:9020";
      env["OUTPUT_URL"] = d.output_dir;
      owned.push_back(JobUrl(j, "OUTPUT_URL", d.output_dir));
      if (generation == core::gm::Generation::kG2) AddKnowledgeBaseEnv(j, env);
    }
    owned.push_back(JobUrl(j, "TRAIN_DATASET_URL", d.data_url));
  } else {
    env["MODEL_URLS"] = urls;
    env["TEST_DATASET_URL"] = d.data_url;
    env["ORIGINAL_DATASET_URL"] = original;
    for (const auto& m : d.input_models) {
      owned.push_back(il ? InputModelUrl(j, "MODEL_URLS", m.url) : JobUrl(j, "MODEL_URLS", m.url));
    }
    if (!il) {
      env["KB_SERVER"] = "http://localhost:9020";
      env["OUTPUT_URL"] = d.output_dir;
      owned.push_back(JobUrl(j, "OUTPUT_URL", d.output_dir));
    }
    owned.push_back(DatasetOwned(j, "TEST_DATASET_URL", d.data_url));
  }
  owned.push_back(DatasetOwned(j, "ORIGINAL_DATASET_URL", original));
  AddS3Env(j, worker, owned, env);
  auto spec = WorkerSpec(j, Template(j, stage == Stage::kTrain ? "train" : "eval"), worker, env);
  j.reported[stage] = false;
  j.unreported_exit.erase(stage);
  if (!spec.ok()) {
    spdlog::error("standalone: {}: {} worker: {}", j.key, core::StageName(stage), spec.message());
    SetPod(j, stage, PodPhase::kFailed);
    return;
  }
  if (Status s = ApplySecurityContext(j, stage == Stage::kTrain ? "trainSpec" : "evalSpec", *spec);
      !s.ok()) {
    spdlog::error("standalone: {}: {} worker {} not started: {}", j.key, core::StageName(stage),
                  worker, s.message());
    SetPod(j, stage, PodPhase::kFailed);
    return;
  }
  spec->timeout = opt.worker_timeout;
  const std::string key = j.key;
  auto id = runner->Start(*spec, [this, key, stage, worker](const process::ExitInfo& info) {
    OnWorkerExit(key, stage, worker, info);
  });
  if (!id.ok()) {
    spdlog::error("standalone: {}: starting {} worker: {}", j.key, core::StageName(stage),
                  id.message());
    SetPod(j, stage, PodPhase::kFailed);
    return;
  }
  j.pod_ids[stage] = *id;
  started.Started(j.key, stage, worker);
  board.Started(j.ns, j.name, core::StageName(stage), worker, spec->log_path);
  spdlog::info("standalone: {}: started {} ({}){}, pid {}, log {}", j.key, worker,
               spec->argv.size() > 1 ? spec->argv[0] + " " + spec->argv[1] : spec->argv[0],
               CredentialsText(*spec), runner->pid(*id).value_or(0), spec->log_path);
  SetPod(j, stage, PodPhase::kRunning);
}

void LocalGm::Impl::OnWorkerExit(const std::string& key, Stage stage, const std::string& worker,
                                 const process::ExitInfo& info) {
  started.Exited(key, worker, StartedWorkers::Clock::now());
  board.Exited(worker, ExitStateName(info.exit_code, info.signal, info.timed_out), info.error);
  auto it = jobs.find(key);
  if (it == jobs.end() || stopped) return;
  GmJob& j = *it->second;
  j.pod_ids.erase(stage);
  PodPhase phase = PodPhase::kFailed;
  if (info.exit_code == 0 && !info.timed_out && !info.spawn_failed) {
    if (!j.reported[stage]) {
      WaitForReport(j, stage);
      return;
    }
    phase = PodPhase::kSucceeded;
  } else {
    spdlog::error("standalone: {}: {} worker {}", key, core::StageName(stage), info.error);
  }
  SetPod(j, stage, phase);
  Settle(j);
}

void LocalGm::Impl::WaitForReport(GmJob& j, Stage stage) {
  auto& timer = j.unreported_exit[stage];
  timer = std::make_unique<boost::asio::steady_timer>(io);
  timer->expires_after(opt.report_grace);
  timer->async_wait([this, key = j.key, stage](const boost::system::error_code& ec) {
    if (ec || stopped) return;  // the report came, the stage restarted or the job went
    auto it = jobs.find(key);
    if (it == jobs.end()) return;
    GmJob& j = *it->second;
    j.unreported_exit.erase(stage);
    spdlog::error(
        "standalone: {}: {} worker exited 0 without reporting to the LC (none within {} ms); "
        "failed",
        key, core::StageName(stage), opt.report_grace.count());
    SetPod(j, stage, PodPhase::kFailed);
    Settle(j);
  });
}

void LocalGm::Impl::ReportArrived(GmJob& j, Stage stage) {
  j.reported[stage] = true;
  auto it = j.unreported_exit.find(stage);
  if (it == j.unreported_exit.end()) return;
  j.unreported_exit.erase(it);  // cancels the timer
  SetPod(j, stage, PodPhase::kSucceeded);
}

void LocalGm::Impl::StartInference(GmJob& j) {
  if (j.inference_id >= 0) {
    spdlog::info("standalone: {}: restarting the inference worker for the new model", j.key);
    runner->Terminate(j.inference_id, std::chrono::milliseconds(3000));
    j.inference_id = -1;
  }
  core::PodTemplate t = Template(j, "deploy");
  if (t.containers.empty()) {
    if (!j.warned_no_inference && j.gm_spec.hot_update) {
      spdlog::warn(
          "standalone: {}: no deploySpec.template container; no inference worker. With "
          "hotUpdateEnabled nothing reports the model reload, so each deploy stays at (Deploy, "
          "Running), as with Sedna's GM",
          j.key);
    } else if (!j.warned_no_inference) {
      spdlog::info("standalone: {}: no deploySpec.template container; no inference worker", j.key);
    }
    j.warned_no_inference = true;
    SetPod(j, Stage::kDeploy, PodPhase::kRunning);
    return;
  }
  std::map<std::string, std::string> env;
  const NJ& spec = j.object["spec"];
  const std::string worker = "inferworker-" + RandomSuffix();
  std::vector<WorkerUrl> owned;
  if (j.gm_kind == core::gm::JobKind::kIncremental) {
    std::string model = spec["deploySpec"]["model"].value("name", "");
    auto it = plain.find(core::ResourceKey(j.ns, core::kKindModel, model));
    env["MODEL_URL"] = it == plain.end() ? "" : NJ::parse(it->second)["spec"].value("url", "");
    const NJ& hem = spec["deploySpec"].value("hardExampleMining", NJ::object());
    env["HEM_NAME"] = hem.value("name", "");
    env["HEM_PARAMETERS"] = hem.contains("parameters") ? hem["parameters"].dump() : "null";
    owned.push_back(ObjectUrl(j, core::kKindModel, model, "MODEL_URL", env["MODEL_URL"]));
    if (j.gm_spec.hot_update) {
      // The GM's hot-update contract (§H4.1). The pod would mount the config's directory at
      // /model-hot-update; a local worker reads the file itself, and resolves the config's
      // model_path "/model-hot-update/<file>" against that directory.
      const std::string& config = j.gm_spec.hot_update_config;
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(config).parent_path(), ec);
      if (ec) {
        spdlog::error("standalone: {}: model hot update directory {}: {}", j.key,
                      std::filesystem::path(config).parent_path().string(), ec.message());
      }
      const NJ* period = local_gm_detail::Find(spec, {"deploySpec", "model", "pollPeriodSeconds"});
      int64_t seconds = period && period->is_number_integer() ? period->get<int64_t>() : 60;
      env["MODEL_HOT_UPDATE"] = "true";
      env["MODEL_POLL_PERIOD_SECONDS"] = std::to_string(seconds < 1 ? 60 : seconds);
      env["MODEL_HOT_UPDATE_CONFIG"] = config;
    }
  } else {
    std::string out = spec.value("outputDir", "");
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    env["MODEL_URLS"] = out + "/deploy/index.pkl";
    owned.push_back(JobUrl(j, "MODEL_URLS", env["MODEL_URLS"]));
    // G2 also gives the LL inference worker the job's outputDir (docs/protocol.md §H1.7).
    if (generation == core::gm::Generation::kG2) env["OUTPUT_URL"] = spec.value("outputDir", "");
  }
  AddS3Env(j, worker, owned, env);
  auto ps = WorkerSpec(j, t, worker, env);
  if (!ps.ok()) {
    spdlog::error("standalone: {}: inference worker: {}", j.key, ps.message());
    SetPod(j, Stage::kDeploy, PodPhase::kFailed);
    return;
  }
  if (Status s = ApplySecurityContext(j, "deploySpec", *ps); !s.ok()) {
    spdlog::error("standalone: {}: inference worker {} not started: {}", j.key, worker,
                  s.message());
    SetPod(j, Stage::kDeploy, PodPhase::kFailed);
    return;
  }
  const std::string key = j.key;
  auto current = std::make_shared<int64_t>(-1);
  auto id = runner->Start(*ps, [this, key, current, worker](const process::ExitInfo& info) {
    started.Exited(key, worker, StartedWorkers::Clock::now());
    board.Exited(worker, ExitStateName(info.exit_code, info.signal, info.timed_out), info.error);
    auto it = jobs.find(key);
    if (it == jobs.end() || stopped) return;
    GmJob& job = *it->second;
    if (job.inference_id != *current) return;  // a replaced worker we terminated on purpose
    spdlog::warn("standalone: {}: inference worker {}", key, info.error);
    job.inference_id = -1;
    SetPod(job, Stage::kDeploy, info.exit_code == 0 ? PodPhase::kSucceeded : PodPhase::kFailed);
    Settle(job);
  });
  if (!id.ok()) {
    spdlog::error("standalone: {}: inference worker: {}", j.key, id.message());
    SetPod(j, Stage::kDeploy, PodPhase::kFailed);
    return;
  }
  *current = *id;
  j.inference_id = *id;
  j.inference_hot = j.gm_spec.hot_update;
  started.Started(j.key, Stage::kDeploy, worker, j.inference_hot);
  board.Started(j.ns, j.name, "inference", worker, ps->log_path);
  spdlog::info("standalone: {}: inference worker {} started{}, log {}", j.key, worker,
               CredentialsText(*ps), ps->log_path);
  SetPod(j, Stage::kDeploy, PodPhase::kRunning);
}

}  // namespace sedna::app
