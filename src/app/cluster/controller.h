// The controller: one loop thread (the io_context) owns every job, dataset and model. Adapters turn
// IO into events; each event goes to core::il::Step; the new state and the upstream frames it
// produces are committed to SQLite in one transaction before the step's actions run.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adapters/clock/system_clock.h"
#include "app/cluster/config.h"
#include "app/cluster/intake/upstream_sink.h"
#include "app/cluster/observation/dashboard_workers.h"
#include "core/clock.h"
#include "core/report.h"
#include "core/status.h"

namespace boost::asio {
class io_context;
}

namespace sedna::app {

// Checks a worker report's sender (e.g. "only the worker this LC started for that stage").
using ReportGate = std::function<Status(const core::WorkerReport& report)>;

class Controller {
 public:
  // Every time the controller reads comes from `clock` (core/clock.h), which must outlive it.
  Controller(boost::asio::io_context& io, Config config,
             const core::Clock& clock = clock::System());
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Opens the store, reloads every resource and job record, re-issues in-flight work, starts the
  // worker API, the status server and (when GM_ADDRESS is set) the GM link. Errors name the part.
  Status Start();
  // Stops servers and the GM link, waits for in-flight blocking work. Called on the loop thread.
  void Stop();

  uint16_t worker_port() const;
  uint16_t status_port() const;

  // Applies one GM→LC frame (what the GM link delivers). Public for tests and standalone mode.
  void OnGmFrame(const std::string& text);

  // Standalone mode: the outbox goes to `sink` instead of a GM link. Set before Start().
  void SetUpstreamSink(UpstreamSink* sink);
  // Sends outbox frames while the sink takes them (call when the sink becomes ready).
  void PumpOutbox();
  // Standalone mode: who may report. Asked for every decoded IL/LL worker report before it is
  // taken; an error is answered 400 with its message and nothing is forwarded. Set before Start().
  void SetReportGate(ReportGate gate);
  // Cluster mode: what the daemon logs when its first connect to the GM fails (`sedna-lc doctor`'s
  // checks up to TCP, one line each). Blocking: it runs on the pool. Set before Start().
  void SetGmDiagnosis(std::function<std::vector<std::string>()> diagnose);
  // Standalone mode: the local GM's workers, shown by the dashboard. Set before Start().
  void SetWorkersSource(WorkersSource workers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sedna::app
