// Internal to the IL and LL jobs (il_stepper.h, ll_stepper.h): what one Step of either keeps while
// it runs (its spec, the time, the state it builds) and returns (actions and facts), and the log
// lines it adds. Not part of the core's interface.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/facts.h"
#include "core/il_job.h"
#include "core/report.h"

namespace sedna::core::internal {

// "worker <name> (<kind>, <status>)", a worker report's name in log lines, in one allocation (a
// report of an eval already decided logs with it each time).
inline std::string ReportWho(std::string_view worker, std::string_view kind,
                             std::string_view status) {
  std::string who;
  who.reserve(12 + worker.size() + kind.size() + status.size());  // 12: "worker ", " (", ", ", ")"
  who.append("worker ").append(worker).append(" (").append(kind).append(", ");
  who.append(status).append(")");
  return who;
}

// `StateT` has `std::string last_error` and the sample accounting of il::State (samples_seen,
// train_pending, eval_open), which both kinds keep alike.
template <class SpecT, class StateT>
struct StepperBase {
  const SpecT& spec;
  const il::Now& now;
  StateT s;
  std::vector<il::Action> actions;
  std::vector<Fact> facts;

  void Info(std::string t) { actions.push_back(il::Log{il::Log::Level::kInfo, std::move(t)}); }
  void Warn(std::string t) { actions.push_back(il::Log{il::Log::Level::kWarn, std::move(t)}); }
  void Error(std::string t) { actions.push_back(il::Log{il::Log::Level::kError, std::move(t)}); }
  // Records a blocking problem once: logged when it first appears or changes, not on every check.
  void Blocked(const std::string& t) {
    if (s.last_error != t) Warn(t);
    s.last_error = t;
  }

  // Whether a completed report's results can be used: not when they did not decode, are empty or
  // (with `every_url`) one names no url; each of those is logged as the report's rejection.
  bool ResultsUsable(const WorkerReport& r, const std::string& who, bool every_url) {
    std::string why;
    if (!r.results_error.empty()) {
      why = r.results_error;
    } else if (r.results.empty()) {
      why = "results: empty";
    }
    for (size_t i = 0; every_url && why.empty() && i < r.results.size(); ++i) {
      if (r.results[i].url.empty()) why = "results[" + std::to_string(i) + "].url: empty";
    }
    if (!why.empty()) Error(who + ": rejected: " + why);
    return why.empty();
  }

  // New samples in the job's spools: they join the pending train set and the open eval window.
  void OnIngested(const il::SamplesIngested& e) {
    s.samples_seen = e.samples_seen;
    s.train_pending.end = e.train_end;
    s.train_pending.count += e.train_added;
    s.eval_open.end = e.eval_end;
    s.eval_open.count += e.eval_added;
  }
};

}  // namespace sedna::core::internal
