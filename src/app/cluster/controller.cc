// The composition root: builds the controller's parts, wires their hooks, and runs start-up and
// shutdown in order. Every part runs on the one loop thread; see docs/architecture.md.
//
//   GM link ─frames─> GmFrames ─> DatasetRegistry ─hooks─> JobRunner <─ ReportIntake <─
//   WorkerEndpoint
//                                 ModelRegistry ───hook──>    │  commits steps + frames    │
//                                                             v                            v
//                                                          Outbox ──> UpstreamSink (GM link / local
//                                                          GM)
#include "app/cluster/controller.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include "adapters/log/log.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <boost/asio/post.hpp>

#include "adapters/fs/files.h"
#include "adapters/gm/gm_link.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/context.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/early_release.h"
#include "app/cluster/intake/early_reports.h"
#include "app/cluster/intake/gm_frames.h"
#include "app/cluster/intake/outbox.h"
#include "app/cluster/intake/passthrough.h"
#include "app/cluster/intake/report_intake.h"
#include "app/cluster/intake/worker_endpoint.h"
#include "app/cluster/jobs/job_runner.h"
#include "app/cluster/jobs/model_registry.h"
#include "app/cluster/observation/status_endpoint.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

class GmLinkSink : public UpstreamSink {
 public:
  explicit GmLinkSink(gm::GmLink& link) : link_(link) {}
  bool connected() const override { return link_.connected(); }
  bool Send(std::span<const std::string_view> frames, std::function<void(size_t)> done) override {
    return link_.Send(frames, std::move(done));
  }

 private:
  gm::GmLink& link_;
};

EarlyLimits EarlyLimitsOf(const Config& c) {
  return {static_cast<size_t>(c.early_reports_per_job), static_cast<size_t>(c.early_reports_max),
          static_cast<size_t>(c.early_reports_max_bytes), c.early_report_ttl_ms};
}

}  // namespace

// The parts, in construction order: each may refer to those above it; hooks that point down the
// list are lambdas, called only once every part exists. Destroyed in reverse, after Stop.
struct Controller::Impl {
  Impl(asio::io_context& io, Config c, const core::Clock& clock)
      : ctx(io, std::move(c), clock),
        outbox(ctx),
        inbound(io, {[this] { return intake.Commit(); }, [this] { return intake.pending(); }}),
        intake(
            ctx, inbound,
            [this](std::vector<PendingReport>& r,
                   const std::function<Status(store::Store::Tx&)>& also) {
              return jobs.CommitReports(r, also);
            },
            [this](PendingReport r) { return jobs.StepReport(std::move(r)); }),
        datasets(
            ctx, outbox, inbound,
            {[this](const std::string& ns, const std::string& n) { jobs.OnDatasetChanged(ns, n); },
             [this](const DatasetSource& s) { return jobs.JoinPass(s); },
             [this](const std::string& ns, const std::string& n) {
               return jobs.PollSecondsFor(ns, n);
             },
             [this] { jobs.BeginSteps(); }, [this] { jobs.EndSteps(); }}),
        models(ctx,
               [this](const std::string& ns, const std::string& n) { jobs.OnModelChanged(ns, n); }),
        jobs(ctx, outbox, inbound, datasets, models),
        passthrough(ctx, outbox),
        frames(ctx, inbound, datasets, models, jobs, passthrough),
        worker_api(ctx, jobs, intake, inbound, passthrough, outbox),
        status(ctx, jobs, intake, outbox),
        early(EarlyLimitsOf(ctx.cfg), [this] { return core::UnixMs(ctx.clock); }) {
    outbox.set_on_below_limit([this] { datasets.ReadAll(); });
    early.set_apply(ApplyEarlyReports(jobs, intake, inbound, early));
    worker_api.SetEarlyReports(&early);
    jobs.set_on_arrived(
        [this](const std::string& key, const std::string& uid) { early.Release(key, uid); });
    status.set_gm_evidence(&frames.evidence());
    jobs.set_gm_is_g1([this] { return frames.evidence().generation() == GmGeneration::kG1; });
  }

  Status Start();
  Status LockDatabase();
  Status OpenStore();
  void ConnectGm();
  void Stop();

  Context ctx;
  Outbox outbox;
  InboundQueue inbound;
  ReportIntake intake;
  DatasetRegistry datasets;
  ModelRegistry models;
  JobRunner jobs;
  Passthrough passthrough;
  GmFrames frames;
  WorkerEndpoint worker_api;
  StatusEndpoint status;
  EarlyReports early;
  std::unique_ptr<gm::GmLink> gm;
  std::unique_ptr<UpstreamSink> gm_sink;
  std::function<std::vector<std::string>()> gm_diagnosis;
  bool gm_diagnosed = false;
  int lock_fd = -1;
};

// One daemon per database: a second one would answer the same jobs twice.
Status Controller::Impl::LockDatabase() {
  const std::string& db = ctx.cfg.db_path;
  if (Status s = fs::MakeDirs(fs::Dirname(db)); !s.ok()) return s.With("database directory");
  lock_fd = ::open((db + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    // e.g. a non-root runAsUser without a writable database directory
    return Status::Error("database directory " + fs::Dirname(db) + ": cannot create " + db +
                         ".lock as uid " + std::to_string(::geteuid()) + ": " +
                         std::strerror(errno));
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return Status::Error("locking " + db + ".lock: " + std::strerror(err));
    return Status::Error("database " + db + " is in use by another sedna-lc (lock " + db +
                         ".lock): " + std::strerror(err));
  }
  return Status::Ok();
}

Status Controller::Impl::OpenStore() {
  store::StoreOptions so;
  so.outbox_informational = json::IsInformationalFrame;  // the outbox quotas (outbox.h)
  so.synchronous_full = ctx.cfg.db_sync_full;
  so.clock = &ctx.clock;
  // Called on the Store's checkpoint thread (spdlog is thread-safe); a failure that repeats is
  // logged once, and again when it changes or clears.
  so.on_checkpoint = [last_error = std::string()](const store::CheckpointReport& r) mutable {
    if (r.busy) return;  // another checkpoint was running; a later commit retries
    if (!r.status.ok()) {
      if (r.status.message() != last_error) spdlog::error("{}", r.status.message());
      last_error = r.status.message();
      return;
    }
    if (!last_error.empty()) spdlog::info("database checkpoints work again");
    last_error.clear();
    spdlog::debug("database checkpoint: {} of {} WAL frames in the database", r.backfilled,
                  r.wal_frames);
  };
  // On the loop thread, after each commit: readiness follows the last one (logged when it changes).
  so.on_transact = [this](const Status& s) {
    if (s.ok()) ++ctx.metrics.store_commits;
    const std::string now = s.ok() ? "" : s.message();
    if (now.empty() == ctx.health.commit_error.empty()) {
      ctx.health.commit_error = now;
      return;
    }
    if (now.empty()) {
      spdlog::info("database commits work again: ready");
    } else {
      spdlog::error("database commits fail ({}): /readyz answers 503 until one succeeds", now);
    }
    ctx.health.commit_error = now;
  };
  auto st = store::Store::Open(ctx.cfg.db_path, so);
  if (!st.ok()) return st.status();
  ctx.store = std::move(*st);
  ctx.trim.SetRelease([this] { ctx.store->ReleaseMemory(); });
  return Status::Ok();
}

Status Controller::Impl::Start() {
  const Config& cfg = ctx.cfg;
  if (!cfg.timezone.empty()) {
    ::setenv("TZ", cfg.timezone.c_str(), 1);
    ::tzset();
  }
  if (Status s = LockDatabase(); !s.ok()) return s;
  if (Status s = OpenStore(); !s.ok()) return s;
  if (Status s = fs::MakeDirs(cfg.spool_dir); !s.ok()) return s.With("spool directory");
  datasets.Start();
  // Jobs come back in their committed state with their work in flight re-issued; then the
  // reports acknowledged before the stop are committed; only then are new samples read and the
  // jobs stepped under their stored objects.
  jobs.set_reloading(true);
  Status reloaded = frames.Reload();
  jobs.set_reloading(false);
  if (!reloaded.ok()) return reloaded;
  if (Status s =
          intake.Open([this](const std::string& worker, const std::string& body, std::string* why) {
            return jobs.RecoverReport(worker, body, why);
          });
      !s.ok()) {
    return s;
  }
  // Reports kept for jobs not known yet; those whose job was stored meanwhile (a stop between
  // the job's arrival and their release) are applied now.
  if (ctx.store->identity() != 0) {
    if (Status s = early.Open(StoreEarlyRows(*ctx.store)); !s.ok()) return s;
    early.set_timer(ctx.io);
    early.ReleaseKnown([this](const std::string& key) { return jobs.uid_of(key); });
  }
  jobs.CatchUpReloaded();
  if (Status s = worker_api.Start(); !s.ok()) return s;
  if (Status s = status.Start(); !s.ok()) return s;
  if (outbox.has_sink()) {
    // standalone: the local manager is the upstream
  } else if (!cfg.gm_address.empty()) {
    ConnectGm();
  } else {
    spdlog::warn(
        "GM_ADDRESS is not set: not connecting to a GM (upstream messages are kept "
        "in the outbox)");
  }
  spdlog::info("sedna-lc started: node {}, worker API :{}, status :{}, database {}", cfg.node_name,
               worker_api.port(), status.port(), cfg.db_path);
  ctx.trim.Schedule();
  return Status::Ok();
}

void Controller::Impl::ConnectGm() {
  const Config& cfg = ctx.cfg;
  gm::GmLinkOptions go;
  go.address = cfg.gm_address;
  go.node_name = cfg.node_name;
  go.first_frame = json::EncodeBareHeader({});
  go.ping_interval = std::chrono::milliseconds(cfg.ping_interval_ms);
  go.ping_timeout = std::chrono::milliseconds(cfg.ping_timeout_ms);
  go.backoff_max = std::chrono::milliseconds(cfg.backoff_max_ms);
  gm::GmLinkCallbacks cb;
  cb.on_connected = [this] {
    spdlog::info("GM {}: connected as node {}", ctx.cfg.gm_address, ctx.cfg.node_name);
    ctx.metrics.gm_connects++;
    ctx.gm_epoch++;  // job objects received before this connection are no longer current
    frames.OnGmConnected();
    outbox.Pump();
  };
  cb.on_frame = [this](const std::string& t) { frames.OnFrame(t); };
  cb.on_disconnected = [this](std::string why) {
    outbox.OnDisconnected();
    frames.OnGmDisconnected();
    spdlog::warn("GM {}: disconnected: {}", ctx.cfg.gm_address, why);
    // The users' most reported LC problem is a GM it cannot reach and nothing saying why: the
    // first failed connect says which step fails, as `sedna-lc doctor` does.
    if (gm_diagnosed || ctx.metrics.gm_connects > 0 || !gm_diagnosis) return;
    gm_diagnosed = true;
    asio::post(ctx.pool, [addr = ctx.cfg.gm_address, diagnose = gm_diagnosis] {
      for (const auto& line : diagnose()) spdlog::warn("GM {}: doctor: {}", addr, line);
    });
  };
  gm = std::make_unique<gm::GmLink>(ctx.io, go, cb);
  gm_sink = std::make_unique<GmLinkSink>(*gm);
  outbox.SetSink(gm_sink.get());
  gm->Start();
}

void Controller::Impl::Stop() {
  if (ctx.stopped) return;
  ctx.stopped = true;
  if (gm) gm->Stop();
  worker_api.Stop();
  status.Stop();
  ctx.trim.Cancel();
  ctx.syncs->Stop();
  early.Stop();
  inbound.Stop();  // events not handed out yet are dropped: their sources re-send them
  intake.Stop();   // what fails to commit stays in the intake journal for the next start
  outbox.Stop();
  jobs.Stop();
  datasets.Stop();
  ctx.pool.join();
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
}

// ---------------------------------------------------------------- Controller

Controller::Controller(asio::io_context& io, Config config, const core::Clock& clock)
    : impl_(std::make_unique<Impl>(io, std::move(config), clock)) {}
Controller::~Controller() = default;
Status Controller::Start() { return impl_->Start(); }
void Controller::Stop() { impl_->Stop(); }
uint16_t Controller::worker_port() const { return impl_->worker_api.port(); }
uint16_t Controller::status_port() const { return impl_->status.port(); }
void Controller::OnGmFrame(const std::string& text) { impl_->frames.OnFrame(text); }
void Controller::SetUpstreamSink(UpstreamSink* sink) { impl_->outbox.SetSink(sink); }
void Controller::PumpOutbox() { impl_->outbox.Pump(); }
void Controller::SetWorkersSource(WorkersSource workers) {
  impl_->status.set_workers(std::move(workers));
}
void Controller::SetGmDiagnosis(std::function<std::vector<std::string>()> diagnose) {
  impl_->gm_diagnosis = std::move(diagnose);
}
void Controller::SetReportGate(ReportGate gate) {
  impl_->worker_api.SetReportGate(std::move(gate));
}

}  // namespace sedna::app
