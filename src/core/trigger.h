// Train and deploy triggers (docs/protocol.md §P6, design-notes §D4): a CR TriggerSpec is validated
// and compiled once, when the job is loaded; evaluation is then a pure function of the stats and
// the caller-supplied time of day.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/resources.h"
#include "core/status.h"

namespace sedna::core {

enum class CompareOp { kGt, kGe, kEq, kNe, kLe, kLt };

// `name` or `name[index]`, e.g. "precision_delta[1]".
struct MetricRef {
  std::string name;
  std::optional<size_t> index;
  bool operator==(const MetricRef&) const = default;
};

// Inclusive window in minutes of the day, each in [0, 1440] (1440 = "24:00", end of day).
// start > end means the window crosses midnight.
struct TimeWindow {
  int start_minute;
  int end_minute;
  bool operator==(const TimeWindow&) const = default;
};

struct Trigger {
  int64_t check_period_seconds = 60;  // default 60 when absent
  std::optional<TimeWindow> window;
  CompareOp op = CompareOp::kGt;
  double threshold = 0;
  MetricRef metric;
  std::string text;  // human readable, e.g. "num_of_samples > 500 during 02:00-24:00"
};

// Two values closer than this compare equal (Sedna's isEqual).
inline constexpr double kTriggerEqualTolerance = 1e-6;
inline constexpr int64_t kDefaultCheckPeriodSeconds = 60;

// Validates and compiles a CR trigger. The error names the field and what was expected, e.g.
// `condition.operator: unknown operator "~" (expected one of >, >=, =, ==, !=, <=, <, gt, ge, eq,
// ne, le, lt)`, `condition.metric: "p[1": missing "]"`, `timer.start: "25:00" is not a time HH:MM
// (00:00-24:00)`, `checkPeriodSeconds: must be > 0, got -5`. The first invalid field is reported.
Result<Trigger> CompileTrigger(const TriggerSpec& spec);

struct TriggerDecision {
  bool fired = false;
  std::string reason;  // always filled: why it fired or why not, including the compared value
};

// Fires iff the condition holds and, when a window is set, minute_of_day lies inside it.
// minute_of_day: local time of day in minutes, [0, 1439], supplied by the caller.
TriggerDecision EvaluateTrigger(const Trigger& t, const Metrics& stats, int minute_of_day);
// EvaluateTrigger(...).fired without its reason: for the steppers' check at every step.
bool TriggerFires(const Trigger& t, const Metrics& stats, int minute_of_day);

// The value a condition compares: a number is itself; a list with an index is that element; a
// bare list is its mean. A missing metric, an index on a number, an index out of range, an empty
// list, a kOther value or a NaN result is an error naming the metric.
Result<double> ResolveMetric(const MetricRef& ref, const Metrics& stats);

// IL deploy stats (§P6.4) from the eval metrics of the new model and of the deployed model. For
// every key k of new_model: stats[k] = new_model[k], and stats[k + "_delta"] = new - old for two
// numbers, or the elementwise difference for two lists of equal length. When the deployed model
// lacks k, has another kind or another length, k is kOther, or new_model itself reports
// k + "_delta", no delta is computed for k and a note says why. Never fails.
struct DeployStats {
  Metrics stats;
  std::vector<std::string> notes;
};
DeployStats BuildDeployStats(const Metrics& new_model, const Metrics& deployed_model);

// --- Building blocks, exposed for tests and for callers that render triggers. ---

// Exact spellings >, >=, =, ==, !=, <=, <, gt, ge, eq, ne, le, lt; surrounding whitespace ignored.
std::optional<CompareOp> ParseCompareOp(std::string_view s);
// The canonical symbol: ">", ">=", "==", "!=", "<=", "<".
const char* CompareOpSymbol(CompareOp op);
// Sedna's comparison with the kTriggerEqualTolerance equality.
bool CompareValues(CompareOp op, double value, double threshold);

// Parses `name` or `name[i]` (whitespace allowed around name and i; i a non-negative decimal).
// The error text does not carry the field name.
Result<MetricRef> ParseMetricRef(std::string_view s);
// "name" or "name[i]".
std::string FormatMetricRef(const MetricRef& ref);

// Parses "HH:MM" or "H:MM" (hours 0-23, minutes 00-59) or "24:00" into minutes [0, 1440];
// surrounding whitespace ignored. The error text does not carry the field name.
Result<int> ParseTimeOfDay(std::string_view s);
// Zero-padded "HH:MM"; 1440 gives "24:00".
std::string FormatTimeOfDay(int minute);
// Inclusive at minute granularity; a window with start > end crosses midnight.
bool InTimeWindow(const TimeWindow& w, int minute_of_day);

}  // namespace sedna::core
