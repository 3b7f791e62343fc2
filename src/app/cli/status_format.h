// How `sedna-lc status` prints what status_view.h gathers: numbers as people write them, and the
// wide table (-o wide).
#pragma once

#include <string>
#include <vector>

#include "app/cluster/observation/round_history.h"
#include "app/cluster/observation/status_view.h"

namespace sedna::app {

// Rewrites each standalone decimal number with more than 12 significant digits in `text` to its
// 12-digit form ("0.033440000000000004" -> "0.03344"): the noise of binary floating point in
// decision texts. Numbers inside words or paths ("model_0.123...", "v1.2") are left alone.
std::string HumanNumbers(const std::string& text);
// The views with HumanNumbers applied to their texts (decision and error).
std::vector<JobView> HumanViews(std::vector<JobView> jobs);
// Every field of each job, one line per job, aligned columns.
std::string RenderWideTable(const std::vector<JobView>& jobs);

// `job` is "namespace/name" or "name".
bool HistoryMatches(const JobHistory& h, const std::string& job);
// /api/history's answer: a JSON array of round_history.h records. Errors name the element.
Result<std::vector<JobHistory>> DecodeHistories(const std::string& text);
// `sedna-lc status --history JOB`: the job's triggers, then one line per round, oldest first
// (samples, trigger fired, train and eval with durations, metrics new | deployed, decision).
std::string RenderHistoryTable(const JobHistory& h);

}  // namespace sedna::app
