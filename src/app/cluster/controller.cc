// Controller's public methods; Controller::Impl start-up (lock, store, Reload, GM link), Stop, and
// the dispatch of GM frames to the datasets, models, jobs and pass-through objects.
#include "app/cluster/controller.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "adapters/dataset/index_watcher.h"
#include "adapters/fs/files.h"
#include "adapters/gm/gm_link.h"
#include "adapters/http/http_server.h"
#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"
#include "app/cluster/controller_impl.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

// "<ns>/<kind>/<name> " from a frame's header when it is readable, for error messages.
std::string FrameObjectName(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("header") || !j["header"].is_object()) return "";
  const auto& h = j["header"];
  auto str = [&](const char* k) {
    return h.contains(k) && h[k].is_string() ? h[k].get<std::string>() : std::string();
  };
  return core::ResourceKey(str("namespace"), str("resourceKind"), str("resourceName")) + " ";
}

}  // namespace

class GmLinkSink : public UpstreamSink {
 public:
  explicit GmLinkSink(gm::GmLink& link) : link_(link) {}
  bool connected() const override { return link_.connected(); }
  bool Send(std::string frame, std::function<void(bool)> done, bool more) override {
    return link_.Send(std::move(frame), std::move(done), more);
  }

 private:
  gm::GmLink& link_;
};

Controller::Impl::Impl(asio::io_context& io_, Config c) : io(io_), cfg(std::move(c)) {}
Controller::Impl::~Impl() = default;

// ---------------------------------------------------------------- helpers for every area

Result<std::optional<s3::Credentials>> Controller::Impl::CredentialsOf(
    const std::optional<std::string>& json) {
  if (!json) return std::optional<s3::Credentials>();
  auto c = s3::ParseCredentialAnnotation(*json);
  if (!c.ok()) {
    return Status::Error(std::string("metadata.annotations[") + core::kCredentialAnnotation +
                         "]: " + c.message());
  }
  return std::optional<s3::Credentials>(*c);
}

std::string Controller::Impl::SanitizeKey(const std::string& key) {
  std::string s;
  for (char c : key)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return s;
}

// ---------------------------------------------------------------- GM frames

void Controller::Impl::WarnKindOnce(const std::string& kind, const std::string& text) {
  if (warned_kinds.insert(kind).second) spdlog::warn("{}", text);
}

void Controller::Impl::ScheduleTrim() {
  constexpr auto kTrimDelay = std::chrono::seconds(2);
  if (trim_armed || stopped) return;
  if (!trim_timer) trim_timer = std::make_unique<boost::asio::steady_timer>(io);
  trim_armed = true;
  trim_timer->expires_after(kTrimDelay);
  trim_timer->async_wait([this](const boost::system::error_code& ec) {
    trim_armed = false;
    if (!ec && !stopped) ::malloc_trim(0);
  });
}

void Controller::Impl::OnGmFrame(const std::string& text) {
  metrics.frames_received++;
  ScheduleTrim();
  auto f = json::DecodeFrame(text);
  if (!f.ok()) {
    spdlog::warn("GM frame {}skipped: {}", FrameObjectName(text), f.message());
    metrics.rejected_frames++;
    return;
  }
  const auto& h = f->header;
  const std::string& kind = h.resource_kind;
  const std::string key = core::ResourceKey(h.ns, kind, h.resource_name);
  if (h.operation == "delete") {
    if (kind == core::kKindIlJob) {
      DeleteJob(key, JobKind::kIl);
    } else if (kind == core::kKindLlJob) {
      DeleteJob(key, JobKind::kLl);
    } else if (kind == core::kKindDataset) {
      DeleteDataset(key);
    } else if (kind == core::kKindJointInference || kind == core::kKindFederated) {
      passthrough.erase(key);
      (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
      spdlog::info("{}: deleted", key);
    } else if (kind == core::kKindModel) {
      DeleteModel(key);
    }
    return;
  }
  if (h.operation != "insert" && h.operation != "update") {
    spdlog::warn("GM frame for {} skipped: header.operation: unknown \"{}\"", key, h.operation);
    metrics.rejected_frames++;
    return;
  }
  if (kind == core::kKindDataset) {
    auto d = json::DecodeDataset(f->content);
    if (!d.ok()) return Reject(key, d.message());
    UpsertDataset(std::move(*d), true);
  } else if (kind == core::kKindModel) {
    auto d = json::DecodeModel(f->content);
    if (!d.ok()) return Reject(key, d.message());
    UpsertModel(std::move(*d), true);
  } else if (kind == core::kKindIlJob) {
    auto d = json::DecodeIlJob(f->content);
    if (!d.ok()) return Reject(key, d.message());
    JobEntry e;
    e.kind = JobKind::kIl;
    e.il = std::move(*d);
    UpsertJob(std::move(e), true);
  } else if (kind == core::kKindLlJob) {
    auto d = json::DecodeLlJob(f->content);
    if (!d.ok()) return Reject(key, d.message());
    JobEntry e;
    e.kind = JobKind::kLl;
    e.ll = std::move(*d);
    UpsertJob(std::move(e), true);
  } else if (kind == core::kKindJointInference || kind == core::kKindFederated) {
    UpsertPassthrough(key, f->content);
  } else {
    WarnKindOnce(kind, "resource kind \"" + kind + "\" is unknown; ignored");
  }
}

void Controller::Impl::UpsertPassthrough(const std::string& key, const std::string& content) {
  auto j = nlohmann::json::parse(content, nullptr, false);
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object()) {
    return Reject(key, "expected an object with metadata");
  }
  nlohmann::json type_meta{{"kind", j.value("kind", "")},
                           {"apiVersion", j.value("apiVersion", "")}};
  nlohmann::json meta = j["metadata"];
  if (meta.contains("annotations") && meta["annotations"].is_object()) {
    meta["annotations"].erase(core::kCredentialAnnotation);  // B23: never persisted
  }
  const std::string spec = j.contains("spec") ? j["spec"].dump() : "{}";
  Status s = store->Transact([&](store::Store::Tx& tx) {
    return tx.UpsertResource({key, type_meta.dump(), meta.dump(), spec});
  });
  if (!s.ok()) spdlog::error("{}: persisting: {}", key, s.message());
  if (passthrough.insert(key).second) spdlog::info("{}: stored (worker messages forwarded)", key);
}

void Controller::Impl::Reject(const std::string& key, const std::string& msg) {
  spdlog::error("GM object {} rejected: {}", key, msg);
  metrics.rejected_objects++;
}

// ---------------------------------------------------------------- start / stop

Status Controller::Impl::Start() {
  if (!cfg.timezone.empty()) {
    ::setenv("TZ", cfg.timezone.c_str(), 1);
    ::tzset();
  }
  // One daemon per database: a second one would answer the same jobs twice.
  if (Status s = fs::MakeDirs(fs::Dirname(cfg.db_path)); !s.ok())
    return s.With("database directory");
  lock_fd = ::open((cfg.db_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return Status::Error("database " + cfg.db_path + " is in use by another sedna-lc (lock " +
                         cfg.db_path + ".lock): " + std::strerror(errno));
  }
  store::StoreOptions so;
  so.synchronous_full = cfg.db_sync_full;
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
  auto st = store::Store::Open(cfg.db_path, so);
  if (!st.ok()) return st.status();
  store = std::move(*st);
  if (Status s = fs::MakeDirs(cfg.spool_dir); !s.ok()) return s.With("spool directory");
  watcher = std::make_unique<dataset::IndexWatcher>(
      io, [this](const std::string& path) { OnIndexChanged(path); });
  // Jobs come back in their committed state with their work in flight re-issued; then the
  // reports acknowledged before the stop are committed; only then are new samples read and the
  // jobs stepped under their stored objects.
  reloading = true;
  Status reloaded = Reload();
  reloading = false;
  if (!reloaded.ok()) return reloaded;
  if (Status s = OpenIntake(); !s.ok()) return s;
  for (const std::string& key : reloaded_jobs) {
    auto it = jobs.find(key);
    if (it != jobs.end()) CatchUpJob(*it->second);
  }
  reloaded_jobs.clear();
  if (Status s = StartServers(); !s.ok()) return s;
  if (sink) {
    // standalone: the local manager is the upstream
  } else if (!cfg.gm_address.empty()) {
    gm::GmLinkOptions go;
    go.address = cfg.gm_address;
    go.node_name = cfg.node_name;
    go.first_frame = json::EncodeBareHeader({});
    go.ping_interval = std::chrono::milliseconds(cfg.ping_interval_ms);
    go.ping_timeout = std::chrono::milliseconds(cfg.ping_timeout_ms);
    go.backoff_max = std::chrono::milliseconds(cfg.backoff_max_ms);
    gm::GmLinkCallbacks cb;
    cb.on_connected = [this] {
      spdlog::info("GM {}: connected as node {}", cfg.gm_address, cfg.node_name);
      metrics.gm_connects++;
      PumpOutbox();
    };
    cb.on_frame = [this](std::string t) { OnGmFrame(t); };
    cb.on_disconnected = [this](std::string why) {
      outbox_inflight = false;
      spdlog::warn("GM {}: disconnected: {}", cfg.gm_address, why);
    };
    gm = std::make_unique<gm::GmLink>(io, go, cb);
    gm_sink = std::make_unique<GmLinkSink>(*gm);
    sink = gm_sink.get();
    gm->Start();
  } else {
    spdlog::warn(
        "GM_ADDRESS is not set: not connecting to a GM (upstream messages are kept "
        "in the outbox)");
  }
  spdlog::info("sedna-lc started: node {}, worker API :{}, status :{}, database {}", cfg.node_name,
               worker_server->port(), status_server ? status_server->port() : 0, cfg.db_path);
  ScheduleTrim();
  return Status::Ok();
}

Status Controller::Impl::Reload() {
  auto rows = store->LoadResources();
  if (!rows.ok()) return rows.status();
  std::vector<const store::ResourceRow*> ds, ms, job_rows;
  for (const auto& r : *rows) {
    if (r.name.find("/dataset/") != std::string::npos)
      ds.push_back(&r);
    else if (r.name.find("/model/") != std::string::npos)
      ms.push_back(&r);
    else if (r.name.find("/jointinferenceservice/") != std::string::npos ||
             r.name.find("/federatedlearningjob/") != std::string::npos)
      passthrough.insert(r.name);
    else if (r.name.find("/incrementallearningjob/") != std::string::npos ||
             r.name.find("/lifelonglearningjob/") != std::string::npos)
      job_rows.push_back(&r);
  }
  for (auto* r : ds) {
    auto d = json::DecodeDataset(
        json::AssembleObject(r->type_meta, r->object_meta, r->spec, "", std::nullopt));
    if (d.ok())
      UpsertDataset(std::move(*d), false);
    else
      spdlog::error("stored {}: {}", r->name, d.message());
  }
  for (auto* r : ms) {
    auto d = json::DecodeModel(
        json::AssembleObject(r->type_meta, r->object_meta, r->spec, "", std::nullopt));
    if (d.ok())
      UpsertModel(std::move(*d), false);
    else
      spdlog::error("stored {}: {}", r->name, d.message());
  }
  for (auto* r : job_rows) {
    std::string status;
    if (auto s = store->GetState(kScopeStatus, r->name); s.ok() && s->has_value()) status = **s;
    const std::string obj =
        json::AssembleObject(r->type_meta, r->object_meta, r->spec, status, std::nullopt);
    JobEntry e;
    if (r->name.find("/incrementallearningjob/") != std::string::npos) {
      auto d = json::DecodeIlJob(obj);
      if (!d.ok()) {
        spdlog::error("stored {}: {}", r->name, d.message());
        continue;
      }
      e.kind = JobKind::kIl;
      e.il = std::move(*d);
    } else {
      auto d = json::DecodeLlJob(obj);
      if (!d.ok()) {
        spdlog::error("stored {}: {}", r->name, d.message());
        continue;
      }
      e.kind = JobKind::kLl;
      e.ll = std::move(*d);
    }
    UpsertJob(std::move(e), false);
  }
  if (!rows->empty()) {
    spdlog::info("reloaded {} datasets, {} models, {} jobs from {}", ds.size(), ms.size(),
                 job_rows.size(), cfg.db_path);
  }
  return Status::Ok();
}

void Controller::Impl::Stop() {
  if (stopped) return;
  stopped = true;
  if (gm) gm->Stop();
  if (worker_server) worker_server->Stop();
  if (status_server) status_server->Stop();
  if (ack_flush_timer) ack_flush_timer->cancel();
  if (trim_timer) trim_timer->cancel();
  if (report_timer) report_timer->cancel();
  if (store) FlushReports(true);  // what fails stays in the intake journal for the next start
  if (store) FlushAcks();
  for (auto& [k, e] : jobs) {
    if (e->tick_timer) e->tick_timer->cancel();
    if (e->retry_timer) e->retry_timer->cancel();
    if (e->ingest_retry_timer) e->ingest_retry_timer->cancel();
  }
  for (auto& [k, d] : datasets) {
    if (d->poll_timer) d->poll_timer->cancel();
  }
  watcher.reset();
  pool.join();
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
}

// ---------------------------------------------------------------- Controller

Controller::Controller(asio::io_context& io, Config config)
    : impl_(std::make_unique<Impl>(io, std::move(config))) {}
Controller::~Controller() = default;
Status Controller::Start() { return impl_->Start(); }
void Controller::Stop() { impl_->Stop(); }
uint16_t Controller::worker_port() const {
  return impl_->worker_server ? impl_->worker_server->port() : 0;
}
uint16_t Controller::status_port() const {
  return impl_->status_server ? impl_->status_server->port() : 0;
}
void Controller::OnGmFrame(const std::string& text) { impl_->OnGmFrame(text); }
void Controller::SetUpstreamSink(UpstreamSink* sink) { impl_->sink = sink; }
void Controller::PumpOutbox() { impl_->PumpOutbox(); }

}  // namespace sedna::app
