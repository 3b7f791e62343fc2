// The round history (round_history.h).
#include "app/cluster/observation/round_history.h"

#include "adapters/log/log.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <variant>

#include "adapters/json/json_writer.h"

namespace sedna::app {

using Json = nlohmann::json;

namespace {

std::string Cut(std::string_view s, size_t n = RoundHistory::kMaxText) {
  return std::string(s.substr(0, n));
}

// A fact's metrics, bounded as the history keeps them (the codec bounds them already).
std::map<std::string, double> Bounded(const core::MetricNumbers& m) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : m) {
    if (out.size() >= RoundHistory::kMaxMetrics) break;
    if (std::isfinite(v)) out[Cut(k, core::kMaxObservedMetricName)] = v;
  }
  return out;
}

const char* DecisionText(core::DecisionKind k) {
  switch (k) {
    case core::DecisionKind::kDeploy:
      return "deploy";
    case core::DecisionKind::kKept:
      return "kept";
    case core::DecisionKind::kNotDeployed:
      return "not deployed";
  }
  return "";
}

// The record of `round`, else the latest one (a fact whose round the step did not know, or of a
// round the history did not see fire); nullptr when there is none.
RoundRecord* RoundOf(JobHistory& h, int64_t round) {
  for (auto it = h.rounds.rbegin(); it != h.rounds.rend(); ++it) {
    if (it->round == round) return &*it;
  }
  return h.rounds.empty() ? nullptr : &h.rounds.back();
}

// Each fact's record. Returns whether `h` changed.
struct Recorder {
  JobHistory& h;
  const HistoryJob& job;
  int64_t now_ms;

  bool operator()(const core::TrainTriggerFired& f) {
    if (h.rounds.empty() || h.rounds.back().round != f.round) {
      h.rounds.push_back({});
      h.rounds.back().round = f.round;
    }
    RoundRecord& r = h.rounds.back();
    r.attempts++;
    r.fired = Cut(f.reason);
    r.fired_ms = now_ms;
    r.train_trigger = Cut(job.train_trigger);
    r.samples = f.samples;
    r.train_ready_ms = r.train_done_ms = r.eval_ready_ms = r.eval_done_ms = 0;
    r.train_status.clear();
    return true;
  }

  bool operator()(const core::StageReported& f) {
    RoundRecord* r = RoundOf(h, f.round);
    if (!r) return false;
    const std::string status = f.completed ? "completed" : "failed";
    auto metrics = [&](size_t i) {
      return i < f.metrics.size() ? Bounded(f.metrics[i]) : std::map<std::string, double>{};
    };
    if (f.stage == core::ReportPhase::kTrain) {
      r->train_status = status;
      r->train_done_ms = now_ms;
      if (f.completed) {
        r->trained_model = Cut(f.model_url);
        r->train_metrics = metrics(0);
      }
      return true;
    }
    if (f.stage != core::ReportPhase::kEval) return false;
    r->eval_status = status;
    r->eval_done_ms = now_ms;
    if (f.completed) {
      r->new_metrics = metrics(0);
      r->deployed_metrics = metrics(1);
    }
    return true;
  }

  bool operator()(const core::DeployDecided& f) {
    if (!f.copy_to.empty() && h.deploy_target != f.copy_to) h.deploy_target = Cut(f.copy_to);
    RoundRecord* r = RoundOf(h, f.round);
    if (!r) return true;
    r->decision = DecisionText(f.kind);
    r->decision_reason = Cut(f.reason);
    r->deploy_trigger = Cut(job.deploy_trigger);
    r->decided_ms = now_ms;
    // The results the decision compared, when no eval report reached this LC (the eval ran on
    // another node and its output came with the GM's conditions).
    if (r->new_metrics.empty() && r->deployed_metrics.empty()) {
      r->new_metrics = Bounded(f.new_metrics);
      r->deployed_metrics = Bounded(f.deployed_metrics);
    }
    return true;
  }

  bool operator()(const core::ReportSent& f) {
    if (h.rounds.empty()) return false;
    RoundRecord& r = *RoundOf(h, f.round);
    using P = core::ReportPhase;
    using S = core::ReportStatus;
    // A report sent again (the GM's answer was lost) is not a new event: the first one counts.
    if (f.phase == P::kTrain && f.status == S::kReady) {
      if (r.train_ready_ms != 0) return false;
      r.train_ready_ms = now_ms;
      r.data_url = Cut(f.data_url);
      r.output_dir = Cut(f.output_dir);
    } else if (f.phase == P::kTrain && f.status == S::kFailed) {
      r.train_status = "failed";
      r.train_done_ms = now_ms;
    } else if (f.phase == P::kEval && f.status == S::kReady) {
      if (r.eval_ready_ms != 0) return false;
      r.eval_ready_ms = now_ms;
    } else if (f.phase == P::kEval && f.status == S::kFailed) {
      r.eval_status = "failed";
      r.eval_done_ms = now_ms;
    } else if (f.phase == P::kDeploy && f.status == S::kReady) {
      // IL: the deploy copy finished (or a hot update was decided); LL: the version is deployed.
      if (r.decision == "deployed") return false;
      r.decision = "deployed";
      if (r.decided_ms == 0) r.decided_ms = now_ms;
      if (r.deploy_trigger.empty()) r.deploy_trigger = Cut(job.deploy_trigger);
      r.deployed_ms = now_ms;
      h.deploys++;
    } else if (f.phase == P::kDeploy && f.status == S::kFailed) {
      if (r.decision == "deploy failed") return false;
      r.decision = "deploy failed";
      if (r.decided_ms == 0) r.decided_ms = now_ms;
      r.deployed_ms = now_ms;
    } else {
      return false;
    }
    return true;
  }
};

// A history record's metrics: the finite ones (JSON has no NaN or infinity).
void WriteMetrics(json::JsonWriter& w, const std::map<std::string, double>& m) {
  w.BeginObject();
  for (const auto& [k, v] : m) {
    if (std::isfinite(v)) w.Key(k).Double(v);
  }
  w.EndObject();
}

std::map<std::string, double> MetricsFrom(const Json& o) {
  std::map<std::string, double> m;
  if (!o.is_object()) return m;
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (it->is_number() && m.size() < RoundHistory::kMaxMetrics) m[it.key()] = it->get<double>();
  }
  return m;
}

}  // namespace

bool RecordStep(JobHistory& h, const HistoryJob& job, const std::vector<core::Fact>& facts,
                int64_t now_ms, size_t max_rounds) {
  bool changed = false;
  auto set = [&](std::string& field, std::string_view v) {
    if (field != v) field = Cut(v), changed = true;
  };
  set(h.key, job.key);
  set(h.kind, job.kind);
  set(h.ns, job.ns);
  set(h.name, job.name);
  set(h.train_trigger, job.train_trigger);
  set(h.deploy_trigger, job.deploy_trigger);
  Recorder rec{h, job, now_ms};
  for (const core::Fact& f : facts) changed |= std::visit(rec, f);
  if (const size_t keep = std::max<size_t>(max_rounds, 1); h.rounds.size() > keep) {
    h.rounds.erase(h.rounds.begin(), h.rounds.end() - static_cast<std::ptrdiff_t>(keep));
    changed = true;
  }
  return changed;
}

// Keys in byte order: the text is what the nlohmann::json tree these records were first built
// with gave (json::JsonWriter), bytes that are not UTF-8 replaced by U+FFFD as it did.
std::string EncodeJobHistory(const JobHistory& h) {
  std::string out;
  out.reserve(512 + 640 * h.rounds.size());
  json::JsonWriter w(out);
  w.BeginObject();
  w.Key("decisionsSeen").Int(h.decisions_seen);
  w.Key("deployTarget").String(h.deploy_target);
  w.Key("deployTrigger").String(h.deploy_trigger);
  w.Key("deploys").Int(h.deploys);
  w.Key("key").String(h.key);
  w.Key("kind").String(h.kind);
  w.Key("name").String(h.name);
  w.Key("namespace").String(h.ns);
  w.Key("rounds").BeginArray();
  for (const RoundRecord& r : h.rounds) {
    w.BeginObject();
    w.Key("attempts").Int(r.attempts);
    w.Key("dataURL").String(r.data_url);
    w.Key("decidedMs").Int(r.decided_ms);
    w.Key("decision").String(r.decision);
    w.Key("decisionReason").String(r.decision_reason);
    w.Key("deployTrigger").String(r.deploy_trigger);
    WriteMetrics(w.Key("deployedMetrics"), r.deployed_metrics);
    w.Key("deployedMs").Int(r.deployed_ms);
    w.Key("evalDoneMs").Int(r.eval_done_ms);
    w.Key("evalReadyMs").Int(r.eval_ready_ms);
    w.Key("evalStatus").String(r.eval_status);
    w.Key("fired").String(r.fired);
    w.Key("firedMs").Int(r.fired_ms);
    WriteMetrics(w.Key("newMetrics"), r.new_metrics);
    w.Key("outputDir").String(r.output_dir);
    w.Key("round").Int(r.round);
    w.Key("samples").Int(r.samples);
    w.Key("trainDoneMs").Int(r.train_done_ms);
    WriteMetrics(w.Key("trainMetrics"), r.train_metrics);
    w.Key("trainReadyMs").Int(r.train_ready_ms);
    w.Key("trainStatus").String(r.train_status);
    w.Key("trainTrigger").String(r.train_trigger);
    w.Key("trainedModel").String(r.trained_model);
    w.EndObject();
  }
  w.EndArray();
  w.Key("trainTrigger").String(h.train_trigger);
  w.Key("updatedMs").Int(h.updated_ms);
  w.EndObject();
  return out;
}

Json JobHistoryJson(const JobHistory& h) { return Json::parse(EncodeJobHistory(h)); }

Result<JobHistory> DecodeJobHistory(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
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
    for (const Json& e : j.value("rounds", Json::array())) {
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
      r.train_metrics = MetricsFrom(e.value("trainMetrics", Json::object()));
      r.eval_ready_ms = e.value("evalReadyMs", int64_t{0});
      r.eval_done_ms = e.value("evalDoneMs", int64_t{0});
      r.eval_status = e.value("evalStatus", "");
      r.new_metrics = MetricsFrom(e.value("newMetrics", Json::object()));
      r.deployed_metrics = MetricsFrom(e.value("deployedMetrics", Json::object()));
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
  *alive_ = false;  // a wait that completed and has not run yet finds this gone
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

void RoundHistory::OnStep(const HistoryJob& job, const std::vector<core::Fact>& facts,
                          int64_t now_ms) {
  Load();
  const size_t max_rounds = static_cast<size_t>(std::max<int64_t>(ctx_.cfg.history_rounds, 1));
  const std::string key(job.key);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) {
    JobHistory h;
    if (!RecordStep(h, job, facts, now_ms, max_rounds)) return;
    if (jobs_.size() >= kMaxJobs) {
      auto oldest = std::min_element(jobs_.begin(), jobs_.end(), [](const auto& a, const auto& b) {
        return a.second.updated_ms < b.second.updated_ms;
      });
      dirty_[oldest->first] = false;
      jobs_.erase(oldest);
    }
    h.updated_ms = now_ms;
    jobs_[key] = std::move(h);
  } else {
    if (!RecordStep(it->second, job, facts, now_ms, max_rounds)) return;
    it->second.updated_ms = now_ms;
  }
  dirty_[key] = true;
  ScheduleFlush();
}

void RoundHistory::ScheduleFlush() {
  if (flush_armed_) return;
  if (!flush_timer_) flush_timer_ = std::make_unique<boost::asio::steady_timer>(ctx_.io);
  flush_armed_ = true;
  flush_timer_->expires_after(kFlushDelay);
  flush_timer_->async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        auto a = alive.lock();
        if (ec || !a || !*a) return;  // destroyed (it flushed then)
        flush_armed_ = false;
        Flush();
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
