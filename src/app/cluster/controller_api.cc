// Controller::Impl, the HTTP surface: the worker API (POST /sedna/workers/{name}/info: reports
// step their job and are forwarded upstream) and the status server (/healthz, /readyz, /metrics,
// /status).
#include "app/cluster/controller_impl.h"

#include <spdlog/spdlog.h>

#include "adapters/http/http_server.h"
#include "adapters/http/worker_api.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"

namespace sedna::app {

Status Controller::Impl::StartServers() {
  http::HttpServerOptions wo;
  wo.address = cfg.bind_address;
  wo.port = cfg.bind_port;
  wo.on_rejected = [](int status, const std::string& target) {
    spdlog::warn("worker API: request {} rejected with {} (body over the limit or malformed)",
                 target.empty() ? std::string("(unparsed)") : target, status);
  };
  auto ws = http::HttpServer::Start(io, wo, [this](const http::HttpRequest& req) {
    http::HttpResponse r =
        http::RouteWorkerApi(req, [this](std::string_view name, std::string_view body) {
          return OnWorkerMessage(name, body);
        });
    if (r.status == 404 || r.status == 405 || r.status == 406 || r.status == 415) {
      auto ct = req.headers.find("content-type");
      spdlog::warn("worker API: {} {} rejected with {} (Content-Type: {})", req.method, req.target,
                   r.status, ct == req.headers.end() ? "-" : ct->second);
    }
    return r;
  });
  if (!ws.ok()) return ws.status().With("worker API (BIND_PORT)");
  worker_server = std::move(*ws);
  if (cfg.status_port != 0) {
    http::HttpServerOptions so2;
    so2.address = cfg.status_address;
    so2.port = cfg.status_port;
    auto ss = http::HttpServer::Start(
        io, so2, [this](const http::HttpRequest& req) { return OnStatusRequest(req); });
    if (!ss.ok()) return ss.status().With("status server (--status-port)");
    status_server = std::move(*ss);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- worker API

http::HttpResponse Controller::Impl::OnWorkerMessage(std::string_view path_name,
                                                     std::string_view body) {
  metrics.worker_posts++;
  auto m = json::DecodeWorkerMessage(body);
  const std::string body_name = m.ok() ? m->report.worker_name : json::WorkerNameIn(body);
  if (!m.ok() || body_name != path_name) {
    std::string msg = "worker name(name=" + std::string(path_name) +
                      ") in the api is different from that(name=" + body_name +
                      ") in the message body";
    if (!m.ok()) {
      spdlog::warn("worker {}: message rejected: {}", path_name, m.message());
      msg += ": " + m.message();
    } else {
      spdlog::warn("worker {}: message rejected: {}", path_name, msg);
    }
    return {400, "application/json", json::EncodeWorkerApiReply(400, msg), {}};
  }
  const auto& rep = m->report;
  if (OutboxFull()) {
    spdlog::warn("worker {}: report refused with 503: the outbox is full (GM unreachable?)",
                 rep.worker_name);
    return {503,
            "application/json",
            json::EncodeWorkerApiReply(503, "the LC's outbox is full; retry later"),
            {}};
  }
  if (rep.owner_kind == core::kKindIlJob || rep.owner_kind == core::kKindLlJob) {
    const std::string key = core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name);
    auto it = jobs.find(key);
    if (it == jobs.end()) {
      spdlog::warn("worker {}: message for unknown {} {}/{} dropped", rep.worker_name,
                   rep.owner_kind, rep.ns, rep.owner_name);
    } else {
      JobEntry& e = *it->second;
      std::string fwd = JobFrame(e, json::EncodeForwardedWorkerMessage(*m));
      spdlog::info("{} {}: worker {} reported {} {}", e.object_kind(), e.name(), rep.worker_name,
                   rep.kind, rep.status);
      if (!AcceptReport(e, path_name, body, rep, std::move(fwd))) {
        return {500,
                "application/json",
                json::EncodeWorkerApiReply(500, "could not persist the message; retry"),
                {}};
      }
    }
  } else if (rep.owner_kind == core::kKindJointInference ||
             rep.owner_kind == core::kKindFederated) {
    const std::string key = core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name);
    if (!passthrough.count(key)) {
      spdlog::warn("worker {}: message for unknown {} dropped", rep.worker_name, key);
    } else {
      std::string fwd = json::EncodeFrame({rep.ns, rep.owner_kind, rep.owner_name, "status"},
                                          json::EncodeForwardedWorkerMessage(*m));
      if (!FlushReports()) {  // the outbox keeps arrival order
        return {500,
                "application/json",
                json::EncodeWorkerApiReply(500, "could not persist the message; retry"),
                {}};
      }
      Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
        auto id = tx.OutboxAppend(fwd);
        return id.ok() ? Status::Ok() : id.status();
      });
      if (!s.ok()) {
        spdlog::error("{}: forwarding worker {}: {}", key, rep.worker_name, s.message());
        return {500,
                "application/json",
                json::EncodeWorkerApiReply(500, "could not persist the message; retry"),
                {}};
      }
      PostPump();
    }
  } else {
    WarnKindOnce("worker:" + rep.owner_kind,
                 "worker messages for ownerKind \"" + rep.owner_kind +
                     "\" are not handled by this build; accepted and dropped");
  }
  return {200, "application/json", json::EncodeWorkerApiReply(200, "OK"), {}};
}

// ---------------------------------------------------------------- status server

http::HttpResponse Controller::Impl::OnStatusRequest(const http::HttpRequest& req) {
  std::string path = req.target.substr(0, req.target.find('?'));
  if (path == "/healthz") return {200, "text/plain", "ok\n", {}};
  if (path == "/readyz") return {200, "text/plain", "ready\n", {}};
  if (path == "/metrics") {
    auto ob = store->GetOutboxStats();
    metrics.outbox_count = ob.ok() ? ob->count : -1;
    metrics.outbox_bytes = ob.ok() ? ob->bytes : -1;
    metrics.gm_connected = sink && sink->connected();
    metrics.jobs = static_cast<int64_t>(jobs.size());
    metrics.reports_pending = static_cast<int64_t>(reports_pending.size());
    return {200, "text/plain; version=0.0.4", RenderMetrics(metrics), {}};
  }
  if (path == "/status") return {200, "application/json", RenderStatus(), {}};
  return {404, "text/plain", "404: Page Not Found", {}};
}

std::string Controller::Impl::RenderStatus() {
  std::vector<JobView> views;
  for (auto& [k, e] : jobs) views.push_back(ViewOf(*e));
  return EncodeStatusJson(views);
}

JobView Controller::Impl::ViewOf(const JobEntry& e) {
  JobView v;
  v.kind = e.object_kind();
  v.ns = e.meta().ns;
  v.name = e.meta().name;
  if (!e.conditions().empty()) {
    const auto& c = e.conditions().back();
    v.stage = std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
  }
  if (e.is_il()) {
    FillIlView(e.il_state, static_cast<int64_t>(e.conditions().size()) - 1, v);
  } else {
    FillLlView(e.ll_state, v);
  }
  return v;
}

}  // namespace sedna::app
