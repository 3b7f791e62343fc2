// The standalone workers as the dashboard shows them: filled by the local GM (it knows the
// processes it started), read by the status endpoint through a WorkersSource.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sedna::app {

// A standalone worker process (the local GM's), for the dashboard.
struct WorkerView {
  std::string ns, job;  // the job's namespace and name
  std::string stage;    // train | eval | inference
  std::string name;     // WORKER_NAME
  std::string state;    // running | succeeded | failed | stopped (terminated by the LC)
  std::string detail;   // how it ended ("exit code 1", "timed out", ...)
  std::string log_path;
  int64_t started_ms = 0, exited_ms = 0;
};
// Called on the loop; must not block (the local GM answers from memory).
using WorkersSource = std::function<std::vector<WorkerView>()>;

}  // namespace sedna::app
