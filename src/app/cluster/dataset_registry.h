// The dataset registry: every Dataset the GM sent, its index on the host (watched with inotify and
// polled at the trigger's checkPeriodSeconds) or on S3 (polled into a local mirror), and its
// numberOfSamples, reported upstream when it changes (§P3.1).
//
// Owns: the Datasets, the index watcher, each Dataset's poll timer, S3 sync in flight, mirror
//   files and count record (lc_state "dataset").
// Calls: the store, the outbox (Full, Append, Pump), the inbound queue (index changes, polls,
//   index reads and S3 syncs coming back from the pool are its events, so a count frame never
//   overtakes an acknowledged report), the pool (index reads, S3 syncs).
// Called by: events of the inbound queue (GM frames, the outbox drained, its own), start-up
//   (reload), and the job runner (Source, Reschedule).
// Emits (Hooks, wired by the composition root to the job runner):
//   changed(ns, name): the Dataset's spec changed (its jobs step with JobChanged);
//   read(source, take_unterminated): its index may hold new samples (its jobs ingest them);
//   poll_seconds(ns, name): asked, the shortest checkPeriodSeconds of its jobs (60 when none).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "adapters/dataset/index_reader.h"
#include "adapters/json/resource_codec.h"
#include "adapters/s3/index_mirror.h"
#include "app/cluster/context.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/outbox.h"

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

class DatasetRegistry {
 public:
  struct Hooks {
    std::function<void(const std::string& ns, const std::string& name)> changed;
    std::function<void(const DatasetSource& src, bool take_unterminated)> read;
    std::function<int64_t(const std::string& ns, const std::string& name)> poll_seconds;
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
  void Read(Entry& e, bool take_unterminated);
  void OnRead(const std::string& key, const std::string& path, const dataset::IndexCursor& cursor,
              const Result<dataset::ReadResult>& r, bool take_unterminated);
  bool StatusMaySend(Entry& e);

  Context& ctx_;
  Outbox& outbox_;
  InboundQueue& inbound_;
  Hooks hooks_;
  std::unique_ptr<dataset::IndexWatcher> watcher_;
  std::map<std::string, std::unique_ptr<Entry>> datasets_;
};

}  // namespace sedna::app
