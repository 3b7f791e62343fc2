// The workers the local GM started, as the dashboard shows them (dashboard_workers.h): job,
// stage, name, log file, running or how it ended. Bounded: the kMaxWorkers most recent ones.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "adapters/clock/system_clock.h"
#include "app/cluster/observation/dashboard_workers.h"
#include "core/clock.h"

namespace sedna::app {

// succeeded (exit 0), stopped (SIGTERM: the LC replaced or stopped it) or failed.
inline const char* ExitStateName(int exit_code, int signal, bool timed_out) {
  if (timed_out) return "failed";
  if (exit_code == 0) return "succeeded";
  return signal == 15 ? "stopped" : "failed";
}

class WorkerBoard {
 public:
  static constexpr size_t kMaxWorkers = 32;

  // Started and exited times are `clock`'s, which must outlive the board.
  explicit WorkerBoard(const core::Clock& clock = clock::System()) : clock_(clock) {}

  void Started(const std::string& ns, const std::string& job, const std::string& stage,
               const std::string& name, const std::string& log_path);
  // `state`: succeeded, failed or stopped (terminated by the LC); `how`: process::ExitInfo::error.
  void Exited(const std::string& name, const std::string& state, const std::string& how);
  // Newest first.
  std::vector<WorkerView> Views() const;

 private:
  const core::Clock& clock_;
  std::deque<WorkerView> workers_;  // oldest first
};

}  // namespace sedna::app
