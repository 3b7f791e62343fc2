#include "core/trigger.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace sedna::core {
namespace {

constexpr const char* kOperatorList = ">, >=, =, ==, !=, <=, <, gt, ge, eq, ne, le, lt";
constexpr int kMinutesPerDay = 1440;
constexpr size_t kMaxListedMetricNames = 10;

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A double-quoted rendering of user text with quotes, backslashes and control bytes escaped.
std::string Quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// As people write numbers: at most 12 significant digits ("500", "0.125", "0.03344" for
// 0.033440000000000004, "1e+21", "nan"); a decision reason is read by people, not parsed.
std::string FormatNumber(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 12);
  if (r.ec != std::errc()) return "?";
  return std::string(buf, r.ptr);
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string ReportedNames(const Metrics& stats) {
  if (stats.empty()) return "no metrics reported";
  std::string out = "reported: ";
  size_t i = 0;
  for (const auto& [name, value] : stats) {
    if (i == kMaxListedMetricNames) {
      out += ", ...";
      break;
    }
    if (i > 0) out += ", ";
    out += name;
    ++i;
  }
  return out;
}

// Mean without overflow for finite inputs whose plain sum would overflow.
double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  const double n = static_cast<double>(v.size());
  if (std::isfinite(sum)) return sum / n;
  double scaled = 0;
  for (double x : v) scaled += x / n;
  return scaled;
}

std::string WindowText(const TimeWindow& w) {
  return FormatTimeOfDay(w.start_minute) + "-" + FormatTimeOfDay(w.end_minute);
}

}  // namespace

std::optional<CompareOp> ParseCompareOp(std::string_view s) {
  s = Trim(s);
  if (s == ">" || s == "gt") return CompareOp::kGt;
  if (s == ">=" || s == "ge") return CompareOp::kGe;
  if (s == "=" || s == "==" || s == "eq") return CompareOp::kEq;
  if (s == "!=" || s == "ne") return CompareOp::kNe;
  if (s == "<=" || s == "le") return CompareOp::kLe;
  if (s == "<" || s == "lt") return CompareOp::kLt;
  return std::nullopt;
}

const char* CompareOpSymbol(CompareOp op) {
  switch (op) {
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
    case CompareOp::kEq:
      return "==";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kLt:
      return "<";
  }
  return "?";
}

bool CompareValues(CompareOp op, double value, double threshold) {
  const bool equal = std::fabs(value - threshold) < kTriggerEqualTolerance;
  switch (op) {
    case CompareOp::kGt:
      return !equal && value > threshold;
    case CompareOp::kGe:
      return equal || value >= threshold;
    case CompareOp::kEq:
      return equal;
    case CompareOp::kNe:
      return !equal;
    case CompareOp::kLe:
      return equal || value <= threshold;
    case CompareOp::kLt:
      return !equal && value < threshold;
  }
  return false;
}

Result<MetricRef> ParseMetricRef(std::string_view input) {
  const std::string_view s = Trim(input);
  const std::string q = Quote(input);
  if (s.empty()) {
    return Result<MetricRef>::Error(
        "empty (expected a metric name such as num_of_samples or precision_delta[0])");
  }
  const size_t open = s.find('[');
  if (open == std::string_view::npos) {
    if (s.find(']') != std::string_view::npos) {
      return Result<MetricRef>::Error(q + ": unexpected \"]\" without \"[\"");
    }
    return MetricRef{std::string(s), std::nullopt};
  }
  const std::string_view name = Trim(s.substr(0, open));
  if (name.empty()) {
    return Result<MetricRef>::Error(q + ": missing metric name before \"[\"");
  }
  if (name.find(']') != std::string_view::npos) {
    return Result<MetricRef>::Error(q + ": unexpected \"]\" before \"[\"");
  }
  const size_t close = s.find(']', open + 1);
  if (close == std::string_view::npos) {
    return Result<MetricRef>::Error(q + ": missing \"]\"");
  }
  const std::string_view rest = s.substr(close + 1);
  if (!rest.empty()) {
    return Result<MetricRef>::Error(q + ": unexpected " + Quote(rest) +
                                    " after \"]\" (expected name or name[index])");
  }
  const std::string_view raw_index = s.substr(open + 1, close - open - 1);
  const std::string_view index = Trim(raw_index);
  if (index.empty()) {
    return Result<MetricRef>::Error(q + ": empty index (expected a non-negative integer)");
  }
  size_t value = 0;
  for (char c : index) {
    if (!IsDigit(c)) {
      return Result<MetricRef>::Error(q + ": index " + Quote(raw_index) +
                                      " is not a non-negative integer");
    }
  }
  const auto r = std::from_chars(index.data(), index.data() + index.size(), value);
  if (r.ec != std::errc() || r.ptr != index.data() + index.size()) {
    return Result<MetricRef>::Error(q + ": index " + Quote(raw_index) + " is too large");
  }
  return MetricRef{std::string(name), value};
}

std::string FormatMetricRef(const MetricRef& ref) {
  if (!ref.index) return ref.name;
  return ref.name + "[" + std::to_string(*ref.index) + "]";
}

Result<int> ParseTimeOfDay(std::string_view input) {
  const std::string_view s = Trim(input);
  const auto bad = [&] {
    return Result<int>::Error(Quote(input) + " is not a time HH:MM (00:00-24:00)");
  };
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon < 1 || colon > 2 || s.size() != colon + 3) {
    return bad();
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (i != colon && !IsDigit(s[i])) return bad();
  }
  int hours = 0;
  for (size_t i = 0; i < colon; ++i) hours = hours * 10 + (s[i] - '0');
  const int minutes = (s[colon + 1] - '0') * 10 + (s[colon + 2] - '0');
  if (hours == 24 && minutes == 0) return kMinutesPerDay;
  if (hours > 23 || minutes > 59) return bad();
  return hours * 60 + minutes;
}

std::string FormatTimeOfDay(int minute) {
  const int h = minute / 60;
  const int m = minute % 60;
  std::string out;
  if (h < 10) out += '0';
  out += std::to_string(h);
  out += ':';
  if (m < 10) out += '0';
  out += std::to_string(m);
  return out;
}

bool InTimeWindow(const TimeWindow& w, int minute_of_day) {
  if (w.start_minute <= w.end_minute) {
    return w.start_minute <= minute_of_day && minute_of_day <= w.end_minute;
  }
  return minute_of_day >= w.start_minute || minute_of_day <= w.end_minute;
}

Result<Trigger> CompileTrigger(const TriggerSpec& spec) {
  Trigger t;
  if (spec.check_period_seconds) {
    if (*spec.check_period_seconds <= 0) {
      return Result<Trigger>::Error("checkPeriodSeconds: must be > 0, got " +
                                    std::to_string(*spec.check_period_seconds));
    }
    t.check_period_seconds = *spec.check_period_seconds;
  } else {
    t.check_period_seconds = kDefaultCheckPeriodSeconds;
  }

  if (spec.timer) {
    auto start = ParseTimeOfDay(spec.timer->start);
    if (!start) return start.status().With("timer.start");
    auto end = ParseTimeOfDay(spec.timer->end);
    if (!end) return end.status().With("timer.end");
    t.window = TimeWindow{*start, *end};
  }

  if (Trim(spec.op).empty()) {
    return Result<Trigger>::Error(std::string("condition.operator: empty (expected one of ") +
                                  kOperatorList + ")");
  }
  const auto op = ParseCompareOp(spec.op);
  if (!op) {
    return Result<Trigger>::Error("condition.operator: unknown operator " + Quote(spec.op) +
                                  " (expected one of " + kOperatorList + ")");
  }
  t.op = *op;

  if (!std::isfinite(spec.threshold)) {
    return Result<Trigger>::Error("condition.threshold: must be a finite number, got " +
                                  FormatNumber(spec.threshold));
  }
  t.threshold = spec.threshold;

  auto metric = ParseMetricRef(spec.metric);
  if (!metric) return metric.status().With("condition.metric");
  t.metric = std::move(metric).value();

  t.text =
      FormatMetricRef(t.metric) + " " + CompareOpSymbol(t.op) + " " + FormatNumber(t.threshold);
  if (t.window) t.text += " during " + WindowText(*t.window);
  return t;
}

Result<double> ResolveMetric(const MetricRef& ref, const Metrics& stats) {
  // Built only for an error: a trigger is resolved at every step of a waiting job.
  const auto label = [&ref] { return "metric " + Quote(FormatMetricRef(ref)); };
  const auto it = stats.find(ref.name);
  if (it == stats.end()) {
    return Result<double>::Error(label() + ": not reported (" + ReportedNames(stats) + ")");
  }
  const MetricValue& mv = it->second;
  double value = 0;
  switch (mv.kind) {
    case MetricValue::Kind::kNumber:
      if (ref.index) {
        return Result<double>::Error(label() + ": " + Quote(ref.name) +
                                     " is a number, not a list, so it cannot be indexed");
      }
      value = mv.number;
      break;
    case MetricValue::Kind::kList:
      if (ref.index) {
        if (*ref.index >= mv.list.size()) {
          return Result<double>::Error(label() + ": index " + std::to_string(*ref.index) +
                                       " out of range (list has " +
                                       Plural(mv.list.size(), "value", "values") + ")");
        }
        value = mv.list[*ref.index];
      } else {
        if (mv.list.empty()) {
          return Result<double>::Error(label() + ": empty list has no mean");
        }
        value = Mean(mv.list);
      }
      break;
    case MetricValue::Kind::kOther:
      return Result<double>::Error(label() + ": not a number or a list of numbers");
  }
  if (std::isnan(value)) return Result<double>::Error(label() + ": value is NaN");
  return value;
}

bool TriggerFires(const Trigger& t, const Metrics& stats, int minute_of_day) {
  const auto value = ResolveMetric(t.metric, stats);
  if (!value || !CompareValues(t.op, *value, t.threshold)) return false;
  return !t.window || InTimeWindow(*t.window, minute_of_day);
}

TriggerDecision EvaluateTrigger(const Trigger& t, const Metrics& stats, int minute_of_day) {
  bool condition_holds = false;
  std::string condition_text;
  const auto value = ResolveMetric(t.metric, stats);
  if (value) {
    condition_holds = CompareValues(t.op, *value, t.threshold);
    condition_text = FormatMetricRef(t.metric) + " = " + FormatNumber(*value);
    if (!t.metric.index) {
      const auto it = stats.find(t.metric.name);
      if (it != stats.end() && it->second.kind == MetricValue::Kind::kList) {
        condition_text += " (mean of " + Plural(it->second.list.size(), "value", "values") + ")";
      }
    }
    condition_text += condition_holds ? " " : ", not ";
    condition_text += std::string(CompareOpSymbol(t.op)) + " " + FormatNumber(t.threshold);
  } else {
    condition_text = value.message();
  }

  bool window_holds = true;
  std::string window_text;
  if (t.window) {
    window_holds = InTimeWindow(*t.window, minute_of_day);
    window_text = "now " + FormatTimeOfDay(minute_of_day) +
                  (window_holds ? " within " : " outside ") + WindowText(*t.window);
  }

  TriggerDecision d;
  d.fired = condition_holds && window_holds;
  d.reason = d.fired ? "fired: " : "not fired: ";
  // The failing part first, so the reason reads as the cause.
  if (!window_holds && condition_holds) {
    d.reason += window_text + "; " + condition_text;
  } else {
    d.reason += condition_text;
    if (!window_text.empty()) d.reason += "; " + window_text;
  }
  return d;
}

DeployStats BuildDeployStats(const Metrics& new_model, const Metrics& deployed_model) {
  DeployStats out;
  out.stats = new_model;
  for (const auto& [key, nv] : new_model) {
    const std::string delta_key = key + "_delta";
    const std::string q = Quote(key);
    if (new_model.count(delta_key)) {
      out.notes.push_back("metric " + q + ": the new model reports " + Quote(delta_key) +
                          " itself; it is kept and no delta is computed");
      continue;
    }
    if (nv.kind == MetricValue::Kind::kOther) {
      out.notes.push_back("metric " + q +
                          ": not a number or a list of numbers; copied, no delta computed");
      continue;
    }
    const auto old = deployed_model.find(key);
    if (old == deployed_model.end()) {
      out.notes.push_back("metric " + q +
                          ": not reported for the deployed model; no delta computed");
      continue;
    }
    const MetricValue& ov = old->second;
    if (ov.kind != nv.kind) {
      out.notes.push_back("metric " + q + ": the new model reports " +
                          (nv.kind == MetricValue::Kind::kNumber ? "a number" : "a list") +
                          ", the deployed model does not; no delta computed");
      continue;
    }
    if (nv.kind == MetricValue::Kind::kNumber) {
      out.stats[delta_key] = MetricValue::Number(nv.number - ov.number);
      continue;
    }
    if (nv.list.size() != ov.list.size()) {
      out.notes.push_back("metric " + q + ": the new model reports " +
                          Plural(nv.list.size(), "value", "values") + ", the deployed model " +
                          std::to_string(ov.list.size()) + "; no delta computed");
      continue;
    }
    std::vector<double> delta(nv.list.size());
    for (size_t i = 0; i < delta.size(); ++i) delta[i] = nv.list[i] - ov.list[i];
    out.stats[delta_key] = MetricValue::List(std::move(delta));
  }
  return out;
}

}  // namespace sedna::core
