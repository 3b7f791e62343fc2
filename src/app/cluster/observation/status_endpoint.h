// The status server (--status-port, loopback by default): /healthz, /readyz, /metrics
// (Prometheus text, with per-job gauges), /status (every job's view, as `sedna-lc status` shows
// it), the dashboard page at / and /dashboard (dashboard_page.h) and the feed it polls,
// /api/dashboard (dashboard_feed.h), and /api/history?job=[ns/]name (what `sedna-lc status
// --history` shows: round_history.h records, as a JSON array). Only GET and HEAD, and only
// with a Host header naming this server (status_access.h): others get 405 / 421.
//
// Owns: the status HTTP server; the files the dashboard shows (worker log tails, kept model
//   versions), read on the pool at most once a second while the page polls, never on the loop.
// Calls, read-only: the store (outbox stats), the outbox (connected), the job runner (Views,
//   size, history), the report intake (pending), the shared counters, the GM evidence (/status
//   "gm"), the workers source.
// Called by: HTTP clients; the composition root (Start, Stop, port).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/cluster/context.h"
#include "app/cluster/intake/gm_evidence.h"
#include "app/cluster/intake/outbox.h"
#include "app/cluster/intake/report_intake.h"
#include "app/cluster/jobs/job_runner.h"
#include "app/cluster/observation/dashboard_feed.h"

namespace sedna::http {
class HttpServer;
struct HttpRequest;
struct HttpResponse;
}  // namespace sedna::http

namespace sedna::app {

class StatusEndpoint {
 public:
  StatusEndpoint(Context& ctx, const JobRunner& jobs, const ReportIntake& intake,
                 const Outbox& outbox);
  ~StatusEndpoint();

  // Listens on cfg.status_address:status_port; nothing when the port is 0. The error names
  // --status-port.
  Status Start();
  void Stop();
  uint16_t port() const;
  // /status then carries the evidence as "gm" (gm_evidence.h).
  void set_gm_evidence(const GmEvidence* e) { gm_evidence_ = e; }
  // Standalone: the local GM's workers, for the dashboard. Set before Start().
  void set_workers(WorkersSource workers) { workers_ = std::move(workers); }

 private:
  http::HttpResponse OnRequest(const http::HttpRequest& req);
  http::HttpResponse Dashboard();
  http::HttpResponse History(const std::string& target);
  // Reads the log tails and model versions on the pool when the last read is older than 1 s.
  void RefreshFiles(const std::vector<WorkerView>& workers);

  Context& ctx_;
  // The Host names served (status_access.h), from the configuration at Start().
  std::vector<std::string> hosts_;
  const JobRunner& jobs_;
  const ReportIntake& intake_;
  const Outbox& outbox_;
  const GmEvidence* gm_evidence_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
  WorkersSource workers_;
  DashboardFiles files_;
  int64_t files_read_ms_ = 0;
  bool files_reading_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sedna::app
