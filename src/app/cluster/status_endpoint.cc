// The status server (status_endpoint.h).
#include "app/cluster/status_endpoint.h"

#include "adapters/http/http_server.h"

namespace sedna::app {

StatusEndpoint::StatusEndpoint(Context& ctx, const JobRunner& jobs, const ReportIntake& intake,
                               const Outbox& outbox)
    : ctx_(ctx), jobs_(jobs), intake_(intake), outbox_(outbox) {}
StatusEndpoint::~StatusEndpoint() = default;

Status StatusEndpoint::Start() {
  if (ctx_.cfg.status_port == 0) return Status::Ok();
  http::HttpServerOptions so;
  so.address = ctx_.cfg.status_address;
  so.port = ctx_.cfg.status_port;
  auto ss = http::HttpServer::Start(
      ctx_.io, so, [this](const http::HttpRequest& req) { return OnRequest(req); });
  if (!ss.ok()) return ss.status().With("status server (--status-port)");
  server_ = std::move(*ss);
  return Status::Ok();
}

void StatusEndpoint::Stop() {
  if (server_) server_->Stop();
}

uint16_t StatusEndpoint::port() const { return server_ ? server_->port() : 0; }

http::HttpResponse StatusEndpoint::OnRequest(const http::HttpRequest& req) {
  std::string path = req.target.substr(0, req.target.find('?'));
  if (path == "/healthz") return {200, "text/plain", "ok\n", {}};
  if (path == "/readyz") {
    const std::string why = ctx_.health.Reason();
    if (!why.empty()) return {503, "text/plain", "not ready: " + why + "\n", {}};
    return {200, "text/plain", "ready\n", {}};
  }
  if (path == "/metrics") {
    Metrics& m = ctx_.metrics;
    auto ob = ctx_.store->GetOutboxStats();
    m.outbox_count = ob.ok() ? ob->count : -1;
    m.outbox_bytes = ob.ok() ? ob->bytes : -1;
    m.gm_connected = outbox_.connected();
    m.jobs = static_cast<int64_t>(jobs_.size());
    m.reports_pending = static_cast<int64_t>(intake_.pending());
    return {200, "text/plain; version=0.0.4", RenderMetrics(m), {}};
  }
  if (path == "/status") {
    std::string body = EncodeStatusJson(jobs_.Views());
    if (gm_evidence_) {
      body = AddGmEvidenceToStatusJson(
          body, gm_evidence_->View(ctx_.cfg.gm_address, ctx_.cfg.gm_protocol));
    }
    return {200, "application/json", std::move(body), {}};
  }
  return {404, "text/plain", "404: Page Not Found", {}};
}

}  // namespace sedna::app
