// LocalGm and its jobs' conditions: kept by the GM's condition machine, stored, sent to the LC.
#include "app/standalone/local_gm.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include "adapters/log/log.h"

#include <cctype>
#include <chrono>
#include <ctime>
#include <exception>
#include <variant>

#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/controller.h"
#include "app/standalone/local_gm_impl.h"
#include "core/ascii.h"
#include "core/gm_downstream.h"

namespace sedna::app {

namespace asio = boost::asio;
using NJ = nlohmann::json;
using core::Stage;
using core::gm::PodPhase;
using local_gm_detail::Find;
using local_gm_detail::KindName;
using local_gm_detail::kScope;

namespace local_gm_detail {

NJ ZeroKnowledgeBase() {
  return NJ::parse(R"({"AIModels":{"numberOfAIModels":0},"AIClasses":{"numberOfAIClasses":0},)"
                   R"("samples":{"numberOfLabeledUnseenSample":0,"numberOfUnseenSample":0}})");
}

std::optional<NJ> KnowledgeBaseOf(const std::string& upstream_content) {
  // Ordered: "the first value" of a metric object is the first the worker wrote.
  using OJ = nlohmann::ordered_json;
  OJ c = OJ::parse(upstream_content, nullptr, false);
  if (!c.is_object() || !c.contains("output") || !c["output"].is_object()) return std::nullopt;
  const OJ& out = c["output"];
  if (!out.contains("models") || !out["models"].is_array() || out["models"].empty()) {
    return std::nullopt;
  }
  const OJ& models = out["models"];
  NJ kb = ZeroKnowledgeBase();
  if (models[0].is_object() && models[0].contains("classes") && models[0]["classes"].is_array()) {
    NJ classes = NJ::array();
    for (const auto& cl : models[0]["classes"]) {
      if (cl.is_string()) classes.push_back(cl.get<std::string>());
    }
    kb["AIClasses"]["numberOfAIClasses"] = classes.size();
    if (!classes.empty()) kb["AIClasses"]["listOfAIClasses"] = classes;
  }
  NJ list = NJ::array();
  int64_t labeled = 0;
  for (const auto& m : models) {
    if (!m.is_object() || !m.contains("current_metric") || !m["current_metric"].is_object()) {
      continue;
    }
    int64_t n = 0;
    if (m.contains("number_of_labeled_unseen_sample") &&
        m["number_of_labeled_unseen_sample"].is_number()) {
      n = m["number_of_labeled_unseen_sample"].get<int64_t>();
    }
    for (const auto& [key, v] : m["current_metric"].items()) {
      const OJ* first = &v;
      if ((v.is_array() || v.is_object()) && !v.empty()) first = &*v.begin();
      NJ model{{"modelID", key},
               {"averagePrecision", first->is_number() ? first->get<double>() : 0.0},
               {"numberOfTrainSamples", n}};
      list.push_back(std::move(model));
      labeled += n;
    }
  }
  kb["AIModels"]["numberOfAIModels"] = list.size();
  if (!list.empty()) kb["AIModels"]["listOfAIModels"] = std::move(list);
  kb["samples"]["numberOfLabeledUnseenSample"] = labeled;
  return kb;
}

std::string KindName(const std::string& kind_lower) {
  if (kind_lower == core::kKindDataset) return "Dataset";
  if (kind_lower == core::kKindModel) return "Model";
  if (kind_lower == core::kKindIlJob) return "IncrementalLearningJob";
  if (kind_lower == core::kKindLlJob) return "LifelongLearningJob";
  return kind_lower;
}

}  // namespace local_gm_detail

namespace {

std::string NowRfc3339(const core::Clock& clock) {
  std::time_t t = std::chrono::system_clock::to_time_t(clock.Now());
  std::tm ut{};
  gmtime_r(&t, &ut);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &ut);
  return buf;
}

}  // namespace

// ------------------------------------------------------------------ frames to the controller

void LocalGm::Impl::Deliver(const std::string& op, const std::string& kind_lower,
                            const std::string& ns, const std::string& name,
                            const std::string& content) {
  std::string frame = json::EncodeFrame({ns, kind_lower, name, op}, content);
  asio::post(io, [this, frame] {
    if (!stopped) to_lc(frame);
  });
}

void LocalGm::Impl::DeliverObject(const std::string& kind_lower, const std::string& ns,
                                  const std::string& name, const std::string& text) {
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

void LocalGm::Impl::DeliverModel(const GmJob& j, const std::string& name) {
  if (name.empty()) return;
  auto it = plain.find(core::ResourceKey(j.ns, core::kKindModel, name));
  if (it != plain.end()) DeliverObject(core::kKindModel, j.ns, name, it->second);
}

NJ LocalGm::Impl::JobObject(const GmJob& j) {
  NJ o = j.object;
  if (generation == core::gm::Generation::kG1 && o.contains("spec") && o["spec"].is_object()) {
    // The 2021 GM decodes the job into its typed API, which has no hot-update fields.
    NJ& spec = o["spec"];
    if (spec.contains("deploySpec") && spec["deploySpec"].is_object() &&
        spec["deploySpec"].contains("model") && spec["deploySpec"]["model"].is_object()) {
      spec["deploySpec"]["model"].erase("hotUpdateEnabled");
      spec["deploySpec"]["model"].erase("pollPeriodSeconds");
    }
  }
  if (!j.state.annotations.empty()) {
    NJ& meta = o["metadata"];
    if (!meta.contains("annotations") || !meta["annotations"].is_object()) {
      meta["annotations"] = NJ::object();
    }
    for (const auto& [k, v] : j.state.annotations) meta["annotations"][k] = v;
  }
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
  if (generation == core::gm::Generation::kG2 && j.gm_kind == core::gm::JobKind::kLifelong) {
    // A v0.6+ GM's LL status always has knowledgeBase (docs/protocol.md §H1.7, §H4.4), from
    // the latest message with output models (KnowledgeBaseOf); zeros until one came.
    o["status"]["knowledgeBase"] =
        j.knowledge_base.is_object() ? j.knowledge_base : local_gm_detail::ZeroKnowledgeBase();
  }
  return o;
}

void LocalGm::Impl::SendJob(GmJob& j) {
  if (generation == core::gm::Generation::kG2) return Sync(j);
  DeliverObject(core::AsciiLowered(j.kind), j.ns, j.name, JobObject(j).dump());
}

void LocalGm::Impl::Sync(GmJob& j) {
  if (generation == core::gm::Generation::kG2) {
    using What = core::gm::EdgeSend::What;
    const std::string node = DatasetNode(j);
    for (const auto& send : core::gm::SyncSends(j.gm_spec, j.state, node)) {
      if (send.node != node) {
        spdlog::debug("standalone: {}: GM send {} not delivered (this LC is node {})", j.key,
                      core::gm::ToString(send), node);
        continue;
      }
      if (send.op == core::gm::EdgeSend::Op::kDelete) {
        Deliver("delete", core::AsciiLowered(j.kind), j.ns, j.name, JobObject(j).dump());
      } else if (send.what == What::kJob) {
        DeliverObject(core::AsciiLowered(j.kind), j.ns, j.name, JobObject(j).dump());
      } else {
        const NJ* ref = send.what == What::kInitialModel ? Find(j.object, {"spec", "initialModel"})
                        : send.what == What::kInitialEvalModel
                            ? Find(j.object, {"spec", "evalSpec", "initialEvalModel"})
                            : Find(j.object, {"spec", "deploySpec", "model"});
        const NJ* name = ref ? Find(*ref, {"name"}) : nullptr;
        DeliverModel(j, name && name->is_string() ? name->get<std::string>() : "");
      }
    }
    return;
  }
  auto d = core::gm::DownstreamFor(j.gm_kind, j.state);
  if (!d.send_job) return;
  DeliverObject(core::AsciiLowered(j.kind), j.ns, j.name, JobObject(j).dump());
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

void LocalGm::Impl::Persist(const GmJob& j) {
  NJ conds = NJ::array();
  for (const auto& c : j.state.conditions) {
    conds.push_back(NJ{{"type", core::ConditionTypeName(c.type)},
                       {"stage", core::StageName(c.stage)},
                       {"time", c.last_transition_time},
                       {"reason", c.reason},
                       {"message", c.message},
                       {"data", c.data_json}});
  }
  NJ rec{{"conditions", conds},
         {"started", j.state.started},
         {"annotations", NJ(j.state.annotations)}};
  if (j.knowledge_base.is_object()) rec["knowledge_base"] = j.knowledge_base;
  Status s =
      store->Transact([&](store::Store::Tx& tx) { return tx.PutState(kScope, j.key, rec.dump()); });
  if (!s.ok()) spdlog::error("standalone: persisting {}: {}", j.key, s.message());
}

bool LocalGm::Impl::ServedBefore(const GmJob& j) {
  if (!j.state.started) return false;
  if (j.gm_kind == core::gm::JobKind::kIncremental) return true;
  for (const auto& c : j.state.conditions) {
    if (c.stage == Stage::kDeploy) return true;
  }
  return false;
}

bool LocalGm::Impl::Restore(GmJob& j) {
  auto v = store->GetState(kScope, j.key);
  if (!v.ok() || !v->has_value()) return false;
  try {
    NJ rec = NJ::parse(**v);
    j.state.started = rec.value("started", false);
    if (rec.contains("knowledge_base") && rec["knowledge_base"].is_object()) {
      j.knowledge_base = rec["knowledge_base"];
    }
    if (rec.contains("annotations") && rec["annotations"].is_object()) {
      for (const auto& [k, v] : rec["annotations"].items()) {
        if (v.is_string()) j.state.annotations[k] = v.get<std::string>();
      }
    }
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
    // Workers of the previous run are gone: a stage that was running has failed (§P4.2).
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

void LocalGm::Impl::SetPod(GmJob& j, Stage stage, PodPhase phase) {
  // G2 reads the node a stage's pod runs on (the sedna.io/<Stage> annotations): every worker runs
  // here. G1 keeps no node, as before.
  const std::string node = generation == core::gm::Generation::kG2 ? DatasetNode(j) : "";
  switch (stage) {
    case Stage::kTrain:
      j.pods.train = phase;
      j.pods.train_node = node;
      break;
    case Stage::kEval:
      j.pods.eval = phase;
      j.pods.eval_node = node;
      break;
    case Stage::kDeploy:
      j.pods.inference = phase;
      j.pods.inference_node = node;
      break;
  }
}

void LocalGm::Impl::Settle(GmJob& j) {
  for (int guard = 0; guard < 8; ++guard) {
    auto settled = core::gm::Settle(j.gm_spec, j.state, j.pods, NowRfc3339(clock()));
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

// ------------------------------------------------------------------ upstream (the outbox)

void LocalGm::Impl::Apply(const std::string& frame) {
  auto f = json::DecodeFrame(frame);
  if (!f.ok()) {
    spdlog::warn("standalone: upstream frame dropped: {}", f.message());
    return;
  }
  const std::string kind = core::AsciiLowered(f->header.resource_kind);
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
  auto step =
      core::gm::ApplyUpstream(j.gm_kind, j.state, phase, status, *data, NowRfc3339(clock()));
  if (!step.ok()) {
    spdlog::warn("standalone: {}: status dropped like the GM would: {}", key, step.message());
    return;
  }
  const std::string lp = core::AsciiLowered(phase), ls = core::AsciiLowered(status);
  j.state = step->state;
  if ((ls == "completed" || ls == "failed") && (lp == "train" || lp == "eval")) {
    ReportArrived(j, lp == "train" ? Stage::kTrain : Stage::kEval);
  }
  if (generation == core::gm::Generation::kG2 && j.gm_kind == core::gm::JobKind::kLifelong) {
    if (auto kb = local_gm_detail::KnowledgeBaseOf(f->content)) j.knowledge_base = std::move(*kb);
  }
  Persist(j);
  Sync(j);
  Settle(j);
}

LocalGm::LocalGm(asio::io_context& io, Controller& controller, LocalGmOptions options)
    : LocalGm(
          io, [&controller](const std::string& frame) { controller.OnGmFrame(frame); },
          std::move(options)) {}

LocalGm::LocalGm(asio::io_context& io, std::function<void(const std::string&)> to_lc,
                 LocalGmOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(to_lc), std::move(options))) {}

LocalGm::~LocalGm() { Stop(); }

Status LocalGm::Start() {
  Impl& m = *impl_;
  store::StoreOptions so;
  so.clock = &m.clock();
  auto st = store::Store::Open(m.opt.db_path, so);
  if (!st.ok()) return st.status();
  m.store = std::move(*st);
  m.runner = std::make_unique<process::ProcessRunner>(m.io);
  spdlog::info(
      "standalone: the local GM plays the {} GM (--gm-protocol {}){}",
      m.generation == core::gm::Generation::kG2 ? "v0.5-v0.7 (G2)" : "2021 (G1)", m.opt.gm_protocol,
      m.generation == core::gm::Generation::kG2 ? "; model hot update in " + m.opt.hot_update_dir
                                                : "");
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

std::vector<WorkerView> LocalGm::Workers() const { return impl_->board.Views(); }

Status LocalGm::MayReport(const core::WorkerReport& report) const {
  Status s = impl_->started.MayReport(report, StartedWorkers::Clock::now());
  if (!s.ok() || core::AsciiLowered(report.kind) != "deploy") return s;
  auto it = impl_->jobs.find(core::ResourceKey(report.ns, report.owner_kind, report.owner_name));
  if (it == impl_->jobs.end()) return s;
  const auto& conds = it->second->state.conditions;
  if (!conds.empty() && conds.back().stage == Stage::kDeploy &&
      conds.back().type == core::ConditionType::kRunning) {
    return s;
  }
  const std::string at = conds.empty() ? std::string("no condition")
                                       : std::string(core::StageName(conds.back().stage)) + "/" +
                                             core::ConditionTypeName(conds.back().type);
  return Status::Error("kind: \"deploy\": " + it->second->key + " is at " + at +
                       ", not Deploy/Running: a model reload is reported only while the GM "
                       "waits for one");
}

bool LocalGm::connected() const { return !impl_->stopped && impl_->store != nullptr; }

bool LocalGm::Send(std::span<const std::string_view> frames, std::function<void(size_t)> done) {
  if (!connected() || frames.empty()) return false;
  asio::post(impl_->io, [this, batch = std::vector<std::string>(frames.begin(), frames.end()),
                         done = std::move(done)] {
    for (const std::string& frame : batch) {
      if (!impl_->stopped) impl_->Apply(frame);
    }
    done(batch.size());
  });
  return true;
}

}  // namespace sedna::app
