// The worker API (worker_endpoint.h).
#include "app/cluster/intake/worker_endpoint.h"

#include "adapters/log/log.h"

#include <chrono>

#include "adapters/http/http_server.h"
#include "adapters/http/worker_api.h"
#include "adapters/json/upstream_codec.h"

namespace sedna::app {

namespace {

http::HttpResponse Reply(int status, const std::string& msg) {
  return {status, "application/json", json::EncodeWorkerApiReply(status, msg), {}};
}

// The answer to an accepted report, encoded once.
http::HttpResponse ReplyOk() {
  static const std::string body = json::EncodeWorkerApiReply(200, "OK");
  return {200, "application/json", body, {}};
}

}  // namespace

WorkerEndpoint::WorkerEndpoint(Context& ctx, JobRunner& jobs, ReportIntake& intake,
                               InboundQueue& inbound, Passthrough& passthrough, Outbox& outbox)
    : ctx_(ctx),
      jobs_(jobs),
      intake_(intake),
      inbound_(inbound),
      passthrough_(passthrough),
      outbox_(outbox) {}
WorkerEndpoint::~WorkerEndpoint() = default;

Status WorkerEndpoint::Start() {
  http::HttpServerOptions wo;
  wo.address = ctx_.cfg.bind_address;
  wo.port = ctx_.cfg.bind_port;
  wo.on_rejected = [](int status, const std::string& target) {
    spdlog::warn(
        "worker API: request {} rejected with {} (too large, too slow, unsupported "
        "transfer-coding or malformed)",
        target.empty() ? std::string("(unparsed)") : target, status);
  };
  // Under a flood this fires thousands of times a second: one line per reason and 10 s, with the
  // count since the last line.
  static_assert(sizeof drops_ / sizeof drops_[0] == http::kDropReasons);
  wo.on_dropped = [this](http::DropReason reason, const std::string& peer) {
    DropLog& d = drops_[static_cast<int>(reason)];
    ++d.count;
    const auto now = ctx_.clock.Steady();
    if (now - d.logged < std::chrono::seconds(10)) return;
    spdlog::warn("worker API: connection from {} closed unanswered ({}; {} since the last line)",
                 peer, http::DropReasonName(reason), d.count);
    d.logged = now;
    d.count = 0;
  };

  auto ws = http::HttpServer::Start(ctx_.io, wo, [this](const http::HttpRequest& req) {
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
  server_ = std::move(*ws);
  return Status::Ok();
}

void WorkerEndpoint::Stop() {
  if (server_) server_->Stop();
}

uint16_t WorkerEndpoint::port() const { return server_ ? server_->port() : 0; }

http::HttpResponse WorkerEndpoint::OnWorkerMessage(std::string_view path_name,
                                                   std::string_view body) {
  ctx_.metrics.worker_posts++;
  // The metrics are decoded by the batch that commits the report (report_intake.h).
  auto m = json::DecodeWorkerMessage(body, json::ReportMetrics::kDeferred);
  if (!m.ok() || m->report.worker_name != path_name) {
    const std::string body_name = m.ok() ? m->report.worker_name : json::WorkerNameIn(body);
    std::string msg = "worker name(name=" + std::string(path_name) +
                      ") in the api is different from that(name=" + body_name +
                      ") in the message body";
    if (!m.ok()) {
      spdlog::warn("worker {}: message rejected: {}", path_name, m.message());
      msg += ": " + m.message();
    } else {
      spdlog::warn("worker {}: message rejected: {}", path_name, msg);
    }
    return Reply(400, msg);
  }
  const auto& rep = m->report;
  // Quotas by kind (docs/durability.md, "The outbox bound"): a report that only informs may not
  // fill the space that train and eval completions need.
  if (json::IsInformationalReport(rep.kind, rep.status)) {
    if (outbox_.InformationalFull()) {
      spdlog::warn(
          "worker {}: {} {} report refused with 503: the outbox is full for informational "
          "reports (GM unreachable?)",
          rep.worker_name, rep.kind, rep.status);
      return Reply(503, "the LC's outbox is full for informational reports; retry later");
    }
  } else if (outbox_.Full()) {
    spdlog::warn("worker {}: report refused with 503: the outbox is full (GM unreachable?)",
                 rep.worker_name);
    return Reply(503, "the LC's outbox is full; retry later");
  }
  if (rep.owner_kind == core::kKindIlJob || rep.owner_kind == core::kKindLlJob) {
    if (gate_) {
      if (Status s = gate_(rep); !s.ok()) {
        spdlog::warn("worker {}: report refused: {}", rep.worker_name, s.message());
        return Reply(400, s.message());
      }
    }
    const std::string key = core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name);
    if (early_ && early_->holds(key)) return KeepEarly(rep, path_name, body, key);
    auto prepared = jobs_.PrepareReport(*m);
    if (!prepared.ok()) return Reply(400, prepared.message());
    std::optional<PendingReport>& p = *prepared;
    if (!p && early_) return KeepEarly(rep, path_name, body, key);
    if (!p) {
      spdlog::warn("worker {}: message for unknown {} {}/{} dropped", rep.worker_name,
                   rep.owner_kind, rep.ns, rep.owner_name);
    } else if (!intake_.Accept(std::move(*p), path_name, body)) {
      return Reply(500, "could not persist the message; retry");
    }
  } else if (rep.owner_kind == core::kKindJointInference ||
             rep.owner_kind == core::kKindFederated) {
    // Not now (events wait behind reports that cannot be committed): the worker retries.
    auto forward = Passthrough::Forward::kFailed;
    inbound_.RunNow([&] { forward = passthrough_.ForwardWorkerMessage(*m); });
    if (forward == Passthrough::Forward::kFailed) {
      return Reply(500, "could not persist the message; retry");
    }
  } else if (warned_kinds_.insert(rep.owner_kind).second) {
    spdlog::warn(
        "worker messages for ownerKind \"{}\" are not handled by this build; accepted "
        "and dropped",
        rep.owner_kind);
  }
  return ReplyOk();
}

// A report for a job not known yet, or behind reports kept for it: kept (200), or 503 over a bound
// (lib/sedna retries, the job may have arrived by then; docs/durability.md).
http::HttpResponse WorkerEndpoint::KeepEarly(const core::WorkerReport& rep, std::string_view worker,
                                             std::string_view body, const std::string& key) {
  const std::string what = rep.kind + " " + rep.status;
  const EarlyReports::HoldResult h = early_->Hold(key, worker, what, body, jobs_.deleted_uid(key));
  switch (h.held) {
    case EarlyReports::Held::kKept:
      spdlog::info(
          "worker {}: {} report for unknown {} {}/{} kept until this LC has the job ({} kept for "
          "it, for up to {} s)",
          rep.worker_name, what, rep.owner_kind, rep.ns, rep.owner_name, early_->kept_for(key),
          early_->limits().ttl_ms / 1000);
      return Reply(200, "OK");
    case EarlyReports::Held::kOwnerFull:
    case EarlyReports::Held::kTotalFull:
      spdlog::warn(
          "worker {}: {} report for {}, a job this LC does not know yet, refused with 503: {}",
          rep.worker_name, what, key, h.why);
      return Reply(503, "the LC does not know " + key + " yet and keeps no more reports for it (" +
                            h.why + "); retry later");
    case EarlyReports::Held::kFailed:
      break;
  }
  spdlog::error("worker {}: keeping the {} report for {}: {}", rep.worker_name, what, key, h.why);
  return Reply(500, "could not persist the message; retry");
}

}  // namespace sedna::app
