// Several files' fsyncs made at once. On this project's test machine (ext4 without a journal, a
// virtual disk) each fsync of a small file is a write of its data and its inode and a flush of the
// disk's cache, 0.1-0.9 ms; made one after another, six of them cost six flushes, made together
// (each on a kernel worker) the block layer merges their flushes: six files and their directories
// in 0.38-0.42 ms against 0.71-0.75 ms one after another (docs/benchmarks.md, session 32).
//
// The kernel runs them together through Linux AIO (IOCB_CMD_FSYNC / IOCB_CMD_FDSYNC, 4.18+): each
// sync is queued to a kernel worker and its completion read from the AIO context. Where AIO is
// missing (no context: ENOSYS, a seccomp profile, aio-max-nr reached) or refuses a file (a
// filesystem without fsync), that file is synced by the calling thread, in turn: the same result,
// one after another. An item's `error` is what its fsync returned (0 or an errno), whichever way it
// was made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace sedna::fs {

// One sync to make: fsync(fd), or fdatasync(fd) with `data_only`. The caller keeps `fd` open until
// the sync is made. `error` is set when it is: 0, or the errno of the failed sync.
struct SyncItem {
  int fd = -1;
  bool data_only = false;
  int error = 0;
};

// Makes every item's sync and returns when all are made (on the calling thread; the AIO context is
// the thread's own, made at its first use). One item is synced directly.
void SyncAll(std::span<SyncItem> items);

// Syncs whose completions come back later: the caller submits from any thread and goes on; the
// owner of an event loop waits for event_fd() to be readable while in_flight() > 0 and then calls
// Reap, which calls each batch's `done` once all its items are made.
//
// Owns: the AIO context, its eventfd, and the batches in flight (their items and `done`).
// Thread-safe. Destroying it waits for the syncs in flight (the kernel's io_destroy) and drops
// their batches without calling `done`.
class Syncer {
 public:
  using Done = std::function<void(std::vector<SyncItem>& items)>;

  // `max_in_flight`: items in flight at most; a batch over what is left is synced by its caller.
  explicit Syncer(size_t max_in_flight = 256);
  ~Syncer();
  Syncer(const Syncer&) = delete;
  Syncer& operator=(const Syncer&) = delete;

  // Whether syncs go through AIO (false: every Sync syncs on its caller's thread).
  bool async() const { return ctx_ != 0; }
  // Readable when completions wait for Reap; -1 when !async().
  int event_fd() const { return event_fd_; }
  // Starts the syncs of `items` and returns true when it started the first batch in flight (the
  // loop's wait is to be armed). `done` is called exactly once with the items, their `error` set:
  // by Reap, or before Sync returns on this thread when AIO took none of them. A batch with no
  // items is done at once.
  bool Sync(std::vector<SyncItem> items, Done done);
  // Reads the completions there are (never blocks) and calls the `done` of every batch finished.
  void Reap();
  // Batches started and not done.
  size_t in_flight() const;

 private:
  struct Batch {
    std::vector<SyncItem> items;
    size_t left = 0;  // items not yet made
    Done done;
  };
  // Marks item `index` of batch `id` made with `error`; the batch when it was the last one.
  std::optional<Batch> Made(uint64_t id, size_t index, int error);

  unsigned long ctx_ = 0;  // aio_context_t; 0: no AIO
  int event_fd_ = -1;
  const size_t max_in_flight_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Batch> batches_;  // guarded by mu_
  size_t items_in_flight_ = 0;                   // guarded by mu_
  uint64_t next_id_ = 1;                         // guarded by mu_
};

}  // namespace sedna::fs
