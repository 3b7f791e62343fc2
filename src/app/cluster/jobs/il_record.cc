#include "app/cluster/jobs/il_record.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "adapters/json/base64.h"
#include "adapters/json/json_writer.h"
#include "adapters/json/upstream_codec.h"
#include "core/utf8.h"

namespace sedna::app {
namespace {

using core::MetricValue;
using core::ModelRef;
using core::il::SpoolRange;
using Json = nlohmann::json;
using json::JsonWriter;

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

std::vector<ModelRef> ModelsFromJson(const Json& j) {
  std::vector<ModelRef> v;
  if (j.is_array()) {
    for (const auto& e : j) v.push_back(ModelFromJson(e));
  }
  return v;
}

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

// Writers for the records' parts. Each object's keys are written in byte order: the text is then
// what the nlohmann::json tree these records were built with gave (json::JsonWriter), so records
// read the same in every version (testdata/records.golden).

void WriteMetrics(JsonWriter& w, const core::Metrics& m) {
  w.BeginObject();
  for (const auto& [k, v] : m) {  // a NameMap iterates in byte order
    w.Key(k);
    switch (v.kind) {
      case MetricValue::Kind::kNumber:
        w.Double(v.number);
        break;
      case MetricValue::Kind::kList:
        w.BeginArray();
        for (double d : v.list) w.Double(d);
        w.EndArray();
        break;
      case MetricValue::Kind::kOther:
        w.Null();
        break;
    }
  }
  w.EndObject();
}

void WriteModel(JsonWriter& w, const ModelRef& m) {
  w.BeginObject();
  if (!m.devices.empty()) {
    w.Key("devices").BeginArray();
    for (const auto& d : m.devices) w.String(d);
    w.EndArray();
  }
  w.Key("format").String(m.format);
  if (!m.metrics.empty()) WriteMetrics(w.Key("metrics"), m.metrics);
  w.Key("url").String(m.url);
  w.EndObject();
}

void WriteModels(JsonWriter& w, const std::vector<ModelRef>& v) {
  w.BeginArray();
  for (const auto& m : v) WriteModel(w, m);
  w.EndArray();
}

void WriteRange(JsonWriter& w, const SpoolRange& r) {
  w.BeginArray().Int(r.begin).Int(r.end).Int(r.count).EndArray();
}

void WriteRanges(JsonWriter& w, const std::vector<SpoolRange>& v) {
  w.BeginArray();
  for (const auto& r : v) WriteRange(w, r);
  w.EndArray();
}

void WriteDeployments(JsonWriter& w, const std::vector<core::il::Deployment>& v) {
  w.BeginArray();
  for (const auto& d : v) {
    w.BeginObject().Key("at").String(d.at).Key("round").Int(d.round).Key("url").String(d.url);
    w.EndObject();
  }
  w.EndArray();
}

// `scanned` is not kept (0 is always correct); `skipping` only when set, so that a record
// without it (written before it existed) reads as not skipping. `prefix_digest` only when known:
// a record without it (written before digests, or unreadable) gives prefix_digest_known = false,
// and the reader handles a rewrite by the consumed count, as before.
void WriteCursor(JsonWriter& w, const dataset::IndexCursor& c) {
  w.BeginObject().Key("dev").UInt(c.dev).Key("header").String(c.header);
  // A header is the index's first line, any bytes: one that is not UTF-8 also goes as base64, so
  // the round files keep it exactly after a restart ("header" has U+FFFD for older readers).
  if (!core::IsValidUtf8(c.header)) w.Key("header_base64").String(json::Base64Encode(c.header));
  w.Key("header_done")
      .Bool(c.header_done)
      .Key("ino")
      .UInt(c.ino)
      .Key("offset")
      .Int(c.offset)
      .Key("path")
      .String(c.path);
  if (c.prefix_digest_known) {
    w.Key("prefix_digest").String(DigestToHex(c.prefix_digest));
    w.Key("prefix_samples").Int(c.prefix_samples);
  }
  w.Key("samples").Int(c.samples).Key("skip").Int(c.skip);
  if (c.skipping) w.Key("skipping").Bool(true);
  w.Key("tail_size").Int(c.tail_size);
  w.EndObject();
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
  if (const auto b64 = j.find("header_base64"); b64 != j.end() && b64->is_string()) {
    if (auto bytes = json::Base64Decode(b64->get<std::string>()); bytes.ok()) {
      c.header = std::move(*bytes);
    }
  }
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

void WriteDecision(JsonWriter& w, const core::StatusReport& d) {
  w.BeginObject().Key("has_input").Bool(d.has_input);
  WriteModels(w.Key("input_models"), d.input_models);
  w.Key("phase").String(sedna::json::ReportPhaseText(d.phase, sedna::json::ReportSpelling::kIl));
  w.Key("status").String(sedna::json::ReportStatusText(d.status, sedna::json::ReportSpelling::kIl));
  w.EndObject();
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
  std::string out;
  out.reserve(1536);
  JsonWriter w(out);
  WriteCursor(w.BeginObject().Key("cursor"), r.cursor);
  w.Key("state").BeginObject();
  w.Key("answered_deploy_waiting").Int(s.answered_deploy_waiting);
  w.Key("answered_eval_waiting").Int(s.answered_eval_waiting);
  w.Key("answered_hot_update").Int(s.answered_hot_update);
  w.Key("answered_train_waiting").Int(s.answered_train_waiting);
  w.Key("closed_round").Int(s.closed_round);
  w.Key("decided_at_ms").Int(s.decided_at_ms);
  w.Key("decided_by").String(s.decided_by);
  w.Key("decided_round").Int(s.decided_round);
  w.Key("decided_round_id").Int(s.decided_round_id);
  // One decision per round ([D:I23]): absent in older records, which decode to the index rules.
  w.Key("decided_round_key").Int(s.decided_round_key);
  w.Key("decided_rounds").BeginArray();
  for (const auto& d : s.decided_rounds) {
    w.BeginObject().Key("at_ms").Int(d.at_ms);
    WriteDecision(w.Key("report"), d.report);
    w.Key("round").Int(d.round).EndObject();
  }
  w.EndArray();
  if (s.decision_report) WriteDecision(w.Key("decision_report"), *s.decision_report);
  w.Key("decisions").Int(s.decisions);
  WriteDeployments(w.Key("deployments"), s.deployments);
  WriteModels(w.Key("eval_models"), s.eval_models);
  WriteRange(w.Key("eval_open"), s.eval_open);
  w.Key("eval_outstanding").Bool(s.eval_outstanding);
  w.Key("eval_refused_deadline_ms").Int(s.eval_refused_deadline_ms);
  WriteModels(w.Key("eval_report"), s.eval_report);
  w.Key("eval_reported").Bool(s.eval_reported);
  w.Key("eval_round").Int(s.eval_round);
  WriteRanges(w.Key("eval_windows"), s.eval_windows);
  w.Key("eval_written_ms").Int(s.eval_written_ms);
  w.Key("last_decision").String(s.last_decision);
  w.Key("last_error").String(s.last_error);
  WriteModels(w.Key("last_eval_results"), s.last_eval_results);
  WriteModels(w.Key("pending_models"), s.pending_models);
  w.Key("pending_round_id").Int(s.pending_round_id);
  w.Key("pending_round_key").Int(s.pending_round_key);
  w.Key("retry_after_ms").Int(s.retry_after_ms);
  w.Key("round").Int(s.round);
  w.Key("samples_seen").Int(s.samples_seen);
  WriteRange(w.Key("train_pending"), s.train_pending);
  if (s.trained) WriteModel(w.Key("trained"), *s.trained);
  if (s.trained_base) WriteModel(w.Key("trained_base"), *s.trained_base);
  w.Key("work").Int(static_cast<int>(s.work));
  w.Key("work_condition").Int(s.work_condition);
  w.Key("work_copies_done").Int(s.work_copies_done);
  w.Key("work_layout").String(core::il::LayoutName(s.work_layout));
  WriteModels(w.Key("work_models"), s.work_models);
  WriteRange(w.Key("work_range"), s.work_range);
  w.Key("work_round").Int(s.work_round);
  w.EndObject().Key("v").Int(1).EndObject();
  return out;
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

void WriteReport(JsonWriter& w, const core::StatusReport& r) {
  w.BeginObject();
  if (r.has_input) {
    w.Key("input").BeginObject().Key("data_index_url").String(r.data_index_url);
    w.Key("data_url").String(r.data_url);
    WriteModels(w.Key("models"), r.input_models);
    w.Key("output_dir").String(r.output_dir).EndObject();
  }
  w.Key("phase").String(sedna::json::ReportPhaseText(r.phase, sedna::json::ReportSpelling::kLl));
  w.Key("status").String(sedna::json::ReportStatusText(r.status, sedna::json::ReportSpelling::kLl));
  w.EndObject();
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
  std::string out;
  out.reserve(1536);
  JsonWriter w(out);
  WriteCursor(w.BeginObject().Key("cursor"), r.cursor);
  w.Key("state").BeginObject();
  if (s.answer) WriteReport(w.Key("answer"), *s.answer);
  w.Key("answer_at_ms").Int(s.answer_at_ms);
  w.Key("answer_condition").Int(s.answer_condition);
  w.Key("answered_deploy_version").Int(s.answered_deploy_version);
  w.Key("answered_deploy_waiting").Int(s.answered_deploy_waiting);
  w.Key("answered_eval_version").Int(s.answered_eval_version);
  w.Key("answered_eval_waiting").Int(s.answered_eval_waiting);
  w.Key("answered_train_waiting").Int(s.answered_train_waiting);
  w.Key("conditions_seen").Int(s.conditions_seen);
  w.Key("consecutive_failures").Int(s.consecutive_failures);
  w.Key("deploy_count").Int(s.deploy_count);
  WriteDeployments(w.Key("deployments"), s.deployments);
  WriteModels(w.Key("eval_inputs"), s.eval_inputs);
  WriteModels(w.Key("eval_models"), s.eval_models);
  w.Key("eval_models_version").Int(s.eval_models_version);
  WriteRange(w.Key("eval_open"), s.eval_open);
  WriteRanges(w.Key("eval_windows"), s.eval_windows);
  w.Key("last_error").String(s.last_error);
  w.Key("phase").Int(static_cast<int>(s.phase));
  w.Key("retry_after_ms").Int(s.retry_after_ms);
  w.Key("samples_seen").Int(s.samples_seen);
  WriteModels(w.Key("train_models"), s.train_models);
  w.Key("train_models_version").Int(s.train_models_version);
  WriteRange(w.Key("train_pending"), s.train_pending);
  WriteRange(w.Key("train_range"), s.train_range);
  w.Key("version").Int(s.version);
  w.Key("work").Int(static_cast<int>(s.work));
  w.Key("work_condition").Int(s.work_condition);
  WriteModels(w.Key("work_models"), s.work_models);
  w.Key("worker_awaited").Bool(s.worker_awaited);
  w.EndObject().Key("v").Int(2).EndObject();
  return out;
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
  std::string out;
  out.reserve(320);
  JsonWriter w(out);
  WriteCursor(w.BeginObject().Key("cursor"), r.cursor);
  w.Key("reported").Int(r.reported).Key("v").Int(1).EndObject();
  return out;
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
