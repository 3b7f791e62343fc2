#include "app/cluster/jobs/il_record.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "adapters/json/upstream_codec.h"

namespace sedna::app {
namespace {

using core::MetricValue;
using core::ModelRef;
using core::il::SpoolRange;
using Json = nlohmann::json;

Json MetricsToJson(const core::Metrics& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) {
    switch (v.kind) {
      case MetricValue::Kind::kNumber:
        j[k] = v.number;
        break;
      case MetricValue::Kind::kList:
        j[k] = v.list;
        break;
      case MetricValue::Kind::kOther:
        j[k] = nullptr;
        break;
    }
  }
  return j;
}

core::Metrics MetricsFromJson(const Json& j) {
  core::Metrics m;
  if (!j.is_object()) return m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_number()) {
      m[it.key()] = MetricValue::Number(it->get<double>());
    } else if (it->is_array()) {
      m[it.key()] = MetricValue::List(it->get<std::vector<double>>());
    } else {
      m[it.key()] = MetricValue::Other();
    }
  }
  return m;
}

Json ModelToJson(const ModelRef& m) {
  Json j{{"format", m.format}, {"url", m.url}};
  if (!m.metrics.empty()) j["metrics"] = MetricsToJson(m.metrics);
  if (!m.devices.empty()) j["devices"] = m.devices;
  return j;
}

ModelRef ModelFromJson(const Json& j) {
  ModelRef m;
  m.format = j.value("format", "");
  m.url = j.value("url", "");
  if (j.contains("metrics")) m.metrics = MetricsFromJson(j["metrics"]);
  if (j.contains("devices") && j["devices"].is_array()) {
    for (const auto& d : j["devices"]) {
      if (d.is_string()) m.devices.push_back(d.get<std::string>());
    }
  }
  return m;
}

Json ModelsToJson(const std::vector<ModelRef>& v) {
  Json a = Json::array();
  for (const auto& m : v) a.push_back(ModelToJson(m));
  return a;
}

std::vector<ModelRef> ModelsFromJson(const Json& j) {
  std::vector<ModelRef> v;
  if (j.is_array()) {
    for (const auto& e : j) v.push_back(ModelFromJson(e));
  }
  return v;
}

Json RangeToJson(const SpoolRange& r) { return Json::array({r.begin, r.end, r.count}); }

SpoolRange RangeFromJson(const Json& j) {
  if (!j.is_array() || j.size() != 3) return {};
  return SpoolRange{j[0].get<int64_t>(), j[1].get<int64_t>(), j[2].get<int64_t>()};
}

// The prefix digest as 16 hex digits (a JSON number above 2^53 is not exact in every reader).
std::string DigestToHex(uint64_t d) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, d >>= 4) s[i] = kHex[d & 0xf];
  return s;
}

bool DigestFromHex(const std::string& s, uint64_t& d) {
  if (s.size() != 16) return false;
  d = 0;
  for (char ch : s) {
    int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (v < 0) return false;
    d = d << 4 | static_cast<uint64_t>(v);
  }
  return true;
}

// `scanned` is not kept (0 is always correct); `skipping` only when set, so that a record
// without it (written before it existed) reads as not skipping. `prefix_digest` only when known:
// a record without it (written before digests, or unreadable) gives prefix_digest_known = false,
// and the reader handles a rewrite by the consumed count, as before.
Json CursorToJson(const dataset::IndexCursor& c) {
  Json j{{"path", c.path},
         {"dev", c.dev},
         {"ino", c.ino},
         {"offset", c.offset},
         {"samples", c.samples},
         {"skip", c.skip},
         {"header_done", c.header_done},
         {"header", c.header},
         {"tail_size", c.tail_size}};
  if (c.skipping) j["skipping"] = true;
  if (c.prefix_digest_known) {
    j["prefix_digest"] = DigestToHex(c.prefix_digest);
    j["prefix_samples"] = c.prefix_samples;
  }
  return j;
}

dataset::IndexCursor CursorFromJson(const Json& j) {
  dataset::IndexCursor c;
  c.path = j.value("path", "");
  c.dev = j.value("dev", uint64_t{0});
  c.ino = j.value("ino", uint64_t{0});
  c.offset = j.value("offset", int64_t{0});
  c.samples = j.value("samples", int64_t{0});
  c.skip = j.value("skip", int64_t{0});
  c.header_done = j.value("header_done", false);
  c.header = j.value("header", "");
  c.tail_size = j.value("tail_size", int64_t{-1});
  c.skipping = j.value("skipping", false);
  const auto digest = j.find("prefix_digest");
  c.prefix_digest_known = digest != j.end() && digest->is_string() &&
                          DigestFromHex(digest->get<std::string>(), c.prefix_digest);
  if (c.prefix_digest_known) {
    c.prefix_samples = j.value("prefix_samples", int64_t{0});
  } else {
    c.prefix_digest = dataset::kEmptyPrefixDigest;
  }
  return c;
}

// A report's phase and status in a record: as the job's kind sends them
// (sedna::json::ReportSpelling), read back in either spelling.
core::ReportPhase PhaseFrom(const std::string& text, const char* field) {
  auto p = sedna::json::ParseReportPhase(text);
  if (!p) throw std::runtime_error(std::string(field) + ".phase: \"" + text + "\" is no phase");
  return *p;
}

core::ReportStatus StatusFrom(const std::string& text, const char* field) {
  auto s = sedna::json::ParseReportStatus(text);
  if (!s) throw std::runtime_error(std::string(field) + ".status: \"" + text + "\" is no status");
  return *s;
}

Json DecisionToJson(const core::StatusReport& d) {
  return Json{{"phase", sedna::json::ReportPhaseText(d.phase, sedna::json::ReportSpelling::kIl)},
              {"status", sedna::json::ReportStatusText(d.status, sedna::json::ReportSpelling::kIl)},
              {"has_input", d.has_input},
              {"input_models", ModelsToJson(d.input_models)}};
}

core::StatusReport DecisionFromJson(const Json& d) {
  core::StatusReport r;
  r.phase = PhaseFrom(d.value("phase", ""), "decision");
  r.status = StatusFrom(d.value("status", ""), "decision");
  r.has_input = d.value("has_input", false);
  r.input_models = ModelsFromJson(d.value("input_models", Json::array()));
  return r;
}

}  // namespace

std::string EncodeIlRecord(const IlRecord& r) {
  const auto& s = r.state;
  Json windows = Json::array();
  for (const auto& w : s.eval_windows) windows.push_back(RangeToJson(w));
  Json deployments = Json::array();
  for (const auto& d : s.deployments) {
    deployments.push_back(Json{{"round", d.round}, {"url", d.url}, {"at", d.at}});
  }
  Json st{{"round", s.round},
          {"samples_seen", s.samples_seen},
          {"train_pending", RangeToJson(s.train_pending)},
          {"eval_open", RangeToJson(s.eval_open)},
          {"eval_windows", windows},
          {"answered_train_waiting", s.answered_train_waiting},
          {"answered_eval_waiting", s.answered_eval_waiting},
          {"answered_deploy_waiting", s.answered_deploy_waiting},
          {"eval_refused_deadline_ms", s.eval_refused_deadline_ms},
          {"pending_round_id", s.pending_round_id},
          {"eval_reported", s.eval_reported},
          {"eval_report", ModelsToJson(s.eval_report)},
          {"pending_models", ModelsToJson(s.pending_models)},
          {"eval_written_ms", s.eval_written_ms},
          {"decided_round_id", s.decided_round_id},
          {"decided_at_ms", s.decided_at_ms},
          {"decided_by", s.decided_by},
          {"answered_hot_update", s.answered_hot_update},
          {"work_copies_done", s.work_copies_done},
          {"work", static_cast<int>(s.work)},
          {"work_condition", s.work_condition},
          {"work_round", s.work_round},
          {"work_layout", core::il::LayoutName(s.work_layout)},
          {"work_range", RangeToJson(s.work_range)},
          {"work_models", ModelsToJson(s.work_models)},
          {"eval_outstanding", s.eval_outstanding},
          {"eval_round", s.eval_round},
          {"eval_models", ModelsToJson(s.eval_models)},
          {"last_eval_results", ModelsToJson(s.last_eval_results)},
          {"last_decision", s.last_decision},
          {"decisions", s.decisions},
          {"decided_round", s.decided_round},
          {"deployments", deployments},
          {"retry_after_ms", s.retry_after_ms},
          {"last_error", s.last_error}};
  if (s.trained) st["trained"] = ModelToJson(*s.trained);
  if (s.trained_base) st["trained_base"] = ModelToJson(*s.trained_base);
  if (s.decision_report) st["decision_report"] = DecisionToJson(*s.decision_report);
  // One decision per round ([D:I23]): absent in older records, which decode to the index rules.
  st["pending_round_key"] = s.pending_round_key;
  st["decided_round_key"] = s.decided_round_key;
  st["closed_round"] = s.closed_round;
  Json decided = Json::array();
  for (const auto& d : s.decided_rounds) {
    decided.push_back(
        Json{{"round", d.round}, {"report", DecisionToJson(d.report)}, {"at_ms", d.at_ms}});
  }
  st["decided_rounds"] = decided;
  return Json{{"v", 1}, {"state", st}, {"cursor", CursorToJson(r.cursor)}}.dump();
}

Result<IlRecord> DecodeIlRecord(const std::string& text) {
  try {
    Json j = Json::parse(text);
    IlRecord r;
    const Json& st = j.at("state");
    auto& s = r.state;
    s.round = st.at("round").get<int64_t>();
    s.samples_seen = st.value("samples_seen", int64_t{0});
    s.train_pending = RangeFromJson(st.at("train_pending"));
    s.eval_open = RangeFromJson(st.at("eval_open"));
    for (const auto& w : st.at("eval_windows")) s.eval_windows.push_back(RangeFromJson(w));
    s.answered_train_waiting = st.value("answered_train_waiting", int64_t{-1});
    s.answered_eval_waiting = st.value("answered_eval_waiting", int64_t{-1});
    s.answered_deploy_waiting = st.value("answered_deploy_waiting", int64_t{-1});
    s.eval_refused_deadline_ms = st.value("eval_refused_deadline_ms", int64_t{0});
    int work = st.value("work", 0);
    if (work < 0 || work > static_cast<int>(core::il::Work::kHotUpdate)) {
      return Result<IlRecord>::Error("state.work: out of range");
    }
    s.work = static_cast<core::il::Work>(work);
    s.work_copies_done = st.value("work_copies_done", int64_t{0});
    s.work_condition = st.value("work_condition", int64_t{-1});
    s.work_round = st.value("work_round", int64_t{0});
    // A record from before the field: its write started with the only layout there was, 2021.
    const std::string layout = st.value("work_layout", "2021");
    if (layout != "2021" && layout != "v0.7") {
      return Result<IlRecord>::Error("state.work_layout: \"" + layout +
                                     "\" is not \"2021\" or \"v0.7\"");
    }
    s.work_layout = layout == "v0.7" ? core::il::Layout::kV07 : core::il::Layout::k2021;
    s.work_range = RangeFromJson(st.value("work_range", Json::array()));
    s.work_models = ModelsFromJson(st.value("work_models", Json::array()));
    if (st.contains("trained")) s.trained = ModelFromJson(st["trained"]);
    if (st.contains("trained_base")) s.trained_base = ModelFromJson(st["trained_base"]);
    s.eval_outstanding = st.value("eval_outstanding", false);
    s.eval_round = st.value("eval_round", int64_t{0});
    s.eval_models = ModelsFromJson(st.value("eval_models", Json::array()));
    if (st.contains("pending_round_id")) {
      s.pending_round_id = st.value("pending_round_id", int64_t{-1});
      s.eval_reported = st.value("eval_reported", false);
      s.eval_report = ModelsFromJson(st.value("eval_report", Json::array()));
      s.pending_models = ModelsFromJson(st.value("pending_models", Json::array()));
      s.eval_written_ms = st.value("eval_written_ms", int64_t{0});
    } else if (s.eval_outstanding) {
      // A record of the 2021-style LC: its outstanding eval is this round, still unreported.
      s.pending_round_id = s.answered_eval_waiting;
      s.pending_models = s.eval_models;
    }
    s.decided_round_id = st.value("decided_round_id", int64_t{-1});
    s.decided_at_ms = st.value("decided_at_ms", int64_t{0});
    s.decided_by = st.value("decided_by", "");
    s.answered_hot_update = st.value("answered_hot_update", int64_t{-1});
    if (st.contains("decision_report") && st["decision_report"].is_object()) {
      s.decision_report = DecisionFromJson(st["decision_report"]);
    }
    s.pending_round_key = st.value("pending_round_key", int64_t{0});
    s.decided_round_key = st.value("decided_round_key", int64_t{0});
    s.closed_round = st.value("closed_round", int64_t{0});
    for (const auto& d : st.value("decided_rounds", Json::array())) {
      if (!d.is_object() || !d.contains("report") || !d["report"].is_object()) continue;
      s.decided_rounds.push_back(core::il::DecidedRound{d.value("round", int64_t{0}),
                                                        DecisionFromJson(d["report"]),
                                                        d.value("at_ms", int64_t{0})});
    }
    while (static_cast<int>(s.decided_rounds.size()) > core::il::kDecidedRoundsKept) {
      s.decided_rounds.erase(s.decided_rounds.begin());
    }
    s.last_eval_results = ModelsFromJson(st.value("last_eval_results", Json::array()));
    s.last_decision = st.value("last_decision", "");
    s.decisions = st.value("decisions", int64_t{0});
    s.decided_round = st.value("decided_round", int64_t{0});
    for (const auto& d : st.value("deployments", Json::array())) {
      s.deployments.push_back(core::il::Deployment{d.value("round", int64_t{0}), d.value("url", ""),
                                                   d.value("at", "")});
    }
    s.retry_after_ms = st.value("retry_after_ms", int64_t{0});
    s.last_error = st.value("last_error", "");
    r.cursor = CursorFromJson(j.at("cursor"));
    if ((s.work == core::il::Work::kWriteEval && s.work_models.size() != 2) ||
        (s.work == core::il::Work::kDeploy &&
         (s.work_models.size() < 2 || s.work_models.size() % 2 != 0 ||
          s.work_copies_done * 2 >= static_cast<int64_t>(s.work_models.size())))) {
      return Result<IlRecord>::Error("state.work_models: expected 2 models for " +
                                     std::string(core::il::WorkName(s.work)));
    }
    return r;
  } catch (const std::exception& e) {
    return Result<IlRecord>::Error(std::string("IL job record: ") + e.what());
  }
}

namespace {

Json ReportToJson(const core::StatusReport& r) {
  Json j{{"phase", sedna::json::ReportPhaseText(r.phase, sedna::json::ReportSpelling::kLl)},
         {"status", sedna::json::ReportStatusText(r.status, sedna::json::ReportSpelling::kLl)}};
  if (r.has_input) {
    j["input"] = Json{{"models", ModelsToJson(r.input_models)},
                      {"data_url", r.data_url},
                      {"data_index_url", r.data_index_url},
                      {"output_dir", r.output_dir}};
  }
  return j;
}

core::StatusReport ReportFromJson(const Json& j) {
  core::StatusReport r;
  r.phase = PhaseFrom(j.at("phase").get<std::string>(), "answer");
  r.status = StatusFrom(j.at("status").get<std::string>(), "answer");
  if (j.contains("input")) {
    const Json& in = j["input"];
    r.has_input = true;
    r.input_models = ModelsFromJson(in.value("models", Json::array()));
    r.data_url = in.value("data_url", "");
    r.data_index_url = in.value("data_index_url", "");
    r.output_dir = in.value("output_dir", "");
  }
  return r;
}

// A record written by the phase-machine LC (v 1, before [D:I14]): the step that was in flight or
// open becomes the unanswered or answered Waiting of the condition-driven state. The old LC
// examined conditions [0, conditions_seen) and answered nothing by index, so every Waiting among
// them counts as answered except the one its step had not answered yet: an idle or writing train
// (the trigger had not fired or its train ready was not sent), a train completed but eval ready not
// sent, an eval completed but deploy not reported. In-flight work is dropped (the samples of a
// train being written are still pending) and planned again on that Waiting.
void MigrateV1(const Json& st, core::ll::State& s) {
  using core::il::Work;
  using core::ll::Phase;
  const int phase = st.at("phase").get<int>();
  const int work = st.value("work", 0);  // any in-flight work is planned again (below)
  const bool awaited = st.value("worker_awaited", false);
  const int64_t seen = s.conditions_seen - 1;
  s.answered_train_waiting = s.answered_eval_waiting = s.answered_deploy_waiting = seen;
  s.train_range = {};
  if (phase == static_cast<int>(Phase::kTrain)) {
    s.phase = Phase::kTrain;
    if (awaited) {
      s.worker_awaited = true;
      s.train_range = RangeFromJson(st.value("train_range", Json::array()));
    } else {
      s.answered_train_waiting = -1;
    }
  } else if (phase == static_cast<int>(Phase::kEval)) {
    if (st.contains("train_model")) {
      s.train_models = {ModelFromJson(st["train_model"])};
      s.train_models_version = s.version;
    }
    if (awaited) {
      s.phase = Phase::kEval;
      s.worker_awaited = true;
      s.eval_inputs = s.train_models;
    } else {
      s.phase = Phase::kTrain;
      s.answered_eval_waiting = -1;
    }
  } else {
    if (st.contains("eval_result")) {
      s.eval_models = {ModelFromJson(st["eval_result"])};
      s.eval_models_version = s.version;
    }
    s.phase = Phase::kEval;  // the eval is still open, so its report is the deploy's fallback
    s.worker_awaited = true;
    s.answered_deploy_waiting = -1;
  }
  (void)work;  // kWriteTrain, kWriteEval and kDeploy are planned again on their Waiting
}

}  // namespace

std::string EncodeLlRecord(const LlRecord& r) {
  const auto& s = r.state;
  Json windows = Json::array();
  for (const auto& w : s.eval_windows) windows.push_back(RangeToJson(w));
  Json deployments = Json::array();
  for (const auto& d : s.deployments) {
    deployments.push_back(Json{{"round", d.round}, {"url", d.url}, {"at", d.at}});
  }
  Json st{{"phase", static_cast<int>(s.phase)},
          {"version", s.version},
          {"samples_seen", s.samples_seen},
          {"train_pending", RangeToJson(s.train_pending)},
          {"eval_open", RangeToJson(s.eval_open)},
          {"eval_windows", windows},
          {"train_range", RangeToJson(s.train_range)},
          {"work", static_cast<int>(s.work)},
          {"work_condition", s.work_condition},
          {"work_models", ModelsToJson(s.work_models)},
          {"worker_awaited", s.worker_awaited},
          {"eval_inputs", ModelsToJson(s.eval_inputs)},
          {"answered_train_waiting", s.answered_train_waiting},
          {"answered_eval_waiting", s.answered_eval_waiting},
          {"answered_deploy_waiting", s.answered_deploy_waiting},
          {"answered_eval_version", s.answered_eval_version},
          {"answered_deploy_version", s.answered_deploy_version},
          {"answer_condition", s.answer_condition},
          {"answer_at_ms", s.answer_at_ms},
          {"train_models", ModelsToJson(s.train_models)},
          {"train_models_version", s.train_models_version},
          {"eval_models", ModelsToJson(s.eval_models)},
          {"eval_models_version", s.eval_models_version},
          {"conditions_seen", s.conditions_seen},
          {"deploy_count", s.deploy_count},
          {"consecutive_failures", s.consecutive_failures},
          {"deployments", deployments},
          {"retry_after_ms", s.retry_after_ms},
          {"last_error", s.last_error}};
  if (s.answer) st["answer"] = ReportToJson(*s.answer);
  return Json{{"v", 2}, {"state", st}, {"cursor", CursorToJson(r.cursor)}}.dump();
}

Result<LlRecord> DecodeLlRecord(const std::string& text) {
  try {
    Json j = Json::parse(text);
    LlRecord r;
    const Json& st = j.at("state");
    auto& s = r.state;
    const int v = j.value("v", 1);
    if (v != 1 && v != 2) return Result<LlRecord>::Error("v: unknown record version");
    int phase = st.at("phase").get<int>();
    int work = st.value("work", 0);
    if (phase < 0 || phase > 2) return Result<LlRecord>::Error("state.phase: out of range");
    if (work < 0 || work > 3) return Result<LlRecord>::Error("state.work: out of range");
    s.version = st.at("version").get<int64_t>();
    s.samples_seen = st.value("samples_seen", int64_t{0});
    s.train_pending = RangeFromJson(st.at("train_pending"));
    s.eval_open = RangeFromJson(st.at("eval_open"));
    for (const auto& w : st.at("eval_windows")) s.eval_windows.push_back(RangeFromJson(w));
    s.conditions_seen = st.value("conditions_seen", int64_t{0});
    s.deploy_count = st.value("deploy_count", int64_t{0});
    s.consecutive_failures = st.value("consecutive_failures", int64_t{0});
    for (const auto& d : st.value("deployments", Json::array())) {
      s.deployments.push_back(core::il::Deployment{d.value("round", int64_t{0}), d.value("url", ""),
                                                   d.value("at", "")});
    }
    s.retry_after_ms = st.value("retry_after_ms", int64_t{0});
    s.last_error = st.value("last_error", "");
    r.cursor = CursorFromJson(j.at("cursor"));
    if (v == 1) {
      MigrateV1(st, s);
      return r;
    }
    s.phase = static_cast<core::ll::Phase>(phase);
    s.work = static_cast<core::il::Work>(work);
    s.train_range = RangeFromJson(st.value("train_range", Json::array()));
    s.work_condition = st.value("work_condition", int64_t{-1});
    s.work_models = ModelsFromJson(st.value("work_models", Json::array()));
    s.worker_awaited = st.value("worker_awaited", false);
    s.eval_inputs = ModelsFromJson(st.value("eval_inputs", Json::array()));
    s.answered_train_waiting = st.value("answered_train_waiting", int64_t{-1});
    s.answered_eval_waiting = st.value("answered_eval_waiting", int64_t{-1});
    s.answered_deploy_waiting = st.value("answered_deploy_waiting", int64_t{-1});
    // Absent before [D:I23]: 0, and the index rule alone applies until the next answer.
    s.answered_eval_version = st.value("answered_eval_version", int64_t{0});
    s.answered_deploy_version = st.value("answered_deploy_version", int64_t{0});
    s.answer_condition = st.value("answer_condition", int64_t{-1});
    s.answer_at_ms = st.value("answer_at_ms", int64_t{0});
    if (st.contains("answer")) s.answer = ReportFromJson(st["answer"]);
    s.train_models = ModelsFromJson(st.value("train_models", Json::array()));
    s.train_models_version = st.value("train_models_version", int64_t{0});
    s.eval_models = ModelsFromJson(st.value("eval_models", Json::array()));
    s.eval_models_version = st.value("eval_models_version", int64_t{0});
    if (s.work == core::il::Work::kDeploy && s.work_models.empty()) {
      return Result<LlRecord>::Error("state.work_models: empty for deploy");
    }
    if (s.work != core::il::Work::kNone && s.work_condition < 0) {
      return Result<LlRecord>::Error("state.work_condition: missing for in-flight work");
    }
    return r;
  } catch (const std::exception& e) {
    return Result<LlRecord>::Error(std::string("LL job record: ") + e.what());
  }
}

std::string EncodeDatasetRecord(const DatasetRecord& r) {
  return Json{{"v", 1}, {"cursor", CursorToJson(r.cursor)}, {"reported", r.reported}}.dump();
}

Result<DatasetRecord> DecodeDatasetRecord(const std::string& text) {
  try {
    Json j = Json::parse(text);
    DatasetRecord r;
    r.cursor = CursorFromJson(j.at("cursor"));
    r.reported = j.value("reported", int64_t{0});
    return r;
  } catch (const std::exception& e) {
    return Result<DatasetRecord>::Error(std::string("dataset record: ") + e.what());
  }
}

}  // namespace sedna::app
