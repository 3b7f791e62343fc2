// What a job step tells the observers (the round history, the dashboard, /metrics), as values:
// the IL and LL Step return these facts next to their actions. A fact describes what the step did
// or decided; it asks for nothing and changes nothing (actions do). Observers read facts only,
// never the text of the step's log lines.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/report.h"

namespace sedna::core {

// The train trigger fired for train round (IL) or version (LL) `round`, on `samples` train
// samples (the ones the round's train file gets); `reason` is the trigger's ("fired:
// num_of_samples = 600 > 500"). Fires again for the same round after a failed write.
struct TrainTriggerFired {
  int64_t round = 0;
  int64_t samples = 0;
  std::string reason;
  bool operator==(const TrainTriggerFired&) const = default;
};

// The step sent (or sent again, by a lost-answer rule) a status report about `round` (0: not
// known to the step); data_url and output_dir as in the report.
struct ReportSent {
  int64_t round = 0;
  ReportPhase phase = ReportPhase::kTrain;
  ReportStatus status = ReportStatus::kReady;
  std::string data_url;
  std::string output_dir;
  bool operator==(const ReportSent&) const = default;
};

// A train or eval worker's completed or failed report reached the job (whether or not this LC
// awaited it: an eval another node's LC dispatched counts too). On completion: the first result's
// URL and every result's metrics as numbers (WorkerReport::observed_metrics: for eval, [0] is the
// new model's, [1] the deployed one's).
struct StageReported {
  int64_t round = 0;                        // 0: not known to the step (the latest round)
  ReportPhase stage = ReportPhase::kTrain;  // kTrain or kEval
  bool completed = false;                   // false: failed
  std::string model_url;
  std::vector<MetricNumbers> metrics;
  bool operator==(const StageReported&) const = default;
};

enum class DecisionKind {
  kDeploy,       // the new model is deployed (copied, or hot-updated)
  kKept,         // the deploy trigger did not fire: the deployed model stays
  kNotDeployed,  // no decision could be computed (no eval result, no model known, ...)
};

// The deploy decision of `round`. `reason` is the trigger's or why none could be computed;
// new_metrics / deployed_metrics the eval results it compared (empty when none); copy_to the
// model the deploy copies over (a cold deploy: the deploy target; empty otherwise).
struct DeployDecided {
  int64_t round = 0;
  DecisionKind kind = DecisionKind::kKept;
  std::string reason;
  MetricNumbers new_metrics;
  MetricNumbers deployed_metrics;
  std::string copy_to;
  bool operator==(const DeployDecided&) const = default;
};

using Fact = std::variant<TrainTriggerFired, ReportSent, StageReported, DeployDecided>;

}  // namespace sedna::core
