// What the dashboard page (dashboard_page.h) polls, and the per-job /metrics gauges: both read the
// job views (status_view.h) and the round history (round_history.h), nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "adapters/storage/model_versions.h"
#include "app/cluster/observation/dashboard_workers.h"
#include "app/cluster/observation/round_history.h"
#include "app/cluster/observation/status_view.h"

namespace sedna::app {

// What is read off the loop (on the pool) for the page: the tail of each worker log and the kept
// versions of each deploy target.
struct DashboardFiles {
  std::map<std::string, std::string> log_tails;                        // log path -> its last bytes
  std::map<std::string, std::vector<storage::ModelVersion>> versions;  // deploy target -> kept
  std::map<std::string, std::string> version_errors;                   // deploy target -> why not
};

// Blocking (the pool): the last `max_bytes` of a file from the start of a line; "" when it
// cannot be read.
std::string ReadLogTail(const std::string& path, size_t max_bytes);

struct DashboardInput {
  const std::vector<JobView>* jobs = nullptr;
  const std::map<std::string, JobHistory>* history = nullptr;
  bool standalone = false;
  bool gm_connected = false;
  std::vector<WorkerView> workers;
  const DashboardFiles* files = nullptr;
  int64_t now_ms = 0;
};

// {"now":..,"gmConnected":..,"standalone":..,"jobs":[{...view, "history":{...}, "versions":[...]}],
//  "workers":[{..., "logTail":".."}]}; every string is valid UTF-8 (invalid bytes replaced).
std::string EncodeDashboardJson(const DashboardInput& in);

// Per-job Prometheus gauges: sedna_lc_job_round, sedna_lc_job_samples_waiting,
// sedna_lc_job_eval_metric{metric,model="new|deployed"} (the last evaluated round),
// sedna_lc_job_deploys_total, each labelled {job="ns/name",kind="IL|LL"}.
std::string RenderJobGauges(const std::vector<JobView>& jobs,
                            const std::map<std::string, JobHistory>& history);

// The history of the job `ns/name` (or `name` when unique) of kind `kind` ("" any), or nullptr.
const JobHistory* FindHistory(const std::map<std::string, JobHistory>& history,
                              const std::string& kind, const std::string& ns,
                              const std::string& name);

}  // namespace sedna::app
