// Checkpoints a WAL database on a thread of its own, so that the connection that writes (the loop
// thread's) never runs a checkpoint, and so never waits for its fsyncs.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

struct sqlite3;

namespace sedna::store {

// What one background checkpoint did.
struct CheckpointReport {
  Status status;        // an error names the database and what failed
  int wal_frames = -1;  // frames in the WAL when it ran (-1 after an error)
  int backfilled = -1;  // frames copied into the database so far (-1 after an error)
  bool busy = false;    // another connection was checkpointing: nothing done, status ok
};

class WalCheckpointer {
 public:
  // Frames in the WAL after a commit that start a checkpoint (SQLite's own automatic threshold).
  static constexpr int kFrames = 1000;
  // Frames at which the writer copies the rest itself (a PASSIVE checkpoint in its commit), so
  // that the WAL starts over even when commits keep outrunning the thread: the WAL (32 MiB of
  // 4 KiB pages) is bounded.
  static constexpr int kMaxFrames = 8 * kFrames;

  // Takes over checkpointing of `writer` (an open WAL connection to `path`): replaces its
  // automatic checkpoints with a wal hook that wakes this object's thread after a commit leaves
  // kFrames or more in the WAL (and checkpoints on the writer past kMaxFrames). The thread runs a
  // PASSIVE checkpoint through a connection of its own, open only while it runs: writers are never
  // blocked, and frames a reader still needs are left for the next one. `on_checkpoint`, if set, is
  // called on that thread after each checkpoint. The destructor removes the hook and joins the
  // thread, and must run before `writer` is closed (closing it then checkpoints the rest, as SQLite
  // does).
  WalCheckpointer(sqlite3* writer, std::string path,
                  std::function<void(const CheckpointReport&)> on_checkpoint);
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sedna::store
