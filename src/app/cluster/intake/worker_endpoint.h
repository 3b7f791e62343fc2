// The worker API: POST /sedna/workers/{name}/info (§P3.5, Go-compatible replies). A report for an
// IL/LL job goes to the report intake (acknowledged once journaled); a message for a stored
// pass-through object is forwarded upstream.
//
// Owns: the worker HTTP server (BIND_PORT) and the kinds already warned about.
// Calls: the job runner (PrepareReport), the report intake (Accept), the early reports (holds,
//   Hold: a report for a job not known yet, or behind ones kept for it), the inbound queue
//   (RunNow: a pass-through forward is an event, after the acknowledged reports), the
//   pass-through objects
//   (ForwardWorkerMessage), the outbox (Full: 503 while it is over its bound).
// Called by: workers, over HTTP; the composition root (Start, Stop, port).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "app/cluster/context.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/early_reports.h"
#include "app/cluster/intake/outbox.h"
#include "app/cluster/intake/passthrough.h"
#include "app/cluster/intake/report_intake.h"
#include "app/cluster/jobs/job_runner.h"

namespace sedna::http {
class HttpServer;
struct HttpResponse;
}  // namespace sedna::http

namespace sedna::app {

class WorkerEndpoint {
 public:
  WorkerEndpoint(Context& ctx, JobRunner& jobs, ReportIntake& intake, InboundQueue& inbound,
                 Passthrough& passthrough, Outbox& outbox);
  ~WorkerEndpoint();

  // Listens on cfg.bind_address:bind_port. The error names BIND_PORT.
  Status Start();
  void Stop();
  uint16_t port() const;
  // Asked for each IL/LL report before it is taken (controller.h, ReportGate).
  void SetReportGate(std::function<Status(const core::WorkerReport&)> gate) {
    gate_ = std::move(gate);
  }

  // Reports for IL/LL jobs not known yet are kept there (early_reports.h); unset: dropped.
  void SetEarlyReports(EarlyReports* early) { early_ = early; }

  // One worker message: `path_name` from the URL, `body` as received.
  http::HttpResponse OnWorkerMessage(std::string_view path_name, std::string_view body);

 private:
  http::HttpResponse KeepEarly(const core::WorkerReport& rep, std::string_view worker,
                               std::string_view body, const std::string& key);
  Context& ctx_;
  JobRunner& jobs_;
  ReportIntake& intake_;
  InboundQueue& inbound_;
  Passthrough& passthrough_;
  Outbox& outbox_;
  std::unique_ptr<http::HttpServer> server_;
  std::set<std::string> warned_kinds_;
  std::function<Status(const core::WorkerReport&)> gate_;
  EarlyReports* early_ = nullptr;
  struct DropLog {  // connections the server closed unanswered, per http::DropReason
    int64_t count = 0;
    std::chrono::steady_clock::time_point logged;
  };
  DropLog drops_[2];  // http::kDropReasons
};

}  // namespace sedna::app
