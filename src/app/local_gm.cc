#include "app/local_gm.h"

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <sys/stat.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <vector>

#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/manifest/manifest.h"
#include "adapters/process/process_runner.h"
#include "adapters/store/store.h"
#include "app/controller.h"
#include "core/gm_conditions.h"
#include "core/resources.h"

namespace sedna::app {

namespace asio = boost::asio;
using NJ = nlohmann::json;
using core::Stage;
using core::gm::PodPhase;

namespace {

constexpr const char* kScope = "localgm";

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string NowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm ut{};
  gmtime_r(&t, &ut);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &ut);
  return buf;
}

std::string RandomSuffix() {
  static std::mt19937 rng{std::random_device{}()};
  static const char* kChars = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += kChars[rng() % 27];
  return s;
}

// "dir/x.yaml (document 2, ...)" -> "dir/x.yaml"; also for error messages that start that way.
std::string SourceFile(const std::string& source) {
  auto cut = source.find(" (document");
  if (cut == std::string::npos) cut = source.find(':');
  return source.substr(0, cut);
}

std::string SourceDir(const std::string& source) {
  std::string file = source.substr(0, source.find(" (document"));
  auto slash = file.rfind('/');
  std::string dir = slash == std::string::npos ? "." : file.substr(0, slash);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) return dir;
  std::string r = real;
  std::free(real);
  return r;
}

// Standalone manifests may use paths relative to the manifest's directory.
void ResolvePath(NJ& node, const char* key, const std::string& base) {
  if (!node.is_object() || !node.contains(key) || !node[key].is_string()) return;
  std::string v = node[key];
  if (v.empty() || v[0] == '/' || v.find("://") != std::string::npos) return;
  node[key] = std::filesystem::path(base + "/" + v).lexically_normal().string();
}

void ResolveTemplate(NJ& spec_part, const std::string& base) {
  if (!spec_part.is_object() || !spec_part.contains("template")) return;
  NJ& t = spec_part["template"];
  if (!t.contains("spec") || !t["spec"].contains("containers")) return;
  for (auto& c : t["spec"]["containers"]) ResolvePath(c, "workingDir", base);
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

// "dataset" -> "Dataset", ..., for messages.
std::string KindName(const std::string& kind_lower) {
  if (kind_lower == core::kKindDataset) return "Dataset";
  if (kind_lower == core::kKindModel) return "Model";
  if (kind_lower == core::kKindIlJob) return "IncrementalLearningJob";
  if (kind_lower == core::kKindLlJob) return "LifelongLearningJob";
  return kind_lower;
}

}  // namespace

struct GmJob {
  std::string kind;  // object kind: IncrementalLearningJob / LifelongLearningJob
  core::gm::JobKind gm_kind = core::gm::JobKind::kIncremental;
  std::string ns, name, key;
  NJ object;              // the manifest object, paths resolved
  std::string signature;  // object JSON, to detect changes
  core::gm::GmJobState state;
  core::gm::Pods pods;
  std::map<Stage, int64_t> pod_ids;
  std::map<Stage, bool> reported;
  int64_t inference_id = -1;
  bool warned_no_inference = false;
};

struct LocalGm::Impl {
  asio::io_context& io;
  Controller& controller;
  LocalGmOptions opt;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<process::ProcessRunner> runner;
  std::map<std::string, std::unique_ptr<GmJob>> jobs;
  std::map<std::string, std::string> plain;  // dataset/model key -> object JSON sent
  std::map<std::string, int64_t> sample_counts;
  std::map<std::string, std::string> source_file;  // object key -> manifest file it came from
  // The manifests' Secrets: in memory only (never logged, stored or written anywhere).
  SecretMap secrets;
  // Object key -> the Secret ("ns/name") it names but that is missing (logged once per Secret).
  std::map<std::string, std::string> missing_secret;
  std::unique_ptr<asio::steady_timer> poll;
  std::string manifest_signature;
  bool stopped = false;

  Impl(asio::io_context& io_, Controller& c, LocalGmOptions o)
      : io(io_), controller(c), opt(std::move(o)) {}

  // ------------------------------------------------------------------ frames to the controller

  void Deliver(const std::string& op, const std::string& kind_lower, const std::string& ns,
               const std::string& name, const std::string& content) {
    std::string frame = json::EncodeFrame({ns, kind_lower, name, op}, content);
    asio::post(io, [this, frame] {
      if (!stopped) controller.OnGmFrame(frame);
    });
  }

  // Sends an object downstream (insert) as the GM does: with the credential of the Secret its
  // spec.credentialName names (§2.5); without it, and an error in the log, when that Secret is
  // missing (Load sends it again when the Secret appears).
  void DeliverObject(const std::string& kind_lower, const std::string& ns, const std::string& name,
                     const std::string& text) {
    const std::string key = core::ResourceKey(ns, kind_lower, name);
    CredentialInjection c = InjectCredential(text, secrets);
    if (c.missing) {
      auto [it, inserted] = missing_secret.emplace(key, c.secret);
      if (inserted || it->second != c.secret) {
        it->second = c.secret;
        spdlog::error(
            "standalone: {} {}/{}: spec.credentialName: Secret {} not found; sent without the {} "
            "annotation (sent again when the Secret appears in the manifests)",
            KindName(kind_lower), ns, name, c.secret, core::kCredentialAnnotation);
      }
    } else if (auto it = missing_secret.find(key); it != missing_secret.end()) {
      if (!c.secret.empty()) {
        spdlog::info("standalone: {} {}/{}: Secret {} found; sent with its credential",
                     KindName(kind_lower), ns, name, c.secret);
      }
      missing_secret.erase(it);
    }
    Deliver("insert", kind_lower, ns, name, c.object_json);
  }

  NJ JobObject(const GmJob& j) {
    NJ o = j.object;
    NJ conds = NJ::array();
    for (const auto& c : j.state.conditions) {
      NJ e{{"type", core::ConditionTypeName(c.type)},
           {"status", core::gm::kConditionStatus},
           {"stage", core::StageName(c.stage)},
           {"lastHeartbeatTime", c.last_transition_time},
           {"lastTransitionTime", c.last_transition_time}};
      if (!c.reason.empty()) e["reason"] = c.reason;
      if (!c.message.empty()) e["message"] = c.message;
      if (!c.data_json.empty()) e["data"] = c.data_json;
      conds.push_back(e);
    }
    o["status"] = NJ{{"conditions", conds}};
    return o;
  }

  // §4.3: the job (and the Model that goes with it) as the GM would send them to the LC.
  void Sync(GmJob& j) {
    auto d = core::gm::DownstreamFor(j.gm_kind, j.state);
    if (!d.send_job) return;
    DeliverObject(Lower(j.kind), j.ns, j.name, JobObject(j).dump());
    std::string model;
    if (d.model == core::gm::Downstream::ModelToSend::kInitial) {
      model = j.object["spec"]["initialModel"].value("name", "");
    } else if (d.model == core::gm::Downstream::ModelToSend::kDeploy) {
      model = j.object["spec"]["deploySpec"]["model"].value("name", "");
    }
    if (!model.empty()) {
      auto it = plain.find(core::ResourceKey(j.ns, core::kKindModel, model));
      if (it != plain.end()) DeliverObject(core::kKindModel, j.ns, model, it->second);
    }
  }

  // ------------------------------------------------------------------ persistence

  void Persist(const GmJob& j) {
    NJ conds = NJ::array();
    for (const auto& c : j.state.conditions) {
      conds.push_back(NJ{{"type", core::ConditionTypeName(c.type)},
                         {"stage", core::StageName(c.stage)},
                         {"time", c.last_transition_time},
                         {"reason", c.reason},
                         {"message", c.message},
                         {"data", c.data_json}});
    }
    NJ rec{{"conditions", conds}, {"started", j.state.started}};
    Status s = store->Transact(
        [&](store::Store::Tx& tx) { return tx.PutState(kScope, j.key, rec.dump()); });
    if (!s.ok()) spdlog::error("standalone: persisting {}: {}", j.key, s.message());
  }

  // IL serves from the job's start; LL once a deploy happened.
  bool ServedBefore(const GmJob& j) {
    if (!j.state.started) return false;
    if (j.gm_kind == core::gm::JobKind::kIncremental) return true;
    for (const auto& c : j.state.conditions) {
      if (c.stage == Stage::kDeploy) return true;
    }
    return false;
  }

  // Returns whether stored conditions were found.
  bool Restore(GmJob& j) {
    auto v = store->GetState(kScope, j.key);
    if (!v.ok() || !v->has_value()) return false;
    try {
      NJ rec = NJ::parse(**v);
      j.state.started = rec.value("started", false);
      for (const auto& c : rec.at("conditions")) {
        core::JobCondition jc;
        auto type = core::ParseConditionType(c.at("type"));
        auto stage = core::ParseStage(c.at("stage"));
        if (!type || !stage) continue;
        jc.type = *type;
        jc.stage = *stage;
        jc.last_transition_time = c.value("time", "");
        jc.reason = c.value("reason", "");
        jc.message = c.value("message", "");
        jc.data_json = c.value("data", "");
        j.state.conditions.push_back(jc);
      }
      // Workers of the previous run are gone: a stage that was running has failed (§4.2).
      if (!j.state.conditions.empty()) {
        const auto& last = j.state.conditions.back();
        if (last.type == core::ConditionType::kStarting ||
            last.type == core::ConditionType::kRunning) {
          SetPod(j, last.stage, PodPhase::kFailed);
        }
      }
      spdlog::info("standalone: {} resumed at {} condition(s)", j.key, j.state.conditions.size());
      return true;
    } catch (const std::exception& e) {
      spdlog::error("standalone: stored conditions of {} unreadable: {}", j.key, e.what());
    }
    return false;
  }

  // ------------------------------------------------------------------ the condition machine

  void SetPod(GmJob& j, Stage stage, PodPhase phase) {
    switch (stage) {
      case Stage::kTrain:
        j.pods.train = phase;
        break;
      case Stage::kEval:
        j.pods.eval = phase;
        break;
      case Stage::kDeploy:
        j.pods.inference = phase;
        break;
    }
  }

  void Settle(GmJob& j) {
    for (int guard = 0; guard < 8; ++guard) {
      auto settled = core::gm::Settle(j.gm_kind, j.state, j.pods, NowRfc3339());
      const bool changed = settled.step.changed;
      j.state = settled.step.state;
      j.pods = settled.pods;
      bool acted = false;
      for (const auto& a : settled.step.actions) {
        acted = true;
        if (auto* cp = std::get_if<core::gm::CreatePod>(&a)) {
          StartWorker(j, cp->stage, cp->data_json);
        } else {
          StartInference(j);
        }
      }
      if (changed) {
        Persist(j);
        Sync(j);
      }
      if (!acted) break;  // workers started: their phase changes may advance the job again
    }
  }

  // ------------------------------------------------------------------ workers

  core::PodTemplate Template(const GmJob& j, const char* which) {
    core::PodTemplate t;
    const std::string text = j.object.dump();
    if (j.gm_kind == core::gm::JobKind::kIncremental) {
      auto d = json::DecodeIlJob(text);
      if (!d.ok()) return t;
      const auto& s = d->object.spec;
      t = std::string(which) == "train"  ? s.train_template
          : std::string(which) == "eval" ? s.eval_template
                                         : s.deploy_template;
    } else {
      auto d = json::DecodeLlJob(text);
      if (!d.ok()) return t;
      const auto& s = d->object.spec;
      t = std::string(which) == "train"  ? s.train_template
          : std::string(which) == "eval" ? s.eval_template
                                         : s.deploy_template;
    }
    return t;
  }

  std::string DatasetUrl(const GmJob& j) {
    std::string ds = j.object["spec"]["dataset"].value("name", "");
    auto it = plain.find(core::ResourceKey(j.ns, core::kKindDataset, ds));
    if (it == plain.end()) return "";
    return NJ::parse(it->second)["spec"].value("url", "");
  }

  // ------------------------------------------------------------------ S3 env of workers

  // spec.credentialName of the Dataset or Model `name` of the job's namespace ("" when unset).
  std::string ObjectCredentialName(const GmJob& j, const char* kind_lower,
                                   const std::string& name) {
    auto it = plain.find(core::ResourceKey(j.ns, kind_lower, name));
    if (it == plain.end()) return "";
    return CredentialRef(NJ::parse(it->second, nullptr, false)).second;
  }

  // A URL of the job's own (outputDir, the round's data, trained models): the job's Secret, else
  // the Dataset's.
  WorkerUrl JobUrl(const GmJob& j, const std::string& var, const std::string& url) {
    const std::string ds = SpecRefName(j.object, "dataset");
    return {var,
            url,
            j.kind + " " + j.ns + "/" + j.name,
            j.ns,
            CredentialRef(j.object).second,
            "Dataset " + j.ns + "/" + ds,
            ObjectCredentialName(j, core::kKindDataset, ds)};
  }

  // A URL of the Dataset or Model `name` of the job's namespace: that object's Secret, else the
  // job's.
  WorkerUrl ObjectUrl(const GmJob& j, const char* kind_lower, const std::string& name,
                      const std::string& var, const std::string& url) {
    return {var,
            url,
            KindName(kind_lower) + " " + j.ns + "/" + name,
            j.ns,
            ObjectCredentialName(j, kind_lower, name),
            j.kind + " " + j.ns + "/" + j.name,
            CredentialRef(j.object).second};
  }

  WorkerUrl DatasetOwned(const GmJob& j, const std::string& var, const std::string& url) {
    return ObjectUrl(j, core::kKindDataset, SpecRefName(j.object, "dataset"), var, url);
  }

  // A model URL a train or eval worker gets (§4.4): the initial Model's Secret when it is that
  // Model's URL, else the job's.
  WorkerUrl InputModelUrl(const GmJob& j, const std::string& var, const std::string& url) {
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

  // Adds the S3 env of the worker's s3:// URLs to `env` (S3EnvForWorker). Logs the Secret's name
  // and the endpoint, never a key.
  void AddS3Env(const GmJob& j, const std::string& worker, const std::vector<WorkerUrl>& urls,
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

  // Builds argv, env and working dir from the template's first container (image ignored).
  Result<process::ProcessSpec> WorkerSpec(const GmJob& j, const core::PodTemplate& t,
                                          const std::string& worker,
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

  void StartWorker(GmJob& j, Stage stage, const std::string& data_json) {
    auto data = json::DecodeConditionData(data_json);
    core::ConditionData d = data.ok() ? *data : core::ConditionData{};
    const bool il = j.gm_kind == core::gm::JobKind::kIncremental;
    const std::string worker = StageWorkerPrefix(stage) + RandomSuffix();
    std::string original = d.data_index_url.empty() ? DatasetUrl(j) : d.data_index_url;
    std::map<std::string, std::string> env;
    std::string urls;
    for (const auto& m : d.input_models) urls += (urls.empty() ? "" : ";") + m.url;
    // The worker's URLs with the object whose Secret applies, in the GM's mount order (§4.4).
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
      }
      owned.push_back(JobUrl(j, "TRAIN_DATASET_URL", d.data_url));
    } else {
      env["MODEL_URLS"] = urls;
      env["TEST_DATASET_URL"] = d.data_url;
      env["ORIGINAL_DATASET_URL"] = original;
      for (const auto& m : d.input_models) {
        owned.push_back(il ? InputModelUrl(j, "MODEL_URLS", m.url)
                           : JobUrl(j, "MODEL_URLS", m.url));
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
    if (!spec.ok()) {
      spdlog::error("standalone: {}: {} worker: {}", j.key, core::StageName(stage), spec.message());
      SetPod(j, stage, PodPhase::kFailed);
      return;
    }
    spec->timeout = opt.worker_timeout;
    const std::string key = j.key;
    auto id = runner->Start(*spec, [this, key, stage](const process::ExitInfo& info) {
      OnWorkerExit(key, stage, info);
    });
    if (!id.ok()) {
      spdlog::error("standalone: {}: starting {} worker: {}", j.key, core::StageName(stage),
                    id.message());
      SetPod(j, stage, PodPhase::kFailed);
      return;
    }
    j.pod_ids[stage] = *id;
    spdlog::info("standalone: {}: started {} ({}), log {}", j.key, worker,
                 spec->argv.size() > 1 ? spec->argv[0] + " " + spec->argv[1] : spec->argv[0],
                 spec->log_path);
    SetPod(j, stage, PodPhase::kRunning);
  }

  void OnWorkerExit(const std::string& key, Stage stage, const process::ExitInfo& info) {
    auto it = jobs.find(key);
    if (it == jobs.end() || stopped) return;
    GmJob& j = *it->second;
    PodPhase phase = PodPhase::kFailed;
    if (info.exit_code == 0 && !info.timed_out && !info.spawn_failed) {
      if (j.reported[stage]) {
        phase = PodPhase::kSucceeded;
      } else {
        spdlog::error("standalone: {}: {} worker exited 0 without reporting to the LC; failed", key,
                      core::StageName(stage));
      }
    } else {
      spdlog::error("standalone: {}: {} worker {}", key, core::StageName(stage), info.error);
    }
    j.pod_ids.erase(stage);
    SetPod(j, stage, phase);
    Settle(j);
  }

  void StartInference(GmJob& j) {
    if (j.inference_id >= 0) {
      spdlog::info("standalone: {}: restarting the inference worker for the new model", j.key);
      runner->Terminate(j.inference_id, std::chrono::milliseconds(3000));
      j.inference_id = -1;
    }
    core::PodTemplate t = Template(j, "deploy");
    if (t.containers.empty()) {
      if (!j.warned_no_inference) {
        spdlog::info("standalone: {}: no deploySpec.template container; no inference worker",
                     j.key);
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
    } else {
      std::string out = spec.value("outputDir", "");
      while (out.size() > 1 && out.back() == '/') out.pop_back();
      env["MODEL_URLS"] = out + "/deploy/index.pkl";
      owned.push_back(JobUrl(j, "MODEL_URLS", env["MODEL_URLS"]));
    }
    AddS3Env(j, worker, owned, env);
    auto ps = WorkerSpec(j, t, worker, env);
    if (!ps.ok()) {
      spdlog::error("standalone: {}: inference worker: {}", j.key, ps.message());
      SetPod(j, Stage::kDeploy, PodPhase::kFailed);
      return;
    }
    const std::string key = j.key;
    auto current = std::make_shared<int64_t>(-1);
    auto id = runner->Start(*ps, [this, key, current](const process::ExitInfo& info) {
      auto it = jobs.find(key);
      if (it == jobs.end() || stopped) return;
      GmJob& job = *it->second;
      if (job.inference_id != *current) return;  // a replaced worker we terminated on purpose
      spdlog::warn("standalone: {}: inference worker {}", key, info.error);
      job.inference_id = -1;
      SetPod(job, Stage::kDeploy, info.exit_code == 0 ? PodPhase::kSucceeded : PodPhase::kFailed);
      Settle(job);
    });
    if (id.ok()) *current = *id;
    if (!id.ok()) {
      spdlog::error("standalone: {}: inference worker: {}", j.key, id.message());
      SetPod(j, Stage::kDeploy, PodPhase::kFailed);
      return;
    }
    j.inference_id = *id;
    spdlog::info("standalone: {}: inference worker started, log {}", j.key, ps->log_path);
    SetPod(j, Stage::kDeploy, PodPhase::kRunning);
  }

  // ------------------------------------------------------------------ upstream (the outbox)

  void Apply(const std::string& frame) {
    auto f = json::DecodeFrame(frame);
    if (!f.ok()) {
      spdlog::warn("standalone: upstream frame dropped: {}", f.message());
      return;
    }
    const std::string kind = Lower(f->header.resource_kind);
    const std::string key = core::ResourceKey(f->header.ns, kind, f->header.resource_name);
    if (kind == core::kKindDataset) {
      NJ c = NJ::parse(f->content, nullptr, false);
      if (c.is_object()) sample_counts[key] = c.value("numberOfSamples", int64_t{0});
      return;
    }
    auto it = jobs.find(key);
    if (it == jobs.end()) {
      spdlog::warn("standalone: status for unknown job {} dropped", key);
      return;
    }
    GmJob& j = *it->second;
    NJ c = NJ::parse(f->content, nullptr, false);
    if (!c.is_object()) return;
    const std::string phase = c.value("phase", ""), status = c.value("status", "");
    auto data = json::CondDataFromUpstreamContent(f->content);
    if (!data.ok()) {
      spdlog::warn("standalone: {}: status dropped: {}", key, data.message());
      return;
    }
    auto step = core::gm::ApplyUpstream(j.gm_kind, j.state, phase, status, *data, NowRfc3339());
    if (!step.ok()) {
      spdlog::warn("standalone: {}: status dropped like the GM would: {}", key, step.message());
      return;
    }
    const std::string lp = Lower(phase), ls = Lower(status);
    if ((ls == "completed" || ls == "failed") && (lp == "train" || lp == "eval")) {
      j.reported[lp == "train" ? Stage::kTrain : Stage::kEval] = true;
    }
    j.state = step->state;
    Persist(j);
    Sync(j);
    Settle(j);
  }

  // ------------------------------------------------------------------ manifests

  // Changes when a manifest file is added, removed or edited: names, sizes and mtimes only (the
  // poll runs every few seconds; parsing happens in Load when this changes).
  std::string ManifestSignature() {
    auto stamp = [](const std::string& path) -> std::string {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return path + ":missing";
      return path + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_size);
    };
    std::error_code ec;
    if (!std::filesystem::is_directory(opt.manifest_path, ec)) return stamp(opt.manifest_path);
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(opt.manifest_path, ec)) {
      const std::string ext = e.path().extension().string();
      if (ext == ".yaml" || ext == ".yml") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    std::string sig;
    for (const auto& f : files) sig += stamp(f) + "|";
    return sig;
  }

  bool Load(bool first) {
    manifest::LoadResult r = manifest::LoadManifests(opt.manifest_path);
    for (const auto& w : r.warnings) spdlog::warn("manifests: {}", w);
    for (const auto& e : r.errors) spdlog::error("manifests: {}", e);
    if (first && r.objects.empty()) return false;
    // A file with an error is not a removal: the objects (and Secrets) last loaded from it keep
    // their previous version.
    std::set<std::string> broken;
    for (const auto& e : r.errors) broken.insert(SourceFile(e));
    // Secrets first: the objects sent below carry their credentials.
    const auto changed_secrets = UpdateSecrets(r.secrets, broken);
    std::map<std::string, bool> seen;
    std::set<std::string> sent;  // object keys sent below
    // Datasets and Models first, then jobs (a job's references resolve on arrival).
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& o : r.objects) {
        const bool is_job = o.kind == "IncrementalLearningJob" || o.kind == "LifelongLearningJob";
        if (is_job != (pass == 1)) continue;
        NJ obj = NJ::parse(o.json, nullptr, false);
        if (!obj.is_object()) continue;
        const std::string base = SourceDir(o.source);
        NJ& spec = obj["spec"];
        if (o.kind == "Dataset" || o.kind == "Model") ResolvePath(spec, "url", base);
        if (is_job) {
          ResolvePath(spec, "outputDir", base);
          for (const char* part : {"trainSpec", "evalSpec", "deploySpec"}) {
            if (spec.contains(part)) ResolveTemplate(spec[part], base);
          }
        }
        const std::string kind = Lower(o.kind);
        const std::string key = core::ResourceKey(o.ns, kind, o.name);
        seen[key] = true;
        source_file[key] = SourceFile(o.source);
        const std::string text = obj.dump();
        if (!is_job) {
          if (plain[key] != text) {
            plain[key] = text;
            DeliverObject(kind, o.ns, o.name, text);
            sent.insert(key);
            if (!first) spdlog::info("manifests: {} applied", key);
          }
          continue;
        }
        auto& slot = jobs[key];
        if (!slot) {
          slot = std::make_unique<GmJob>();
          slot->kind = o.kind;
          slot->gm_kind = o.kind == "IncrementalLearningJob" ? core::gm::JobKind::kIncremental
                                                             : core::gm::JobKind::kLifelong;
          slot->ns = o.ns;
          slot->name = o.name;
          slot->key = key;
          slot->object = obj;
          slot->signature = text;
          const bool resumed = Restore(*slot);
          spdlog::info("manifests: {} loaded from {}", key, o.source);
          DeliverObject(kind, o.ns, o.name, JobObject(*slot).dump());
          sent.insert(key);
          if (resumed && ServedBefore(*slot)) StartInference(*slot);  // it served before
          Settle(*slot);
        } else if (slot->signature != text) {
          slot->object = obj;
          slot->signature = text;
          spdlog::info("manifests: {} changed; applied", key);
          DeliverObject(kind, o.ns, o.name, JobObject(*slot).dump());
          sent.insert(key);
        }
      }
    }
    // Objects whose documents were removed are deleted.
    auto removed = [&](const std::string& key) {
      if (seen.count(key)) return false;
      auto src = source_file.find(key);
      return src == source_file.end() || !broken.count(src->second);
    };
    for (auto it = jobs.begin(); it != jobs.end();) {
      if (!removed(it->first)) {
        ++it;
        continue;
      }
      GmJob& j = *it->second;
      for (auto& [stage, id] : j.pod_ids) runner->Terminate(id, std::chrono::milliseconds(3000));
      if (j.inference_id >= 0) runner->Terminate(j.inference_id, std::chrono::milliseconds(3000));
      Deliver("delete", Lower(j.kind), j.ns, j.name, j.object.dump());
      (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteState(kScope, j.key); });
      spdlog::info("manifests: {} removed; job deleted", j.key);
      source_file.erase(j.key);
      missing_secret.erase(j.key);
      it = jobs.erase(it);
    }
    for (auto it = plain.begin(); it != plain.end();) {
      if (!removed(it->first)) {
        ++it;
        continue;
      }
      NJ obj = NJ::parse(it->second);
      Deliver("delete", Lower(obj.value("kind", "")), obj["metadata"].value("namespace", "default"),
              obj["metadata"].value("name", ""), it->second);
      spdlog::info("manifests: {} removed; deleted", it->first);
      source_file.erase(it->first);
      missing_secret.erase(it->first);
      it = plain.erase(it);
    }
    ResendForSecrets(changed_secrets, sent);
    if (first) ForgetStoredObjectsNotInManifests(seen);
    return true;
  }

  // Replaces the Secrets with the loaded ones (a Secret of a file with an error keeps its previous
  // version, as objects do) and returns the (namespace, name) of those added, changed or removed.
  std::set<std::pair<std::string, std::string>> UpdateSecrets(
      const std::vector<manifest::Secret>& loaded, const std::set<std::string>& broken) {
    SecretMap next;
    for (const auto& s : loaded) next[{s.ns, s.name}] = s;
    for (const auto& [k, s] : secrets) {
      if (!next.count(k) && broken.count(SourceFile(s.source))) next.emplace(k, s);
    }
    std::set<std::pair<std::string, std::string>> changed;
    for (const auto& [k, s] : next) {
      auto it = secrets.find(k);
      if (it != secrets.end() && it->second == s) continue;
      changed.insert(k);
      if (it == secrets.end()) {
        spdlog::info("manifests: Secret {}/{} loaded from {}", k.first, k.second, s.source);
      } else {
        spdlog::info("manifests: Secret {}/{} changed; applied", k.first, k.second);
      }
    }
    for (const auto& [k, s] : secrets) {
      if (next.count(k)) continue;
      changed.insert(k);
      spdlog::info("manifests: Secret {}/{} removed", k.first, k.second);
    }
    secrets = std::move(next);
    return changed;
  }

  // The GM resends its objects periodically, each with the Secret as it is then: objects whose
  // Secret was added, changed or removed (and that Load did not just send) are sent again.
  void ResendForSecrets(const std::set<std::pair<std::string, std::string>>& changed,
                        const std::set<std::string>& sent) {
    if (changed.empty()) return;
    for (const auto& [key, text] : plain) {
      if (sent.count(key)) continue;
      NJ obj = NJ::parse(text, nullptr, false);
      const auto ref = CredentialRef(obj);
      if (ref.second.empty() || !changed.count(ref)) continue;
      spdlog::info("manifests: {} sent again: its Secret {}/{} changed", key, ref.first,
                   ref.second);
      DeliverObject(Lower(obj.value("kind", "")), ref.first, obj["metadata"].value("name", ""),
                    text);
    }
    for (auto& [key, j] : jobs) {
      if (sent.count(key)) continue;
      const auto ref = CredentialRef(j->object);
      if (ref.second.empty() || !changed.count(ref)) continue;
      spdlog::info("manifests: {} sent again: its Secret {}/{} changed", key, ref.first,
                   ref.second);
      DeliverObject(Lower(j->kind), j->ns, j->name, JobObject(*j).dump());
    }
  }

  // Objects the database still has from an earlier run but whose documents are gone were removed
  // while the daemon was stopped: delete them now (the controller reloaded them from SQLite).
  void ForgetStoredObjectsNotInManifests(const std::map<std::string, bool>& seen) {
    auto rows = store->LoadResources();
    if (!rows.ok()) {
      spdlog::error("standalone: reading stored objects: {}", rows.message());
      return;
    }
    for (const auto& row : *rows) {
      if (seen.count(row.name)) continue;
      const auto first = row.name.find('/'), last = row.name.rfind('/');
      if (first == std::string::npos || last == first) continue;
      const std::string ns = row.name.substr(0, first);
      const std::string kind = row.name.substr(first + 1, last - first - 1);
      const std::string name = row.name.substr(last + 1);
      Deliver("delete", kind, ns, name, "{}");
      (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteState(kScope, row.name); });
      spdlog::info("manifests: {} is no longer in the manifests; deleted", row.name);
    }
  }

  void SchedulePoll() {
    if (!poll) poll = std::make_unique<asio::steady_timer>(io);
    poll->expires_after(opt.manifest_poll);
    poll->async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped) return;
      std::string sig = ManifestSignature();
      if (sig != manifest_signature) {
        manifest_signature = sig;
        Load(false);
      }
      SchedulePoll();
    });
  }
};

LocalGm::LocalGm(asio::io_context& io, Controller& controller, LocalGmOptions options)
    : impl_(std::make_unique<Impl>(io, controller, std::move(options))) {}

LocalGm::~LocalGm() { Stop(); }

Status LocalGm::Start() {
  Impl& m = *impl_;
  auto st = store::Store::Open(m.opt.db_path);
  if (!st.ok()) return st.status();
  m.store = std::move(*st);
  m.runner = std::make_unique<process::ProcessRunner>(m.io);
  m.manifest_signature = m.ManifestSignature();
  if (!m.Load(true)) {
    return Status::Error("manifests " + m.opt.manifest_path +
                         ": no usable Dataset, Model, IncrementalLearningJob or "
                         "LifelongLearningJob (see the errors above)");
  }
  m.SchedulePoll();
  return Status::Ok();
}

void LocalGm::Stop() {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  if (m.poll) m.poll->cancel();
  if (m.runner) m.runner->TerminateAllAndWait(std::chrono::milliseconds(3000));
}

void LocalGm::SetLcServer(const std::string& url) { impl_->opt.lc_server = url; }

bool LocalGm::connected() const { return !impl_->stopped && impl_->store != nullptr; }

bool LocalGm::Send(std::string frame, std::function<void(bool)> done) {
  if (!connected()) return false;
  asio::post(impl_->io, [this, frame = std::move(frame), done = std::move(done)] {
    if (!impl_->stopped) impl_->Apply(frame);
    done(true);
  });
  return true;
}

}  // namespace sedna::app
