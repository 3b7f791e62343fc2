// The status server (status_endpoint.h).
#include "app/cluster/observation/status_endpoint.h"

#include <boost/asio/post.hpp>

#include <cctype>
#include <chrono>

#include "adapters/http/http_server.h"
#include "app/cluster/observation/dashboard_page.h"
#include "app/cluster/observation/status_access.h"

namespace sedna::app {

StatusEndpoint::StatusEndpoint(Context& ctx, const JobRunner& jobs, const ReportIntake& intake,
                               const Outbox& outbox)
    : ctx_(ctx), jobs_(jobs), intake_(intake), outbox_(outbox) {}
StatusEndpoint::~StatusEndpoint() { *alive_ = false; }

Status StatusEndpoint::Start() {
  if (ctx_.cfg.status_port == 0) return Status::Ok();
  http::HttpServerOptions so;
  so.address = ctx_.cfg.status_address;
  so.port = ctx_.cfg.status_port;
  hosts_ = StatusHosts(ctx_.cfg.status_address, ctx_.cfg.status_allowed_hosts);
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
  if (auto refusal = RefuseStatusRequest(req, hosts_)) return std::move(*refusal);
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
    return {200,
            "text/plain; version=0.0.4",
            RenderMetrics(m) + RenderJobGauges(jobs_.Views(), jobs_.history().All()),
            {}};
  }
  if (path == "/status") {
    std::string body = EncodeStatusJson(jobs_.Views());
    if (gm_evidence_) {
      body = AddGmEvidenceToStatusJson(
          body, gm_evidence_->View(ctx_.cfg.gm_address, ctx_.cfg.gm_protocol));
    }
    return {200, "application/json", std::move(body), {}};
  }
  if (path == "/" || path == "/dashboard") {
    return {200,
            "text/html; charset=utf-8",
            std::string(DashboardPage()),
            {{"Cache-Control", "no-store"}}};
  }
  if (path == "/api/dashboard") return Dashboard();
  if (path == "/api/history") return History(req.target);
  return {404, "text/plain", "404: Page Not Found", {}};
}

namespace {

// `clock`'s steady (monotonic) or wall reading, in ms.
int64_t NowMs(const core::Clock& clock, bool steady) {
  using namespace std::chrono;
  if (steady) return duration_cast<milliseconds>(clock.Steady().time_since_epoch()).count();
  return core::UnixMs(clock);
}

constexpr size_t kLogTailBytes = 8 << 10;
constexpr size_t kMaxFilesRead = 64;  // log files and deploy targets per refresh

}  // namespace

// ?job=<ns>/<name> or ?job=<name>: the matching jobs' histories, as the store keeps them.
http::HttpResponse StatusEndpoint::History(const std::string& target) {
  std::string job;
  const auto q = target.find("?job=");
  if (q != std::string::npos) {
    const std::string raw = target.substr(q + 5, target.find('&', q) - q - 5);
    for (size_t i = 0; i < raw.size() && job.size() < 512; ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() &&
          std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
        job += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        job += raw[i] == '+' ? ' ' : raw[i];
      }
    }
  }
  const auto slash = job.find('/');
  const std::string ns = slash == std::string::npos ? "" : job.substr(0, slash);
  const std::string name = slash == std::string::npos ? job : job.substr(slash + 1);
  std::string body = "[";
  for (const auto& [key, h] : jobs_.history().All()) {
    if (h.name != name || (!ns.empty() && h.ns != ns)) continue;
    if (body.size() > 1) body += ",";
    body += EncodeJobHistory(h);
  }
  return {200, "application/json", body + "]\n", {{"Cache-Control", "no-store"}}};
}

http::HttpResponse StatusEndpoint::Dashboard() {
  std::vector<WorkerView> workers = workers_ ? workers_() : std::vector<WorkerView>();
  RefreshFiles(workers);
  const std::vector<JobView> views = jobs_.Views();
  DashboardInput in;
  in.jobs = &views;
  in.history = &jobs_.history().All();
  in.standalone = static_cast<bool>(workers_);
  in.gm_connected = outbox_.connected();
  in.workers = std::move(workers);
  in.files = &files_;
  in.now_ms = NowMs(ctx_.clock, false);
  return {200, "application/json", EncodeDashboardJson(in), {{"Cache-Control", "no-store"}}};
}

void StatusEndpoint::RefreshFiles(const std::vector<WorkerView>& workers) {
  const int64_t now = NowMs(ctx_.clock, true);
  if (files_reading_ || (files_read_ms_ != 0 && now - files_read_ms_ < 1000)) return;
  std::vector<std::string> logs, targets;
  for (const WorkerView& w : workers) {
    if (!w.log_path.empty() && logs.size() < kMaxFilesRead) logs.push_back(w.log_path);
  }
  for (const auto& [key, h] : jobs_.history().All()) {
    if (!h.deploy_target.empty() && targets.size() < kMaxFilesRead) {
      targets.push_back(h.deploy_target);
    }
  }
  files_reading_ = true;
  storage::Context sc;
  sc.rootfs = ctx_.cfg.rootfs;
  sc.staging_dir = ctx_.cfg.spool_dir + "/staging";  // the versions ledger beside it
  boost::asio::post(ctx_.pool, [this, alive = std::weak_ptr<bool>(alive_), logs, targets, sc] {
    auto files = std::make_shared<DashboardFiles>();
    for (const std::string& p : logs) files->log_tails[p] = ReadLogTail(p, kLogTailBytes);
    for (const std::string& t : targets) {
      if (t.rfind("s3://", 0) == 0) continue;  // S3 targets keep versions too; not listed here
      auto v = storage::ListModelVersions(sc, t);
      if (v.ok()) {
        files->versions[t] = std::move(*v);
      } else {
        files->version_errors[t] = v.message();
      }
    }
    boost::asio::post(ctx_.io, [this, alive, files] {
      auto a = alive.lock();
      if (!a || !*a) return;
      files_ = std::move(*files);
      files_reading_ = false;
      files_read_ms_ = NowMs(ctx_.clock, true);
    });
  });
}

}  // namespace sedna::app
