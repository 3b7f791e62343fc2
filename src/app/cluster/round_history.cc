// The round history (round_history.h).
#include "app/cluster/round_history.h"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "adapters/json/envelope.h"

namespace sedna::app {

using nlohmann::json;

namespace {

constexpr size_t kMaxName = 64;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Cut(std::string s, size_t n = RoundHistory::kMaxText) {
  if (s.size() > n) s.resize(n);
  return s;
}

void Flatten(const json& v, const std::string& name, int depth,
             std::map<std::string, double>& out) {
  if (out.size() >= RoundHistory::kMaxMetrics || name.size() > kMaxName) return;
  if (v.is_number()) {
    if (std::isfinite(v.get<double>())) out[name] = v.get<double>();
  } else if (v.is_array()) {
    // As the triggers compare a bare list (core::ResolveMetric): its mean.
    double sum = 0;
    size_t n = 0;
    for (const json& x : v) {
      if (x.is_number()) sum += x.get<double>(), ++n;
    }
    if (n > 0) out[name] = sum / static_cast<double>(n);
  } else if (v.is_object() && depth < 2) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      Flatten(it.value(), name.empty() ? it.key() : name + "/" + it.key(), depth + 1, out);
    }
  }
}

std::map<std::string, double> MetricsOf(const json& models, size_t i) {
  std::map<std::string, double> out;
  if (!models.is_array() || i >= models.size() || !models[i].is_object()) return out;
  auto m = models[i].find("metrics");
  if (m != models[i].end() && m->is_object()) Flatten(*m, "", 0, out);
  return out;
}

std::string UrlOf(const json& models, size_t i) {
  if (!models.is_array() || i >= models.size() || !models[i].is_object()) return "";
  auto u = models[i].find("url");
  return u != models[i].end() && u->is_string() ? Cut(u->get<std::string>()) : "";
}

// A forwarded worker report (json::EncodeForwardedWorkerMessage): its phase, status and models.
bool RecordWorkerReport(JobHistory& h, const std::string& frame, int64_t now_ms) {
  if (h.rounds.empty()) return false;
  auto f = sedna::json::DecodeFrame(frame);
  if (!f.ok()) return false;
  json c = json::parse(f->content, nullptr, false);
  if (!c.is_object() || !c.contains("output") || !c["output"].is_object()) return false;
  const std::string phase = Lower(c.value("phase", ""));
  const std::string status = Lower(c.value("status", ""));
  if (status != "completed" && status != "failed") return false;
  const json models = c["output"].value("models", json());
  RoundRecord& r = h.rounds.back();
  if (phase == "train") {
    r.train_status = status;
    r.train_done_ms = now_ms;
    if (status == "completed") {
      r.trained_model = UrlOf(models, 0);
      r.train_metrics = MetricsOf(models, 0);
    }
    return true;
  }
  if (phase == "eval") {
    r.eval_status = status;
    r.eval_done_ms = now_ms;
    if (status == "completed") {
      r.new_metrics = MetricsOf(models, 0);
      r.deployed_metrics = MetricsOf(models, 1);
    }
    return true;
  }
  return false;
}

// "train trigger fired for round 3: fired: num_of_samples = 600 > 500" (IL) or "... for version
// 3: ..." (LL): the round and the reason.
bool ParseFired(const std::string& text, int64_t* round, std::string* reason) {
  static const std::string kPrefix = "train trigger fired for ";
  if (text.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  size_t p = text.find(' ', kPrefix.size());
  if (p == std::string::npos) return false;
  size_t end = p + 1;
  int64_t n = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) && end - p < 18) {
    n = n * 10 + (text[end] - '0');
    ++end;
  }
  if (end == p + 1) return false;
  *round = n;
  *reason = end + 2 <= text.size() ? text.substr(end + 2) : "";
  return true;
}

RoundRecord* RoundOf(JobHistory& h, int64_t round) {
  for (auto it = h.rounds.rbegin(); it != h.rounds.rend(); ++it) {
    if (it->round == round) return &*it;
  }
  return h.rounds.empty() ? nullptr : &h.rounds.back();
}

// IL: a decision the state counts that the history has not recorded yet.
bool RecordIlDecision(JobHistory& h, const StepFacts& f, int64_t now_ms) {
  const core::il::State& s = *f.il;
  if (s.decisions < h.decisions_seen) h.decisions_seen = s.decisions;  // a new job of that name
  if (s.decisions == h.decisions_seen) return false;
  h.decisions_seen = s.decisions;
  RoundRecord* r = RoundOf(h, s.decided_round);
  if (!r) return true;
  static const std::pair<const char*, const char*> kKinds[] = {
      {"deploying trained model: ", "deploy"},
      {"kept deployed model: ", "kept"},
      {"not deployed: ", "not deployed"}};
  r->decision = "decided";
  r->decision_reason = Cut(s.last_decision);
  for (const auto& [prefix, kind] : kKinds) {
    const std::string p = prefix;
    if (s.last_decision.compare(0, p.size(), p) == 0) {
      r->decision = kind;
      r->decision_reason = Cut(s.last_decision.substr(p.size()));
    }
  }
  r->deploy_trigger = Cut(f.deploy_trigger);
  r->decided_ms = now_ms;
  return true;
}

bool RecordAction(JobHistory& h, const StepFacts& f, const core::il::Action& a, int64_t now_ms) {
  if (auto* log = std::get_if<core::il::Log>(&a)) {
    int64_t round = 0;
    std::string reason;
    if (!ParseFired(log->text, &round, &reason)) return false;
    if (h.rounds.empty() || h.rounds.back().round != round) {
      h.rounds.push_back({});
      h.rounds.back().round = round;
    }
    RoundRecord& r = h.rounds.back();
    r.attempts++;
    r.fired = Cut(reason);
    r.fired_ms = now_ms;
    r.train_trigger = Cut(f.train_trigger);
    r.samples = f.il ? f.il->work_range.count : f.ll ? f.ll->train_range.count : 0;
    r.train_ready_ms = r.train_done_ms = r.eval_ready_ms = r.eval_done_ms = 0;
    r.train_status.clear();
    return true;
  }
  if (auto* c = std::get_if<core::il::CopyModel>(&a)) {
    // The deploy target is the first copy's (an initialEvalModel copy follows it).
    if (h.deploy_target == c->dst_url || (f.il && f.il->work_copies_done > 0)) return false;
    h.deploy_target = Cut(c->dst_url);
    return true;
  }
  auto* sr = std::get_if<core::il::SendReport>(&a);
  if (!sr || h.rounds.empty()) return false;
  const std::string phase = Lower(sr->report.phase), status = Lower(sr->report.status);
  RoundRecord& r = h.rounds.back();
  // A report sent again (the GM's answer was lost) is not a new event: the first one counts.
  if (phase == "train" && status == "ready") {
    if (r.train_ready_ms != 0) return false;
    r.train_ready_ms = now_ms;
    r.data_url = Cut(sr->report.data_url);
    r.output_dir = Cut(sr->report.output_dir);
  } else if (phase == "train" && status == "failed") {
    r.train_status = "failed";
    r.train_done_ms = now_ms;
  } else if (phase == "eval" && status == "ready") {
    if (r.eval_ready_ms != 0) return false;
    r.eval_ready_ms = now_ms;
  } else if (phase == "eval" && status == "failed") {
    r.eval_status = "failed";
    r.eval_done_ms = now_ms;
  } else if (phase == "deploy" && status == "ready") {
    // IL: the deploy copy finished (or a hot update was decided); LL: the version is deployed.
    if (r.decision == "deployed") return false;
    r.decision = "deployed";
    if (r.decided_ms == 0) r.decided_ms = now_ms;
    if (r.deploy_trigger.empty()) r.deploy_trigger = Cut(f.deploy_trigger);
    r.deployed_ms = now_ms;
    h.deploys++;
  } else if (phase == "deploy" && status == "failed") {
    if (r.decision == "deploy failed") return false;
    r.decision = "deploy failed";
    if (r.decided_ms == 0) r.decided_ms = now_ms;
    r.deployed_ms = now_ms;
  } else {
    return false;
  }
  return true;
}

json MetricsJson(const std::map<std::string, double>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) {
    if (std::isfinite(v)) o[k] = v;
  }
  return o;
}

std::map<std::string, double> MetricsFrom(const json& o) {
  std::map<std::string, double> m;
  if (!o.is_object()) return m;
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (it->is_number() && m.size() < RoundHistory::kMaxMetrics) m[it.key()] = it->get<double>();
  }
  return m;
}

}  // namespace

bool RecordStep(JobHistory& h, const StepFacts& f, const std::vector<std::string>& frames,
                const std::vector<core::il::Action>& actions, int64_t now_ms, size_t max_rounds) {
  bool changed = false;
  auto set = [&](std::string& field, const std::string& v) {
    if (field != v) field = Cut(v), changed = true;
  };
  set(h.key, f.key);
  set(h.kind, f.kind);
  set(h.ns, f.ns);
  set(h.name, f.name);
  set(h.train_trigger, f.train_trigger);
  set(h.deploy_trigger, f.deploy_trigger);
  for (const std::string& fr : frames) changed |= RecordWorkerReport(h, fr, now_ms);
  if (f.il) changed |= RecordIlDecision(h, f, now_ms);
  for (const auto& a : actions) changed |= RecordAction(h, f, a, now_ms);
  while (h.rounds.size() > std::max<size_t>(max_rounds, 1)) {
    h.rounds.pop_front();
    changed = true;
  }
  return changed;
}

json JobHistoryJson(const JobHistory& h) {
  json rounds = json::array();
  for (const RoundRecord& r : h.rounds) {
    rounds.push_back(json{{"round", r.round},
                          {"samples", r.samples},
                          {"trainTrigger", r.train_trigger},
                          {"fired", r.fired},
                          {"firedMs", r.fired_ms},
                          {"attempts", r.attempts},
                          {"dataURL", r.data_url},
                          {"outputDir", r.output_dir},
                          {"trainReadyMs", r.train_ready_ms},
                          {"trainDoneMs", r.train_done_ms},
                          {"trainStatus", r.train_status},
                          {"trainedModel", r.trained_model},
                          {"trainMetrics", MetricsJson(r.train_metrics)},
                          {"evalReadyMs", r.eval_ready_ms},
                          {"evalDoneMs", r.eval_done_ms},
                          {"evalStatus", r.eval_status},
                          {"newMetrics", MetricsJson(r.new_metrics)},
                          {"deployedMetrics", MetricsJson(r.deployed_metrics)},
                          {"decision", r.decision},
                          {"decisionReason", r.decision_reason},
                          {"deployTrigger", r.deploy_trigger},
                          {"decidedMs", r.decided_ms},
                          {"deployedMs", r.deployed_ms}});
  }
  return json{{"key", h.key},
              {"kind", h.kind},
              {"namespace", h.ns},
              {"name", h.name},
              {"trainTrigger", h.train_trigger},
              {"deployTrigger", h.deploy_trigger},
              {"deployTarget", h.deploy_target},
              {"deploys", h.deploys},
              {"decisionsSeen", h.decisions_seen},
              {"updatedMs", h.updated_ms},
              {"rounds", rounds}};
}

std::string EncodeJobHistory(const JobHistory& h) {
  return JobHistoryJson(h).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<JobHistory> DecodeJobHistory(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Result<JobHistory>::Error("history record: not a JSON object");
  try {
    JobHistory h;
    h.key = j.value("key", "");
    h.kind = j.value("kind", "");
    h.ns = j.value("namespace", "");
    h.name = j.value("name", "");
    h.train_trigger = j.value("trainTrigger", "");
    h.deploy_trigger = j.value("deployTrigger", "");
    h.deploy_target = j.value("deployTarget", "");
    h.deploys = j.value("deploys", int64_t{0});
    h.decisions_seen = j.value("decisionsSeen", int64_t{0});
    h.updated_ms = j.value("updatedMs", int64_t{0});
    for (const json& e : j.value("rounds", json::array())) {
      RoundRecord r;
      r.round = e.value("round", int64_t{0});
      r.samples = e.value("samples", int64_t{0});
      r.train_trigger = e.value("trainTrigger", "");
      r.fired = e.value("fired", "");
      r.fired_ms = e.value("firedMs", int64_t{0});
      r.attempts = e.value("attempts", int64_t{0});
      r.data_url = e.value("dataURL", "");
      r.output_dir = e.value("outputDir", "");
      r.train_ready_ms = e.value("trainReadyMs", int64_t{0});
      r.train_done_ms = e.value("trainDoneMs", int64_t{0});
      r.train_status = e.value("trainStatus", "");
      r.trained_model = e.value("trainedModel", "");
      r.train_metrics = MetricsFrom(e.value("trainMetrics", json::object()));
      r.eval_ready_ms = e.value("evalReadyMs", int64_t{0});
      r.eval_done_ms = e.value("evalDoneMs", int64_t{0});
      r.eval_status = e.value("evalStatus", "");
      r.new_metrics = MetricsFrom(e.value("newMetrics", json::object()));
      r.deployed_metrics = MetricsFrom(e.value("deployedMetrics", json::object()));
      r.decision = e.value("decision", "");
      r.decision_reason = e.value("decisionReason", "");
      r.deploy_trigger = e.value("deployTrigger", "");
      r.decided_ms = e.value("decidedMs", int64_t{0});
      r.deployed_ms = e.value("deployedMs", int64_t{0});
      h.rounds.push_back(std::move(r));
    }
    return h;
  } catch (const std::exception& e) {
    return Result<JobHistory>::Error(std::string("history record: ") + e.what());
  }
}

// ---------------------------------------------------------------- RoundHistory

RoundHistory::RoundHistory(Context& ctx) : ctx_(ctx) {}

RoundHistory::~RoundHistory() {
  *alive_ = false;
  Flush();
}

void RoundHistory::Load() const {
  if (loaded_ || !ctx_.store) return;
  loaded_ = true;
  auto recs = ctx_.store->LoadStates(kScopeHistory);
  if (!recs.ok()) {
    spdlog::warn("round history: {}; starting without it", recs.message());
    return;
  }
  for (const auto& [key, value] : *recs) {
    auto h = DecodeJobHistory(value);
    if (!h.ok()) {
      spdlog::warn("round history of {}: {}; dropped", key, h.message());
      continue;
    }
    h->key = key;
    jobs_[key] = std::move(*h);
  }
}

const std::map<std::string, JobHistory>& RoundHistory::All() const {
  Load();
  return jobs_;
}

const JobHistory* RoundHistory::Find(const std::string& key) const {
  Load();
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : &it->second;
}

void RoundHistory::OnStep(const StepFacts& f, const std::vector<std::string>& frames,
                          const std::vector<core::il::Action>& actions, int64_t now_ms) {
  Load();
  const size_t max_rounds = static_cast<size_t>(std::max<int64_t>(ctx_.cfg.history_rounds, 1));
  auto it = jobs_.find(f.key);
  if (it == jobs_.end()) {
    JobHistory h;
    if (f.il) h.decisions_seen = f.il->decisions;  // decided before the history knew the job
    if (!RecordStep(h, f, frames, actions, now_ms, max_rounds)) return;
    if (jobs_.size() >= kMaxJobs) {
      auto oldest = std::min_element(jobs_.begin(), jobs_.end(), [](const auto& a, const auto& b) {
        return a.second.updated_ms < b.second.updated_ms;
      });
      dirty_[oldest->first] = false;
      jobs_.erase(oldest);
    }
    h.updated_ms = now_ms;
    jobs_[f.key] = std::move(h);
  } else {
    if (!RecordStep(it->second, f, frames, actions, now_ms, max_rounds)) return;
    it->second.updated_ms = now_ms;
  }
  dirty_[f.key] = true;
  ScheduleFlush();
}

void RoundHistory::ScheduleFlush() {
  if (flush_posted_) return;
  flush_posted_ = true;
  boost::asio::post(ctx_.io, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (auto a = alive.lock(); a && *a) {
      flush_posted_ = false;
      Flush();
    }
  });
}

void RoundHistory::Forget(const std::string& key) {
  Load();
  jobs_.erase(key);
  dirty_.erase(key);
}

void RoundHistory::Flush() {
  if (dirty_.empty() || !ctx_.store) return;
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
    for (const auto& [key, keep] : dirty_) {
      auto it = jobs_.find(key);
      Status w = keep && it != jobs_.end()
                     ? tx.PutState(kScopeHistory, key, EncodeJobHistory(it->second))
                     : tx.DeleteState(kScopeHistory, key);
      if (!w.ok()) return w;
    }
    return Status::Ok();
  });
  if (!s.ok()) {
    spdlog::warn("round history: {}; written with the next change", s.message());
    return;
  }
  dirty_.clear();
}

}  // namespace sedna::app
