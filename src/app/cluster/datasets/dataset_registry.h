// The dataset registry: every Dataset the GM sent, its index on the host (watched with inotify and
// polled at the trigger's checkPeriodSeconds) or on S3 (polled into a local mirror), and its
// numberOfSamples, reported upstream when it changes (§P3.1); and the one pass over each index
// that reads new samples for the count and for every job of the Dataset.
//
// The pass, the contract:
// - Who reads: only the registry, on the pool, one pass in flight per Dataset (a job that asks
//   while one runs gets another after it), never while the outbox is full, each read bounded by
//   kIngestSliceBytes (the pass asks for the next slice at once). A pass reads with
//   dataset::ReadPass: the Dataset's count cursor and the cursor of each job of the Dataset (the
//   jobs the job runner hands over, `join`) that stand at the same place are read for with one
//   ReadNewSamples call: each appended byte is read once, whatever the number of jobs. A job whose
//   cursor lags (created later, a failed spool append, a kill between commits) reads the range it
//   lags by on its own, up to the cursor it lags behind (ReadOptions::stop), then reads with it.
// - Who owns each cursor: the count cursor is the registry's (its lc_state "dataset" record);
//   each job's cursor is the job runner's (in the job's record, with its state), as before. The
//   pass only computes new cursors; nobody shares a cursor object.
// - What is committed when: the pass's count goes back to the loop once the pass is read and its
//   jobs' spool writes are made and their syncs handed to the kernel (AIO; without it, or with no
//   sync to make, as soon as the pass is read), its own event: the count record with its
//   numberOfSamples frame (one transaction), committed while the disk syncs the spools. Each spool
//   a job appended to is flushed (fdatasync); then, in the pass's second event, always after the
//   count's, each job's step with its new cursor and spool ends (one transaction per job: the
//   job's spool bytes and its cursor together). A kill -9 between them leaves the count ahead of a
//   job: the job lags and catches up by the rule above; it neither loses nor counts a sample twice.
//   A job's error (its spool is full) stops that job alone, which keeps its cursor and retries; a
//   read error fails the members read with that call.
//
// Owns: the Datasets, the index watcher, each Dataset's poll timer, S3 sync in flight, mirror
//   files, count record (lc_state "dataset") and pass in flight.
// Calls: the store, the outbox (Full, Append, Pump), the inbound queue (index changes, polls,
//   passes and S3 syncs coming back from the pool are its events, so a count frame never
//   overtakes an acknowledged report), the pool (passes, S3 syncs).
// Called by: events of the inbound queue (GM frames, the outbox drained, its own), start-up
//   (reload), and the job runner (Source, Reschedule, Ingest).
// Emits (Hooks, wired by the composition root to the job runner):
//   changed(ns, name): the Dataset's spec changed (its jobs step with JobChanged);
//   join(source): a pass starts: the shares of the Dataset's jobs that read with it;
//   poll_seconds(ns, name): asked, the shortest checkPeriodSeconds of its jobs (60 when none).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/shared_read.h"
#include "adapters/dataset/spool.h"
#include "adapters/fs/sync_batch.h"
#include "adapters/json/resource_codec.h"
#include "adapters/s3/index_mirror.h"
#include "app/cluster/context.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/outbox.h"

namespace sedna::dataset {
class IndexWatcher;
}  // namespace sedna::dataset

namespace sedna::app {

// What a job reads of its Dataset.
struct DatasetSource {
  std::string key;         // "<ns>/dataset/<name>"
  std::string ns, name;    // the Dataset's metadata
  std::string url;         // spec.url as the GM sent it
  std::string local_path;  // the index file read; for an S3 index, its local mirror
  dataset::IndexFormat format = dataset::IndexFormat::kTxt;
  bool s3 = false;
};

// How `src`'s index is read by dataset::ReadNewSamples: a host index is opened under the rootfs
// with host links taken as the host takes them and never above it (fs::OpenHostFile); an S3
// mirror, the LC's own file, by its path.
dataset::ReadOptions IndexReadOptions(const DatasetSource& src, const std::string& rootfs,
                                      bool take_unterminated, int64_t max_bytes,
                                      int64_t max_line_bytes);
// A job's share of a pass: its cursor and sample sink (called on the pool), then, once the reads
// are done, `add_syncs` (if set: the syncs its spools need, their buffers written out) for every
// job before all jobs' syncs are made together (Context::syncs), then each job's `finish` with
// them made (`synced`: each job's where its add_syncs put them; on the loop, where the syncs'
// completion is read, or on the pool), then `apply` back on the loop, after the count is committed
// (its step commits the new cursor). Each is called exactly once, unless the LC stops first (then
// `finish` may not be, and `apply` is not).
struct IngestShare {
  dataset::PassMember member;
  std::function<void(const dataset::PassMember& member, dataset::Spool::SyncList& syncs)> add_syncs;
  std::function<void(dataset::PassMember& member, const std::vector<fs::SyncItem>& synced)> finish;
  std::function<void(const dataset::PassMember& member, bool take_unterminated)> apply;
};

class DatasetRegistry {
 public:
  struct Hooks {
    std::function<void(const std::string& ns, const std::string& name)> changed;
    std::function<std::vector<IngestShare>(const DatasetSource& src)> join;
    std::function<int64_t(const std::string& ns, const std::string& name)> poll_seconds;
    // Around the `apply` of a pass's shares (if set): the jobs' steps of one pass are committed
    // together (JobRunner::BeginSteps / EndSteps).
    std::function<void()> applying;
    std::function<void()> applied;
  };

  DatasetRegistry(Context& ctx, Outbox& outbox, InboundQueue& inbound, Hooks hooks);
  ~DatasetRegistry();
  DatasetRegistry(const DatasetRegistry&) = delete;
  DatasetRegistry& operator=(const DatasetRegistry&) = delete;

  // Starts the index watcher. Before any Upsert.
  void Start();
  // Inserts or updates a Dataset (from the GM: `persist`; from the store at start-up: not). A bad
  // spec is logged naming the field, and the previous version is kept.
  void Upsert(json::Decoded<core::Dataset> d, bool persist);
  void Delete(const std::string& key);
  // The Dataset <ns>/<name>, or null.
  const DatasetSource* Source(const std::string& ns, const std::string& name) const;
  // Its jobs changed: the poll follows their shortest checkPeriodSeconds.
  void Reschedule(const std::string& ns, const std::string& name);
  // A job of Dataset <ns>/<name> asks for its new samples: a pass now, or one after the pass in
  // flight.
  void Ingest(const std::string& ns, const std::string& name, bool take_unterminated);
  // Reads every index again (after the outbox drained below its bound).
  void ReadAll();
  // Cancels the timers and stops watching. S3 syncs in flight finish on the pool.
  void Stop();

 private:
  struct Entry;
  Entry* Find(const std::string& ns, const std::string& name);
  std::string MirrorPath(const std::string& key, const std::string& url) const;
  void EnsureWatch(Entry& e);
  int64_t PollSeconds(const Entry& e);
  void SchedulePoll(Entry& e);
  void PostRead(Entry& e, bool take_unterminated);
  void SyncS3(Entry& e);
  void OnS3Synced(const std::string& key, const std::string& mirror,
                  const Result<s3::MirrorSync>& r);
  void NoteSyncProblem(Entry& e, const std::string& problem);
  void NoteReadProblem(Entry& e, const std::string& problem);
  void OnIndexChanged(const std::string& path);
  struct Pass;
  void Read(Entry& e, bool take_unterminated);
  void OnCount(const std::string& key, const std::string& path, const Pass& pass);
  void OnRead(const std::string& key, const std::string& path, Pass& pass, bool take_unterminated);
  void CommitCount(Entry& e, const Pass& pass);
  bool StatusMaySend(Entry& e);

  Context& ctx_;
  Outbox& outbox_;
  InboundQueue& inbound_;
  Hooks hooks_;
  std::unique_ptr<dataset::IndexWatcher> watcher_;
  std::map<std::string, std::unique_ptr<Entry>> datasets_;
  mutable std::string key_;  // Source's lookup key (core::ResourceKeyInto)
};

}  // namespace sedna::app
