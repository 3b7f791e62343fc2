// The status server (--status-port, loopback by default): /healthz, /readyz, /metrics
// (Prometheus text) and /status (every job's view, as `sedna-lc status` shows it).
//
// Owns: the status HTTP server.
// Calls, read-only: the store (outbox stats), the outbox (connected), the job runner (Views,
//   size), the report intake (pending), the shared counters, the GM evidence (/status "gm").
// Called by: HTTP clients; the composition root (Start, Stop, port).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "app/cluster/context.h"
#include "app/cluster/gm_evidence.h"
#include "app/cluster/job_runner.h"
#include "app/cluster/outbox.h"
#include "app/cluster/report_intake.h"

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

 private:
  http::HttpResponse OnRequest(const http::HttpRequest& req);

  Context& ctx_;
  const JobRunner& jobs_;
  const ReportIntake& intake_;
  const Outbox& outbox_;
  const GmEvidence* gm_evidence_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace sedna::app
