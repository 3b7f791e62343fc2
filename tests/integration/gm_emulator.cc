#include "gm_emulator.h"

#include <stdexcept>

#include "adapters/json/upstream_codec.h"

namespace sedna::testing {

namespace {

using core::gm::EdgeSend;
using core::gm::GmAction;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// obj[k0][k1]... as a string, "" when any step is missing or not of the right type.
std::string StrAt(const Json& obj, std::initializer_list<const char*> path) {
  const Json* j = &obj;
  for (const char* k : path) {
    if (!j->is_object() || !j->contains(k)) return "";
    j = &(*j)[k];
  }
  return j->is_string() ? j->get<std::string>() : "";
}

bool BoolAt(const Json& obj, std::initializer_list<const char*> path) {
  const Json* j = &obj;
  for (const char* k : path) {
    if (!j->is_object() || !j->contains(k)) return false;
    j = &(*j)[k];
  }
  return j->is_boolean() && j->get<bool>();
}

std::string Show(const core::JobCondition& c) {
  return std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
}

bool SameCondition(const core::JobCondition& a, const core::JobCondition& b) {
  return a.stage == b.stage && a.type == b.type && a.message == b.message &&
         a.data_json == b.data_json && a.last_transition_time == b.last_transition_time;
}

// v0.7.0 lifelonglearning/upstream.go updateStatusKnowledgeBase, for one LC message's content;
// null when it has no output model (the GM then leaves the knowledge base as it is). Go ranges
// over the metric maps in random order; this takes them sorted by key.
Json KnowledgeBaseOf(const Json& content) {
  const Json* models = nullptr;
  if (content.is_object() && content.contains("output") && content["output"].is_object() &&
      content["output"].contains("models") && content["output"]["models"].is_array() &&
      !content["output"]["models"].empty()) {
    models = &content["output"]["models"];
  }
  if (!models) return nullptr;
  Json list = Json::array();
  int64_t samples = 0;
  for (const Json& m : *models) {
    const int64_t n =
        m.is_object() && m.value("number_of_labeled_unseen_sample", Json()).is_number()
            ? m["number_of_labeled_unseen_sample"].get<int64_t>()
            : 0;
    if (m.is_object() && m.contains("current_metric") && m["current_metric"].is_object()) {
      for (const auto& [id, metrics] : m["current_metric"].items()) {
        double ap = 0;
        if (metrics.is_object() && !metrics.empty() && metrics.begin()->is_number()) {
          ap = metrics.begin()->get<double>();
        }
        list.push_back(
            Json{{"modelID", id}, {"averagePrecision", ap}, {"numberOfTrainSamples", n}});
      }
    }
    samples += n;
  }
  Json classes = (*models)[0].is_object() && (*models)[0].contains("classes") &&
                         (*models)[0]["classes"].is_array()
                     ? (*models)[0]["classes"]
                     : Json::array();
  Json ai_models{{"numberOfAIModels", list.size()}};
  if (!list.empty()) ai_models["listOfAIModels"] = list;
  Json ai_classes{{"numberOfAIClasses", classes.size()}};
  if (!classes.empty()) ai_classes["listOfAIClasses"] = classes;
  return Json{{"AIModels", ai_models},
              {"AIClasses", ai_classes},
              {"samples", {{"numberOfLabeledUnseenSample", samples}, {"numberOfUnseenSample", 0}}}};
}

}  // namespace

std::string Rfc3339(int s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2021-08-20T%02d:%02d:%02dZ", 8 + s / 3600 % 16, s / 60 % 60,
                s % 60);
  return buf;
}

// ---- GmEmulator ---------------------------------------------------------------------------

GmEmulator::GmEmulator(uint16_t port) : server_(WsTestServer::Start(port)) {
  if (!server_)
    throw std::runtime_error("GM emulator: cannot listen on port " + std::to_string(port));
}

namespace {
std::string EncodeObject(const std::string& op, const Json& obj, wire::MessageHeader* out) {
  const Json& meta = obj.at("metadata");
  wire::MessageHeader h{meta.value("namespace", "default"),
                        Lower(obj.at("kind").get<std::string>()), meta.at("name"), op};
  if (out) *out = h;
  return wire::EncodeFrame(h, obj.dump());
}
}  // namespace

void GmEmulator::Send(const std::string& op, const Json& obj) {
  if (!server_->Send(EncodeObject(op, obj, nullptr))) {
    throw std::runtime_error("GM emulator: no LC connected");
  }
}

bool GmEmulator::SendTo(const std::string& node, const std::string& op, const Json& obj) {
  wire::MessageHeader h;
  const std::string frame = EncodeObject(op, obj, &h);
  if (!node.empty() && server_->SendTo(node, frame)) return true;
  undelivered_.push_back({node, op, h.resource_kind, h.resource_name});
  return false;
}

std::vector<EdgeSend> GmEmulator::Sync(const GmJob& job, bool deleted) {
  std::vector<EdgeSend> sends = deleted ? job.DeleteSends() : job.Sends();
  for (const EdgeSend& s : sends) {
    const std::string op = s.op == EdgeSend::Op::kInsert ? "insert" : "delete";
    if (s.what == EdgeSend::What::kJob) {
      Json object = job.Object();
      if (SendTo(s.node, op, object) && !deleted) {
        sent_jobs_.push_back(SentJob{GmClock::now(), s.node, job.name(), std::move(object)});
      }
    } else if (const Json* model = job.ModelFor(s.what)) {
      SendTo(s.node, op, *model);
    }
  }
  return sends;
}

const Json* GmEmulator::SentBefore(const std::string& node, const std::string& last,
                                   std::chrono::milliseconds age) const {
  const auto until = GmClock::now() - age;
  for (auto it = sent_jobs_.rbegin(); it != sent_jobs_.rend(); ++it) {
    if (it->node != node || it->at > until) continue;
    const Json* conds =
        it->object.contains("status") ? &it->object["status"]["conditions"] : nullptr;
    if (!conds || !conds->is_array() || conds->empty()) continue;
    const Json& c = conds->back();
    if (c.value("stage", "") + "/" + c.value("type", "") == last) return &it->object;
  }
  return nullptr;
}

Json GmEmulator::Reindexed(Json object, size_t at, int shift, bool erase_output) {
  Json& conds = object["status"]["conditions"];
  if (at < conds.size()) {
    if (shift > 0) conds.insert(conds.begin() + static_cast<std::ptrdiff_t>(at), conds[at]);
    if (shift < 0) conds.erase(conds.begin() + static_cast<std::ptrdiff_t>(at));
  }
  if (erase_output) {
    for (auto& c : conds) {
      if (c.value("stage", "") == "Eval" && c.value("type", "") == "Completed") c.erase("data");
    }
  }
  return object;
}

std::optional<UpstreamFrame> GmEmulator::Next(const std::string& kind,
                                              std::chrono::milliseconds timeout) {
  auto deadline = GmClock::now() + timeout;
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->header.resource_kind == kind) {
        UpstreamFrame f = std::move(*it);
        pending_.erase(it);
        return f;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - GmClock::now());
    if (left.count() <= 0) return std::nullopt;
    auto frame = server_->WaitForNodeFrame(left);
    if (!frame) return std::nullopt;
    auto parsed = Json::parse(frame->text, nullptr, false);
    if (parsed.is_object() && !parsed.contains("header")) {
      ++bare_headers_;  // §P1.2 first frame
      continue;
    }
    auto f = wire::DecodeFrame(frame->text);
    if (!f.ok()) throw std::runtime_error("GM emulator: bad upstream frame: " + f.message());
    UpstreamFrame u{f->header,   f->content,  Json::parse(f->content),
                    frame->text, frame->node, frame->received};
    pending_.push_back(std::move(u));
  }
}

std::optional<UpstreamFrame> GmEmulator::NextFor(GmJob& job, const std::string& kind,
                                                 std::chrono::milliseconds timeout) {
  const auto deadline = GmClock::now() + timeout;
  for (;;) {
    const auto due = job.next_write();
    const auto until = due && *due < deadline ? *due : deadline;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - GmClock::now());
    if (auto f = Next(kind, std::max(left, std::chrono::milliseconds(0)))) return f;
    if (due && GmClock::now() >= *due) {
      job.AdvanceTo(*due);
      Sync(job);
      continue;
    }
    if (GmClock::now() >= deadline) return std::nullopt;
  }
}

bool GmEmulator::RunUntil(GmJob& job, const std::function<bool(const GmJob&)>& done,
                          RunOptions opts) {
  const auto deadline = GmClock::now() + opts.timeout;
  std::vector<UpstreamFrame> others;
  auto run_pods = [&](std::vector<GmAction> actions) {
    // A created pod starts Running at once; that may create no further pod, so this ends.
    for (int guard = 0; opts.run_created_pods && !actions.empty() && guard < 8; ++guard) {
      std::vector<GmAction> next;
      for (const GmAction& a : actions) {
        core::Stage stage = core::Stage::kDeploy;
        if (const auto* c = std::get_if<core::gm::CreatePod>(&a)) stage = c->stage;
        auto more = job.SetPod(stage, core::gm::PodPhase::kRunning);
        next.insert(next.end(), more.begin(), more.end());
      }
      actions = std::move(next);
    }
  };
  bool ok = done(job);
  while (!ok) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - GmClock::now());
    if (left.count() <= 0) break;
    const size_t before = job.state().conditions.size();
    // Wait for a frame, but no longer than the job's next [P:R1] write: that write's sync may
    // create pods (started here) and may be what done() waits for.
    const auto due = job.next_write();
    auto wait = left;
    if (due) {
      wait = std::min(
          wait,
          std::max(std::chrono::milliseconds(0),
                   std::chrono::duration_cast<std::chrono::milliseconds>(*due - GmClock::now())));
    }
    auto f = Next(job.kind_name(), wait);
    if (!f) {
      if (due && GmClock::now() >= *due) {
        run_pods(job.AdvanceTo(*due));
        Sync(job);
      }
      ok = done(job);
      continue;
    }
    if (f->header.resource_name != job.name()) {
      others.push_back(std::move(*f));
      continue;
    }
    run_pods(job.Report(*f));
    if (job.state().conditions.size() != before || !job.r1()) Sync(job);
    if (opts.on_frame) opts.on_frame(*f);
    ok = done(job);
  }
  for (auto& f : others) pending_.push_back(std::move(f));
  return ok;
}

// ---- GmJob --------------------------------------------------------------------------------

GmJob::GmJob(core::gm::JobKind kind, Json object, core::gm::Generation generation)
    : kind_(kind), object_(std::move(object)) {
  kind_name_ = StrAt(object_, {"kind"});
  name_ = StrAt(object_, {"metadata", "name"});
  std::string ns = StrAt(object_, {"metadata", "namespace"});
  if (ns.empty()) ns = "default";
  spec_.kind = kind;
  spec_.generation = generation;
  if (kind == core::gm::JobKind::kIncremental) {
    spec_.hot_update = BoolAt(object_, {"spec", "deploySpec", "model", "hotUpdateEnabled"});
    if (spec_.hot_update) spec_.hot_update_config = core::gm::HotUpdateConfigPath(ns, name_);
    spec_.has_initial_eval_model =
        !StrAt(object_, {"spec", "evalSpec", "initialEvalModel", "name"}).empty();
  }
  spec_.train_spec_node = StrAt(object_, {"spec", "trainSpec", "template", "spec", "nodeName"});
  if (generation == core::gm::Generation::kG2) {
    pods_.train_node = spec_.train_spec_node;
    pods_.eval_node = StrAt(object_, {"spec", "evalSpec", "template", "spec", "nodeName"});
    pods_.inference_node = StrAt(object_, {"spec", "deploySpec", "template", "spec", "nodeName"});
  }
  Settle();
}

std::vector<GmAction> GmJob::Report(const std::string& content) {
  return Report(content, GmClock::now());
}

std::vector<GmAction> GmJob::Report(const std::string& content, GmClock::time_point at) {
  Json c = Json::parse(content);
  auto data = wire::CondDataFromUpstreamContent(content);
  if (!data.ok()) throw std::runtime_error("GM emulator: " + data.message());
  std::vector<GmAction> actions;
  if (r1()) RunDue(at, actions);
  auto step = core::gm::ApplyUpstream(kind_, state_, c.value("phase", ""), c.value("status", ""),
                                      *data, Rfc3339(++clock_));
  if (!step.ok()) throw std::runtime_error("GM emulator rejected report: " + step.message());
  if (kind_ == core::gm::JobKind::kLifelong) {
    if (Json kb = KnowledgeBaseOf(c); !kb.is_null()) knowledge_base_ = std::move(kb);
  }
  state_ = step->state;
  if (!r1()) return Settle();
  StartSync(at, actions);
  return actions;
}

std::vector<GmAction> GmJob::SetPod(core::Stage stage, core::gm::PodPhase phase) {
  return SetPod(stage, phase, GmClock::now());
}

std::vector<GmAction> GmJob::SetPod(core::Stage stage, core::gm::PodPhase phase,
                                    GmClock::time_point at) {
  std::vector<GmAction> actions;
  if (r1()) RunDue(at, actions);
  switch (stage) {
    case core::Stage::kTrain:
      pods_.train = phase;
      break;
    case core::Stage::kEval:
      pods_.eval = phase;
      break;
    case core::Stage::kDeploy:
      pods_.inference = phase;
      break;
  }
  if (!r1()) return Settle();
  StartSync(at, actions);
  return actions;
}

std::vector<GmAction> GmJob::Settle() {
  if (r1()) {
    std::vector<GmAction> actions;
    const auto now = GmClock::now();
    RunDue(now, actions);
    StartSync(now, actions);
    return actions;
  }
  auto settled = core::gm::Settle(spec_, state_, pods_, Rfc3339(++clock_));
  state_ = settled.step.state;
  pods_ = settled.pods;
  return settled.step.actions;
}

void GmJob::Place(core::Stage stage, const std::string& node) {
  switch (stage) {
    case core::Stage::kTrain:
      pods_.train_node = node;
      break;
    case core::Stage::kEval:
      pods_.eval_node = node;
      break;
    case core::Stage::kDeploy:
      pods_.inference_node = node;
      break;
  }
}

void GmJob::SetModel(EdgeSend::What what, Json model) { models_[what] = std::move(model); }

const Json* GmJob::ModelFor(EdgeSend::What what) const {
  auto it = models_.find(what);
  return it == models_.end() ? nullptr : &it->second;
}

std::vector<EdgeSend> GmJob::Sends() const { return core::gm::SyncSends(spec_, state_, ds_node_); }

std::vector<EdgeSend> GmJob::DeleteSends() const {
  return core::gm::DeleteSends(spec_, state_, ds_node_);
}

void GmJob::EnableR1(std::chrono::milliseconds lag) {
  if (lag.count() <= 0 && in_flight_) {
    std::vector<GmAction> ignored;
    Land(ignored);
  }
  lag_ = lag;
}

std::vector<GmAction> GmJob::AdvanceTo(GmClock::time_point t) {
  std::vector<GmAction> actions;
  RunDue(t, actions);
  return actions;
}

std::optional<GmClock::time_point> GmJob::next_write() const {
  if (!in_flight_) return std::nullopt;
  return in_flight_->lands;
}

void GmJob::RunDue(GmClock::time_point t, std::vector<GmAction>& actions) {
  while (in_flight_ && in_flight_->lands <= t) Land(actions);
}

// One sync of the GM controller at `at`, from the stored status as it is now.
void GmJob::StartSync(GmClock::time_point at, std::vector<GmAction>& actions) {
  // An annotation patch is an update event of its own: the sync that follows it sees the patch.
  for (int guard = 0; !in_flight_ && guard < core::gm::kMaxSettlePasses; ++guard) {
    core::gm::GmStep step = core::gm::Transit(spec_, state_, pods_, Rfc3339(++clock_));
    if (!step.changed) return;
    pods_ = core::gm::PodsAfter(pods_, step.actions);
    actions.insert(actions.end(), step.actions.begin(), step.actions.end());
    state_.annotations = step.state.annotations;  // merge-patched at once
    const bool status_changed = step.state.started != state_.started ||
                                step.state.conditions.size() != state_.conditions.size();
    if (status_changed) in_flight_ = PendingWrite{std::move(step.state), at + lag_};
  }
}

// The in-flight write lands: `newJob.Status = job.Status` over what was appended meanwhile;
// its update event starts the next sync at once.
void GmJob::Land(std::vector<GmAction>& actions) {
  PendingWrite w = std::move(*in_flight_);
  in_flight_.reset();
  const auto& now = state_.conditions;
  const auto& written = w.written.conditions;
  for (size_t i = 0; i < now.size(); ++i) {
    if (i >= written.size() || !SameCondition(now[i], written[i])) erased_.push_back(now[i]);
  }
  state_.conditions = std::move(w.written.conditions);
  state_.started = w.written.started;
  StartSync(w.lands, actions);
}

const std::string& GmJob::name() const { return name_; }
const std::string& GmJob::kind_name() const { return kind_name_; }

Json GmJob::Object() const {
  Json o = object_;
  if (!state_.annotations.empty()) {
    Json& ann = o["metadata"]["annotations"];
    if (!ann.is_object()) ann = Json::object();
    for (const auto& [k, v] : state_.annotations) ann[k] = v;
  }
  Json conds = Json::array();
  for (const auto& c : state_.conditions) {
    Json j{{"type", core::ConditionTypeName(c.type)},
           {"status", "True"},
           {"stage", core::StageName(c.stage)},
           {"lastHeartbeatTime", c.last_transition_time},
           {"lastTransitionTime", c.last_transition_time}};
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    if (!c.data_json.empty()) j["data"] = c.data_json;
    conds.push_back(j);
  }
  o["status"] = Json{{"conditions", conds}, {"startTime", Rfc3339(0)}};
  if (kind_ == core::gm::JobKind::kLifelong && spec_.generation == core::gm::Generation::kG2) {
    o["status"]["knowledgeBase"] =
        knowledge_base_.is_null()
            ? Json{{"AIModels", {{"numberOfAIModels", 0}}},
                   {"AIClasses", {{"numberOfAIClasses", 0}}},
                   {"samples", {{"numberOfLabeledUnseenSample", 0}, {"numberOfUnseenSample", 0}}}}
            : knowledge_base_;
  }
  return o;
}

std::map<std::string, std::string> GmJob::TrainPodEnv() const {
  if (kind_ != core::gm::JobKind::kLifelong || spec_.generation != core::gm::Generation::kG2) {
    return {};
  }
  bool completed = false;
  std::string index;
  for (const auto& c : state_.conditions) {
    if (c.stage != core::Stage::kTrain || c.type != core::ConditionType::kCompleted) continue;
    completed = true;
    Json data = Json::parse(c.data_json.empty() ? "{}" : c.data_json, nullptr, false);
    if (!data.is_object() || !data.contains("output")) continue;
    const Json& out = data["output"];
    if (out.is_object() && out.contains("models") && out["models"].is_array() &&
        !out["models"].empty() && out["models"][0].is_object()) {
      index = out["models"][0].value("url", "");
    }
  }
  if (!completed) return {{"HAS_COMPLETED_INITIAL_TRAINING", "false"}};
  return {{"HAS_COMPLETED_INITIAL_TRAINING", "true"}, {"CLOUD_KB_INDEX", index}};
}

std::string GmJob::LastCondition() const {
  if (state_.conditions.empty()) return "";
  return Show(state_.conditions.back());
}

std::vector<std::string> GmJob::Conditions() const {
  std::vector<std::string> out;
  for (const auto& c : state_.conditions) out.push_back(Show(c));
  return out;
}

core::gm::Downstream GmJob::Downstream() const { return core::gm::DownstreamFor(kind_, state_); }

}  // namespace sedna::testing
