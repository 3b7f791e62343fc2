// The workers the local GM started (worker_board.h).
#include "app/standalone/worker_board.h"

#include <chrono>

namespace sedna::app {

void WorkerBoard::Started(const std::string& ns, const std::string& job, const std::string& stage,
                          const std::string& name, const std::string& log_path) {
  WorkerView w;
  w.ns = ns;
  w.job = job;
  w.stage = stage;
  w.name = name;
  w.state = "running";
  w.log_path = log_path;
  w.started_ms = core::UnixMs(clock_);
  workers_.push_back(std::move(w));
  while (workers_.size() > kMaxWorkers) workers_.pop_front();
}

void WorkerBoard::Exited(const std::string& name, const std::string& state,
                         const std::string& how) {
  for (auto it = workers_.rbegin(); it != workers_.rend(); ++it) {
    if (it->name != name) continue;
    it->state = state;
    it->detail = how;
    it->exited_ms = core::UnixMs(clock_);
    return;
  }
}

std::vector<WorkerView> WorkerBoard::Views() const {
  return std::vector<WorkerView>(workers_.rbegin(), workers_.rend());
}

}  // namespace sedna::app
