// The job runner, one step (job_runner.h): what a job's kind runner reads (World), Plan (its
// core Step on the job's state) -> Write (its frames and record, in the caller's transaction) ->
// Adopt -> ActOn (actions, their blocking work on the pool, the retry timer); Step does all four
// for one event in a transaction of its own.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include "adapters/log/log.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string_view>
#include <variant>

#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/storage/hot_update.h"
#include "adapters/storage/model_versions.h"
#include "adapters/storage/storage.h"
#include "app/cluster/jobs/job_entry.h"
#include "app/cluster/jobs/job_runner.h"
#include "core/overloaded.h"

namespace sedna::app {

namespace asio = boost::asio;
using core::il::Action;
using core::il::Event;

namespace {

// The core's `now`, from the controller's clock: wall time, the local minute of day (TZ) and
// RFC 3339 in UTC.
core::il::Now MakeNow(const core::Clock& clock) {
  core::il::Now n;
  n.unix_ms = core::UnixMs(clock);
  std::time_t t = static_cast<std::time_t>(n.unix_ms / 1000);
  // Both readings change once a second (and with TZ): a batch of steps converts once.
  struct Cached {
    std::time_t secs = 0;
    std::string tz;
    bool valid = false;
    int minute_of_day = 0;
    std::string rfc3339;
  };
  thread_local Cached c;
  const char* tz = std::getenv("TZ");
  // Unset TZ (the system's zone) is not TZ="" (UTC): a key no TZ value can have.
  const std::string_view tz_now = tz ? std::string_view(tz) : std::string_view("\0unset", 6);
  if (!c.valid || c.secs != t || c.tz != tz_now) {
    std::tm lt{}, ut{};
    localtime_r(&t, &lt);
    gmtime_r(&t, &ut);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &ut);
    c = Cached{t, std::string(tz_now), true, lt.tm_hour * 60 + lt.tm_min, buf};
  }
  n.minute_of_day = c.minute_of_day;
  n.rfc3339 = c.rfc3339;
  return n;
}

}  // namespace

Status LexicallyInside(const std::string& url, const std::string& dir, const std::string& what) {
  if (Status s = fs::CheckPathBounds(url, what); !s.ok()) return s;
  bool inside = false;
  if (fs::IsS3Url(url) || fs::IsS3Url(dir)) {
    // "s3://bucket/key": the same bucket, and the key beneath dir's key.
    auto split = [](const std::string& u, std::string* bucket, std::string* key) {
      if (!fs::IsS3Url(u)) return false;
      const std::string rest = u.substr(5);
      const size_t slash = rest.find('/');
      *bucket = rest.substr(0, slash);
      *key = "/" + (slash == std::string::npos ? std::string() : rest.substr(slash + 1));
      return !bucket->empty();
    };
    std::string ub, uk, db, dk;
    inside = split(url, &ub, &uk) && split(dir, &db, &dk) && ub == db &&
             fs::RelativeBeneath(dk, uk).has_value();
  } else {
    inside = fs::RelativeBeneath(dir, url).has_value();
  }
  if (!inside) return Status::Error(what + " " + url + " is not inside spec.outputDir " + dir);
  return Status::Ok();
}

std::string JobRunner::JobFrame(const JobEntry& e, const std::string& content) const {
  return json::EncodeFrame({e.meta().ns, e.object_kind(), e.meta().name, "status"}, content);
}

bool JobRunner::GmIsG1() const {
  return ctx_.cfg.gm_protocol == "g1" ||
         (ctx_.cfg.gm_protocol == "auto" && gm_is_g1_ && gm_is_g1_());
}

KindWorld JobRunner::World(const JobEntry& e) const {
  KindWorld w;
  w.models = &models_;
  w.dataset = datasets_.Source(e.meta().ns, e.dataset_name());
  w.train_trigger = &e.train_trigger;
  w.gm_is_g1 = GmIsG1();
  w.deploy_wait_ms = ctx_.cfg.deploy_wait_ms;
  w.deploy_report_delay_ms = ctx_.cfg.deploy_report_delay_ms;
  w.conditions_fresh = e.seen_epoch == ctx_.gm_epoch;
  w.received_ms = e.received_ms;
  return w;
}

PlannedStep JobRunner::Plan(JobEntry& e, const Event& ev, std::vector<std::string> pre_frames,
                            const dataset::IndexCursor* new_cursor) {
  const core::il::Now now = MakeNow(ctx_.clock);
  PlannedStep p;
  p.e = &e;
  p.now_ms = now.unix_ms;
  KindStep k = e.runner->Plan(World(e), ev, now);
  p.watch_forward = k.forward_recorded && !pre_frames.empty();
  p.next_wake_ms = k.next_wake_ms;
  p.actions = std::move(k.actions);
  p.facts = std::move(k.facts);
  p.frames = std::move(pre_frames);
  // The pre-frames are the forward of the report this event carries (CommitReports, StepReport).
  const auto* reported = std::get_if<core::il::WorkerReported>(&ev);
  p.informational.assign(p.frames.size(), reported
                                              ? std::optional<bool>(json::IsInformationalReport(
                                                    reported->report.kind, reported->report.status))
                                              : std::nullopt);
  for (const Action& a : p.actions) {
    if (auto* r = std::get_if<core::il::SendReport>(&a)) {
      p.frames.push_back(JobFrame(e, json::EncodeStatusReport(r->report, e.runner->spelling())));
      p.informational.push_back(false);  // its `output` is null
    }
  }
  if (new_cursor) p.new_cursor = *new_cursor;
  const dataset::IndexCursor& cursor = new_cursor ? *new_cursor : e.ledger.cursor;
  p.write_record = k.state_changed || new_cursor;  // a forward alone needs no record
  if (p.write_record) p.record = e.runner->EncodePlanned(cursor);
  return p;
}

Status JobRunner::Write(store::Store::Tx& tx, const PlannedStep& p) {
  for (size_t i = 0; i < p.frames.size(); ++i) {
    auto id = Outbox::AppendId(tx, p.frames[i], p.informational[i]);
    if (!id.ok()) return id.status();
    p.last_frame_id = *id;
  }
  return p.write_record ? tx.PutState(ScopeOf(p.e->kind()), p.e->key, p.record) : Status::Ok();
}

void JobRunner::Adopt(PlannedStep& p) {
  JobEntry& e = *p.e;
  e.runner->Adopt();
  if (p.new_cursor) e.ledger.cursor = *p.new_cursor;
}

void JobRunner::ActOn(PlannedStep& p) {
  const JobEntry& e = *p.e;
  for (const Action& a : p.actions) RunAction(*p.e, a);
  if (p.watch_forward && p.last_frame_id > 0) {
    outbox_.WhenWritten(p.last_frame_id, [this, job = JobRef{p.e->key, p.e->incarnation}] {
      executor_.Add(job, core::il::EvalForwardWritten{core::UnixMs(ctx_.clock)});
    });
  }
  if (!p.frames.empty()) outbox_.PostPump();
  ScheduleRetry(*p.e, p.now_ms, p.next_wake_ms);
  // Last: the history records the step; its commit comes RoundHistory::kFlushDelay later, after
  // the send and the actions the step started.
  history_.OnStep({e.key, e.object_kind(), e.meta().ns, e.meta().name, e.train_trigger.text,
                   e.runner->deploy_trigger_text()},
                  p.facts, p.now_ms);
}

// Steps the job; commits the new state and `pre_frames` in one transaction; then runs the
// actions. Returns false (state unchanged) when the commit failed. Called in an event of the
// inbound queue, so the reports acknowledged before it are committed.
bool JobRunner::Step(JobEntry& e, const Event& ev, std::vector<std::string> pre_frames,
                     const dataset::IndexCursor* new_cursor) {
  ctx_.trim.Schedule();
  if (step_batch_) {  // committed with the batch's other steps at EndSteps
    StepBatch& b = *step_batch_;
    StepBatch::Before* before = nullptr;
    for (StepBatch::Before& s : b.before) {
      if (s.e == &e) before = &s;
    }
    if (!before)
      before = &b.before.emplace_back(StepBatch::Before{&e, e.runner->Snapshot(), e.ledger.cursor});
    before->ingested |= new_cursor != nullptr;
    b.steps.push_back(Plan(e, ev, std::move(pre_frames), new_cursor));
    Adopt(b.steps.back());  // the job's next step in the pass plans from here
    return true;
  }
  PlannedStep p = Plan(e, ev, std::move(pre_frames), new_cursor);
  if (p.write_record || !p.frames.empty()) {
    Status s = ctx_.store->Transact([&](store::Store::Tx& tx) { return Write(tx, p); });
    if (!s.ok()) {
      spdlog::error("{} {}: committing state: {}; event dropped", e.object_kind(), e.name(),
                    s.message());
      return false;
    }
  }
  Adopt(p);
  ActOn(p);
  return true;
}

// A step that deferred work (retry_after_ms) gets a Tick at that time, not only at the next
// checkPeriodSeconds.
void JobRunner::ScheduleRetry(JobEntry& e, int64_t now_ms, int64_t at) {
  if (at <= now_ms || at == e.retry_scheduled_at) return;
  e.retry_scheduled_at = at;
  if (!e.retry_timer) e.retry_timer = std::make_unique<asio::steady_timer>(ctx_.io);
  e.retry_timer->expires_after(std::chrono::milliseconds(at - now_ms + 5));
  const std::string key = e.key;
  const uint64_t inc = e.incarnation;
  e.retry_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
    if (ec || ctx_.stopped) return;
    inbound_.Add({"", key + " retry", [this, key, inc] {
                    if (JobEntry* j = Find(key, inc)) {
                      j->retry_scheduled_at = 0;
                      Step(*j, core::il::Tick{});
                    }
                  }});
  });
}

// Exhaustive over core::il::Action (core/overloaded.h): an action without a handler here does not
// compile. Blocking work runs through the action executor, whose results step the job again.
void JobRunner::RunAction(JobEntry& e, const Action& a) {
  const JobRef job{e.key, e.incarnation};
  // The job's name for log lines, built only by the actions that log (a report's Log action is
  // usually over its budget).
  auto who_of = [&e] { return std::string(e.object_kind()) + " " + e.name(); };
  const json::ReportSpelling spelling = e.runner->spelling();
  std::visit(core::Overloaded{
                 [&](const core::il::Log& log) {
                   if (!e.AllowReportLog()) return;
                   switch (log.level) {
                     case core::il::Log::Level::kInfo:
                       spdlog::info("{} {}: {}", e.object_kind(), e.name(), log.text);
                       break;
                     case core::il::Log::Level::kWarn:
                       spdlog::warn("{} {}: {}", e.object_kind(), e.name(), log.text);
                       break;
                     case core::il::Log::Level::kError:
                       spdlog::error("{} {}: {}", e.object_kind(), e.name(), log.text);
                       break;
                   }
                 },
                 [&](const core::il::SendReport& r) {
                   // Its frame was committed with the step (Plan); this is the log line only.
                   spdlog::info("{}: reported {} {}", who_of(),
                                json::ReportPhaseText(r.report.phase, spelling),
                                json::ReportStatusText(r.report.status, spelling));
                 },
                 [&](const core::il::WriteSamples& w) { WriteSamples(e, job, w); },
                 [&](const core::il::CopyModel& c) { CopyModel(e, job, who_of(), c); },
                 [&](const core::il::WriteHotUpdate& h) { WriteHotUpdate(e, job, who_of(), h); },
             },
             a);
}

void JobRunner::WriteSamples(JobEntry& e, const JobRef& job, const core::il::WriteSamples& w) {
  std::vector<fs::FileRange> ranges;
  const std::string& spool = e.ledger.spool_path(w.spool);
  for (const auto& r : w.ranges) ranges.push_back({spool, r.begin, r.end});
  storage::SampleFile file;
  file.url = w.url;
  if (w.csv_header) file.prefix = e.ledger.cursor.header + "\n";
  file.ranges = std::move(ranges);
  file.index_url = w.index_url;
  file.index_tokens = w.index_layout == core::il::Layout::kV07
                          ? storage::IndexTokens::kEveryWithExtension
                          : storage::IndexTokens::kFirst;
  if (const DatasetSource* ds = datasets_.Source(e.meta().ns, e.dataset_name())) {
    file.index_prefix = storage::UrlPrefix(ds->url);
  }
  const core::il::Work work =
      w.stage == core::Stage::kTrain ? core::il::Work::kWriteTrain : core::il::Work::kWriteEval;
  const int64_t round = w.round;
  // The files are put in place on the pool and their syncs handed to ctx_.syncs, so the pool goes
  // on to the next job's files while the kernel syncs these together with theirs.
  executor_.RunOnPoolThen(job, [ctx = StorageContextOf(ctx_, e), dirs = DirsToMake(e),
                                file = std::move(file), work, round,
                                syncs = ctx_.syncs.get()](const ActionExecutor::Finish& finish) {
    (void)dirs.Make();  // its error is logged when the job's own request comes back
    auto put = storage::PutSampleFile(ctx, file);
    if (!put.ok()) {
      finish(core::il::FileWritten{work, round, false, put.message()});
      return;
    }
    auto pending = std::make_shared<storage::PendingSampleFile>(std::move(*put));
    syncs->Sync(pending->Syncs(), [pending, finish, work, round](std::vector<fs::SyncItem>& done) {
      const Status s = pending->Finish(done);
      finish(core::il::FileWritten{work, round, s.ok(), s.message()});
    });
  });
  FillSparesLater(e);
}

// Whatever the conditions said, a deploy copies only a model inside the job's own output, so a
// forged train output cannot put a host file in its place. Here, on the loop, the check is lexical
// only; the pool opens the source once beneath the job's root, following no link
// (storage::CopyModelWith), and copies from that fd.
void JobRunner::CopyModel(JobEntry& e, const JobRef& job, const std::string& who,
                          const core::il::CopyModel& c) {
  const std::string out = core::il::OutputRoot(e.output_dir());
  if (Status inside = LexicallyInside(c.src_url, out, "deploy source"); !inside.ok()) {
    executor_.Post(job, core::il::ModelCopied{false, inside.message()});
    return;
  }
  auto copy = [who, ctx = StorageContextOf(ctx_, e), dirs = DirsToMake(e), src = c.src_url,
               dst = c.dst_url]() -> Event {
    (void)dirs.Make();  // as for a sample file
    // A deploy keeps the model it replaces as a version (docs/design-notes.md, Model versions).
    auto r = storage::DeployModel(ctx, src, dst);
    if (r.ok() && r->kept_version > 0) {
      spdlog::info("{}: kept the previous model of {} as version {}", who, dst, r->kept_version);
    }
    if (r.ok() && !r->warning.empty()) spdlog::warn("{}: {}", who, r->warning);
    const Status s = r.status();
    return core::il::ModelCopied{s.ok(), s.message()};
  };
  executor_.RunOnPool(job, std::move(copy));
}

// As for a deploy, every model copied comes from the job's own output (lexically here; the copy
// opens it confined); the config path is checked by the writer.
void JobRunner::WriteHotUpdate(JobEntry& e, const JobRef& job, const std::string& who,
                               const core::il::WriteHotUpdate& h) {
  const std::string out = core::il::OutputRoot(e.output_dir());
  for (const core::il::CopyModel& c : h.copies) {
    if (Status inside = LexicallyInside(c.src_url, out, "hot-update source"); !inside.ok()) {
      executor_.Post(job, core::il::HotUpdateWritten{h.condition, false, inside.message()});
      return;
    }
  }
  executor_.RunOnPool(job, [who, ctx = StorageContextOf(ctx_, e), action = h]() -> Event {
    auto r = storage::WriteHotUpdate(ctx, action);
    if (r.ok() && r->resumed) {
      spdlog::info(
          "{}: hot update: {} was written before the restart (model_update_time {}); "
          "not written again",
          who, action.config_path, r->update_time);
    } else if (r.ok()) {
      for (size_t i = 0; i < r->copies.size(); ++i) {
        const storage::DeployResult& d = r->copies[i];
        if (d.kept_version > 0) {
          spdlog::info("{}: kept the previous model of {} as version {}", who,
                       action.copies[i].dst_url, d.kept_version);
        }
        if (!d.warning.empty()) spdlog::warn("{}: {}", who, d.warning);
      }
      spdlog::info("{}: hot update: wrote {} (model_update_time {})", who, action.config_path,
                   r->update_time);
    }
    const Status s = r.status();
    return core::il::HotUpdateWritten{action.condition, s.ok(), s.message()};
  });
}

}  // namespace sedna::app
