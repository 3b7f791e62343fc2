#include "adapters/json/upstream_codec.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "adapters/json/base64.h"
#include "adapters/json/field_reader.h"
#include "adapters/json/go_json_internal.h"
#include "adapters/json/k8s_names.h"
#include "core/ascii.h"

namespace sedna::json {
namespace {

using internal::Index;
using internal::Join;
using internal::Member;
using internal::ReadArray;
using internal::ReadObject;
using internal::ReadString;
using internal::TypeError;

#define SEDNA_RETURN_IF_ERROR(expr) \
  do {                              \
    ::sedna::Status _st = (expr);   \
    if (!_st.ok()) return _st;      \
  } while (false)

// Appends `,"key":"value"` (or without the comma when `*first`) when value is non-empty.
void PutOmitEmpty(std::string& out, bool* first, std::string_view key, const std::string& value) {
  if (value.empty()) return;
  if (!*first) out += ',';
  *first = false;
  out += '"';
  out += key;  // keys are fixed ASCII identifiers
  out += "\":";
  AppendGoString(out, value);
}

// ---- condition data (§P4.1) ------------------------------------------------------------------

// One runtime.Model: {"format","url","metrics"}, all omitempty; metrics as float64 values.
Status AppendCondModel(const RawJson& m, std::string_view path, std::string& out) {
  if (!m.is_null() && !m.is_object()) return TypeError(path, "an object", m);
  std::string format, url;
  SEDNA_RETURN_IF_ERROR(ReadString(m, "format", path, &format));
  SEDNA_RETURN_IF_ERROR(ReadString(m, "url", path, &url));
  const RawJson* metrics = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(m, "metrics", path, &metrics));
  out += '{';
  bool first = true;
  PutOmitEmpty(out, &first, "format", format);
  PutOmitEmpty(out, &first, "url", url);
  if (metrics != nullptr && metrics->size() > 0) {
    auto text = metrics->DumpAsFloat64();
    if (!text.ok()) return text.status().With(Join(path, "metrics"));
    if (!first) out += ',';
    first = false;
    out += "\"metrics\":";
    out += *text;
  }
  out += '}';
  return Status::Ok();
}

// The `model` and `models` members of input/output, appended with their leading comma state.
Status AppendCondModels(const RawJson& holder, std::string_view path, std::string& out,
                        bool* first) {
  const RawJson* model = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(holder, "model", path, &model));
  if (model != nullptr) {
    if (!*first) out += ',';
    *first = false;
    out += "\"model\":";
    SEDNA_RETURN_IF_ERROR(AppendCondModel(*model, Join(path, "model"), out));
  }
  const RawJson* models = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadArray(holder, "models", path, &models));
  if (models != nullptr && models->size() > 0) {
    if (!*first) out += ',';
    *first = false;
    out += "\"models\":[";
    std::string models_path = Join(path, "models");
    for (size_t i = 0; i < models->size(); ++i) {
      if (i > 0) out += ',';
      SEDNA_RETURN_IF_ERROR(AppendCondModel((*models)[i], Index(models_path, i), out));
    }
    out += ']';
  }
  return Status::Ok();
}

// ---- worker results --------------------------------------------------------------------------

// Records the mean of `n` numbers that sum to `sum` as the observed metric `name`, unless there are
// none or the mean is not finite.
void AddMean(double sum, size_t n, const std::string& name, core::MetricNumbers& out) {
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0;
  if (n > 0 && std::isfinite(mean)) out[name] = mean;
}

// Adds the numbers of the metric `v` named `name` (core::MetricNumbers): a nested object's
// members as "<name>/<member>" up to two levels below `metrics`. `name` is a buffer the nested
// names are built in; it is as given again on return.
void AddObservedMetric(const RawJson& v, std::string& name, int depth, core::MetricNumbers& out) {
  if (out.size() >= core::kMaxObservedMetrics || name.size() > core::kMaxObservedMetricName) return;
  if (v.is_number()) {
    if (auto d = v.AsDouble(); d.ok() && std::isfinite(*d)) out[name] = *d;
  } else if (v.is_array()) {
    double sum = 0;
    size_t n = 0;
    for (size_t k = 0, count = v.size(); k < count; ++k) {
      if (!v[k].is_number()) continue;
      if (auto d = v[k].AsDouble(); d.ok()) {
        sum += *d;
        ++n;
      }
    }
    AddMean(sum, n, name, out);
  } else if (v.is_object() && depth < 2) {
    const size_t base = name.size();
    for (size_t k = 0, count = v.size(); k < count; ++k) {
      if (base > 0) name += '/';
      name += v.key(k);
      AddObservedMetric(v[k], name, depth + 1, out);
      name.resize(base);
    }
  }
}

// Fills `ref` from one result element; returns the first structural problem, "" when none.
std::string ReadResult(const RawJson& r, size_t i, core::ModelRef* ref) {
  // The path is built only for a problem: most results have none.
  const auto path = [i] { return Index("results", i); };
  if (!r.is_object()) return path() + ": expected an object, got " + r.type_name();
  std::string problem;
  for (auto [key, field] : {std::pair{"format", &ref->format}, std::pair{"url", &ref->url}}) {
    const RawJson* v = Member(r, key);
    if (v != nullptr && v->is_string()) {
      *field = v->string_value();
    } else if (problem.empty()) {
      problem = v == nullptr ? Join(path(), key) + ": missing"
                             : Join(path(), key) + ": expected a string, got " + v->type_name();
    }
  }
  // G2 (§H4.3): the devices a result names, when they are a list of strings. Otherwise left out:
  // a 2021 GM ignores the key (a v0.5+ GM drops the whole message, which is the GM's business:
  // the report is forwarded verbatim either way).
  if (const RawJson* devices = Member(r, "device_soc_versions");
      devices != nullptr && devices->is_array()) {
    std::vector<std::string> list;
    for (size_t k = 0; k < devices->size(); ++k) {
      if (!(*devices)[k].is_string()) {
        list.clear();
        break;
      }
      list.emplace_back((*devices)[k].string_value());
    }
    ref->devices = std::move(list);
  }
  if (const RawJson* metrics = Member(r, "metrics"); metrics != nullptr) {
    if (!metrics->is_object() && !metrics->is_null() && problem.empty()) {
      // The GM decodes metrics as a map; anything else would make it drop the condition.
      problem = Join(path(), "metrics") + ": expected an object, got " + metrics->type_name();
    }
  }
  return problem;
}

// Reads the JSON string at `*pos` of `text` as its raw (escaped) text, for the names
// IsInformationalFrame compares: a string with an escape is none of them, which "\\" says.
// nullopt when `text` ends before the string does.
std::optional<std::string_view> RawStringAt(std::string_view text, size_t* pos) {
  if (*pos >= text.size() || text[*pos] != '"') return std::nullopt;
  const size_t begin = *pos + 1;
  bool escaped = false;
  for (size_t i = begin; i < text.size(); ++i) {
    if (text[i] == '\\') {
      escaped = true;
      ++i;  // the escaped character (\uXXXX: its hex digits are no quotes)
    } else if (text[i] == '"') {
      *pos = i + 1;
      return escaped ? std::string_view("\\") : text.substr(begin, i - begin);
    }
  }
  return std::nullopt;
}

}  // namespace

bool IsInformationalReport(std::string_view kind, std::string_view status) {
  const bool stage = core::EqualsIgnoreCase(kind, "train") || core::EqualsIgnoreCase(kind, "eval");
  const bool done =
      core::EqualsIgnoreCase(status, "completed") || core::EqualsIgnoreCase(status, "failed");
  return !(stage && done);
}

namespace {

// Whether the forwarded content `text` (all of it, or its first bytes when `cut`) is informational
// (IsInformationalFrame); nullopt when `decisive` is false and the answer depends on bytes past
// `text`.
std::optional<bool> ClassifyContent(std::string_view text, bool cut, bool decisive) {
  // {"phase":<string>,"status":<string>,"output":{ : both encoders start so; only the forward
  // has an object there (EncodeStatusReport has "input" or "output":null).
  constexpr std::string_view kPhase = "{\"phase\":", kStatus = ",\"status\":",
                             kOutput = ",\"output\":{";
  // `lit` at `pos`: true, false, or nullopt when `text` ends inside a match.
  const auto literal_at = [&](size_t pos, std::string_view lit) -> std::optional<bool> {
    const std::string_view have = text.substr(std::min(pos, text.size()), lit.size());
    if (have == lit) return true;
    if (!decisive && have.size() < lit.size() && lit.substr(0, have.size()) == have) {
      return std::nullopt;
    }
    return false;
  };
  const std::optional<bool> unknown;
  size_t pos = 0;
  auto m = literal_at(pos, kPhase);
  if (!m || !*m) return m;
  pos += kPhase.size();
  auto phase = RawStringAt(text, &pos);
  if (!phase) return decisive ? std::optional<bool>(cut) : unknown;  // longer than the prefix
  m = literal_at(pos, kStatus);
  if (!m || !*m) return m;
  pos += kStatus.size();
  auto status = RawStringAt(text, &pos);
  if (!status) return decisive ? std::optional<bool>(cut) : unknown;
  m = literal_at(pos, kOutput);
  if (!m || !*m) return m;
  return IsInformationalReport(*phase, *status);
}

}  // namespace

bool IsInformationalFrame(std::string_view frame) {
  constexpr std::string_view kContentKey = "\"content\":\"";
  constexpr size_t kPrefixChars = 684;  // 513 bytes of content
  constexpr size_t kQuickChars = 128;   // 96 bytes: a train or eval report's phase and status
  const size_t at = frame.find(kContentKey);
  if (at == std::string_view::npos) return false;
  std::string_view b64 = frame.substr(at + kContentKey.size());
  b64 = b64.substr(0, std::min(b64.size(), b64.find('"')));
  if (b64.size() > kQuickChars) {
    if (auto quick = Base64Decode(b64.substr(0, kQuickChars)); quick.ok()) {
      if (auto v = ClassifyContent(*quick, /*cut=*/true, /*decisive=*/false)) return *v;
    }
  }
  const bool cut = b64.size() > kPrefixChars;
  auto content = Base64Decode(b64.substr(0, std::min(b64.size(), kPrefixChars)));
  if (!content.ok()) return false;
  return *ClassifyContent(*content, cut, /*decisive=*/true);
}

std::string ReportPhaseText(core::ReportPhase p, ReportSpelling spelling) {
  std::string t = core::ReportPhaseName(p);
  if (spelling == ReportSpelling::kIl) t[0] = static_cast<char>(t[0] - 'a' + 'A');
  return t;
}

std::string ReportStatusText(core::ReportStatus s, ReportSpelling spelling) {
  std::string t = core::ReportStatusName(s);
  if (spelling == ReportSpelling::kIl) t[0] = static_cast<char>(t[0] - 'a' + 'A');
  return t;
}

std::optional<core::ReportPhase> ParseReportPhase(std::string_view text) {
  for (auto p : {core::ReportPhase::kTrain, core::ReportPhase::kEval, core::ReportPhase::kDeploy}) {
    if (core::EqualsIgnoreCase(text, core::ReportPhaseName(p))) return p;
  }
  return std::nullopt;
}

std::optional<core::ReportStatus> ParseReportStatus(std::string_view text) {
  for (auto s :
       {core::ReportStatus::kReady, core::ReportStatus::kCompleted, core::ReportStatus::kFailed}) {
    if (core::EqualsIgnoreCase(text, core::ReportStatusName(s))) return s;
  }
  return std::nullopt;
}

std::string EncodeStatusReport(const core::StatusReport& report, ReportSpelling spelling) {
  std::string out = "{\"phase\":";
  AppendGoString(out, ReportPhaseText(report.phase, spelling));
  out += ",\"status\":";
  AppendGoString(out, ReportStatusText(report.status, spelling));
  if (report.has_input) {
    out += ",\"input\":{";
    bool first = true;
    if (!report.input_models.empty()) {
      first = false;
      out += "\"models\":[";
      for (size_t i = 0; i < report.input_models.size(); ++i) {
        if (i > 0) out += ',';
        out += '{';
        bool model_first = true;
        PutOmitEmpty(out, &model_first, "format", report.input_models[i].format);
        PutOmitEmpty(out, &model_first, "url", report.input_models[i].url);
        const std::vector<std::string>& devices = report.input_models[i].devices;
        if (!devices.empty()) {
          if (!model_first) out += ',';
          model_first = false;
          out += "\"device_soc_versions\":[";
          for (size_t d = 0; d < devices.size(); ++d) {
            if (d > 0) out += ',';
            AppendGoString(out, devices[d]);
          }
          out += ']';
        }
        out += '}';
      }
      out += ']';
    }
    PutOmitEmpty(out, &first, "dataURL", report.data_url);
    PutOmitEmpty(out, &first, "dataIndexURL", report.data_index_url);
    PutOmitEmpty(out, &first, "outputDir", report.output_dir);
    out += '}';
  }
  out += ",\"output\":null}";
  return out;
}

std::string EncodeDatasetStatus(int64_t number_of_samples) {
  return "{\"numberOfSamples\":" + std::to_string(number_of_samples) + "}";
}

Result<WorkerMessage> DecodeWorkerMessage(std::string_view body, ReportMetrics metrics) {
  auto parsed = RawJson::Parse(body, kMaxWorkerBodyValues);
  if (!parsed.ok()) return parsed.status();
  const RawJson& root = *parsed;
  if (!root.is_object()) return TypeError("body", "an object", root);
  WorkerMessage msg;
  core::WorkerReport& r = msg.report;
  for (auto [key, out] :
       {std::pair{"name", &r.worker_name}, std::pair{"namespace", &r.ns},
        std::pair{"ownerName", &r.owner_name}, std::pair{"ownerKind", &r.owner_kind},
        std::pair{"kind", &r.kind}, std::pair{"status", &r.status}}) {
    if (Status s = ReadString(root, key, "", out); !s.ok()) return s;
  }
  // Absent or "": no job of that name exists (the caller drops the report).
  if (!r.ns.empty()) {
    if (Status s = CheckNamespace("namespace", r.ns); !s.ok()) return s;
  }
  if (!r.owner_name.empty()) {
    if (Status s = CheckObjectName("ownerName", r.owner_name); !s.ok()) return s;
  }
  const RawJson* owner_info = nullptr;
  if (Status s = ReadObject(root, "ownerInfo", "", &owner_info); !s.ok()) return s;
  if (owner_info != nullptr) msg.owner_info = *owner_info;
  const RawJson* results = nullptr;
  if (Status s = ReadArray(root, "results", "", &results); !s.ok()) return s;
  if (results != nullptr) {
    msg.results = *results;
    r.results.resize(results->size());
    for (size_t i = 0; i < results->size(); ++i) {
      // Go decodes results into []map[string]interface{}: an element that is neither an object
      // nor null fails the decode (400); what is inside an object is free-form.
      const RawJson& el = (*results)[i];
      if (!el.is_object() && !el.is_null()) return TypeError(Index("results", i), "an object", el);
      std::string problem = ReadResult(el, i, &r.results[i]);
      if (r.results_error.empty()) r.results_error = std::move(problem);
    }
  }
  if (metrics == ReportMetrics::kDecode) DecodeReportMetrics(msg.results, r);
  return msg;
}

// internal::DecodeMetrics(m) into `metrics` and AddObservedMetric(m, "", 0, ...) into `observed`,
// in one pass over the members: a member that decodes to a Number or a List gives its observed
// number from that (the same value, and the same mean: the list holds every element, in order);
// any other member is read again as AddObservedMetric reads it.
void DecodeResultMetrics(const RawJson& m, core::Metrics& metrics, core::MetricNumbers& observed,
                         std::string& name) {
  metrics.reserve(m.size());
  observed.reserve(std::min(m.size(), core::kMaxObservedMetrics));
  for (size_t i = 0, count = m.size(); i < count; ++i) {
    const RawJson& v = m[i];
    core::MetricValue mv = internal::DecodeMetricValue(v);
    name.assign(m.key(i));
    if (observed.size() < core::kMaxObservedMetrics &&
        name.size() <= core::kMaxObservedMetricName) {
      if (mv.kind == core::MetricValue::Kind::kNumber) {
        if (std::isfinite(mv.number)) observed[name] = mv.number;
      } else if (mv.kind == core::MetricValue::Kind::kList) {
        double sum = 0;
        for (double d : mv.list) sum += d;
        AddMean(sum, mv.list.size(), name, observed);
      } else {
        AddObservedMetric(v, name, 1, observed);
      }
    }
    metrics[name] = std::move(mv);  // a later duplicate key wins, as in Go
  }
}

void DecodeReportMetrics(const RawJson& results, core::WorkerReport& report) {
  report.observed_metrics.assign(report.results.size(), {});
  std::string name;  // the metric names' buffer
  for (size_t i = 0; i < report.results.size() && i < results.size(); ++i) {
    const RawJson& el = results[i];
    const RawJson* m = el.is_object() ? Member(el, "metrics") : nullptr;
    if (m == nullptr || !m->is_object()) continue;
    report.results[i].metrics.clear();
    DecodeResultMetrics(*m, report.results[i].metrics, report.observed_metrics[i], name);
  }
}

void DropReportMetrics(core::WorkerReport& report) {
  for (core::ModelRef& m : report.results) core::Metrics().swap(m.metrics);
  std::vector<core::MetricNumbers>().swap(report.observed_metrics);
}

std::string WorkerNameIn(std::string_view body) {
  auto parsed = RawJson::Parse(body, kMaxWorkerBodyValues);
  if (!parsed.ok()) return "";
  const RawJson* name = parsed->Find("name");
  return name != nullptr && name->is_string() ? std::string(name->string_value()) : "";
}

std::string EncodeForwardedWorkerMessage(const WorkerMessage& msg) {
  std::string out;
  out.reserve(512);  // a typical eval report's forward is ~350 bytes
  out += "{\"phase\":";
  AppendGoString(out, msg.report.kind);
  out += ",\"status\":";
  AppendGoString(out, msg.report.status);
  out += ",\"output\":{\"models\":";
  if (msg.results.is_array()) {
    internal::AppendDump(msg.results, out);
  } else {
    out += "null";
  }
  out += ",\"ownerInfo\":";
  if (msg.owner_info && msg.owner_info->is_object()) {
    internal::AppendDump(*msg.owner_info, out);
  } else {
    out += "null";
  }
  out += "}}";
  return out;
}

Result<std::string> CondDataFromUpstreamContent(std::string_view content) {
  auto parsed = RawJson::Parse(content, kMaxWorkerBodyValues);
  if (!parsed.ok()) return parsed.status();
  const RawJson& root = *parsed;
  if (!root.is_object()) return TypeError("content", "an object", root);
  std::string unused;
  SEDNA_RETURN_IF_ERROR(ReadString(root, "phase", "", &unused));
  SEDNA_RETURN_IF_ERROR(ReadString(root, "status", "", &unused));
  std::string out = "{";
  bool first = true;
  const RawJson* input = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "input", "", &input));
  if (input != nullptr) {
    first = false;
    out += "\"input\":{";
    bool in_first = true;
    SEDNA_RETURN_IF_ERROR(AppendCondModels(*input, "input", out, &in_first));
    for (const char* key : {"dataURL", "dataIndexURL", "outputDir"}) {
      std::string value;
      SEDNA_RETURN_IF_ERROR(ReadString(*input, key, "input", &value));
      PutOmitEmpty(out, &in_first, key, value);
    }
    out += '}';
  }
  const RawJson* output = nullptr;
  SEDNA_RETURN_IF_ERROR(ReadObject(root, "output", "", &output));
  if (output != nullptr) {
    if (!first) out += ',';
    out += "\"output\":{";
    bool out_first = true;
    SEDNA_RETURN_IF_ERROR(AppendCondModels(*output, "output", out, &out_first));
    out += '}';
  }
  out += '}';
  return out;
}

std::string EncodeWorkerApiReply(int status, std::string_view message) {
  std::string out = "{\n \"Status\": " + std::to_string(status) + ",\n \"Message\": ";
  AppendGoString(out, message);
  out += "\n}";
  return out;
}

}  // namespace sedna::json
