// Spare files and directories, made ahead of time beneath a job's root, so that what is written
// later on a path someone waits for (a round's sample files, before its Ready) needs no new inode:
// a spare file (an unnamed O_TMPFILE) is linked in place of a temp file (Dir::ReplaceUnsynced), a
// spare directory is moved to where a new directory is wanted (Dir::MoveDirHere). Making an inode
// is not always cheap: on an ext4 without a journal the allocator passes over every inode deleted
// in the last minutes, reading each one's inode-table entry (`recently_deleted`), and on this
// project's test machine a create or a mkdir then costs 0.1-0.7 ms of CPU (docs/benchmarks.md,
// session 31).
//
// Owns: the spares. A spare file is an open fd of an unnamed file: nothing has its name, and the
//   kernel frees one a killed process left. A spare directory is an empty directory named
//   ".sedna-spare-<pid>-<n>" in the job's root, with an fd of that root: the destructor removes
//   the ones not taken, Drop hands them to its caller to remove, Fill removes those of processes
//   that are gone. At most
//   `max_total` fds in all; per key at most `files_per_key` files and one directory.
// Thread-safe: filled and taken on the pool, wanted and dropped on the loop.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/fs/confined.h"

namespace sedna::fs {

class SpareFiles {
 public:
  // A spare directory: `name` in `parent` (the job's root), the directory `id`.
  struct SpareDir {
    Dir parent;
    std::string name;
    FileId id;
  };

  explicit SpareFiles(size_t max_total = 96, size_t files_per_key = 2)
      : max_total_(max_total), files_per_key_(files_per_key) {}
  ~SpareFiles();
  SpareFiles(const SpareFiles&) = delete;
  SpareFiles& operator=(const SpareFiles&) = delete;

  // `key` (a job's root) may have spares from now on, until Drop.
  void Want(const std::string& key);
  // Makes spares in `dir` for a wanted `key`: files (O_TMPFILE, mode 0644) until it has
  // files_per_key, a directory (mode 0755, as a mkdir of the LC's) unless it has one, while the
  // total allows. A filesystem without O_TMPFILE, or any other error, leaves it with fewer (callers
  // then make their files and directories as they would without spares); nothing is reported.
  // Returns how many it made.
  size_t Fill(const std::string& key, const Dir& dir);
  // One of `key`'s spare files (invalid: none). It was made in the directory Fill was given for
  // `key`; it can be linked into any directory of the same mount.
  UniqueFd Take(const std::string& key);
  // `key`'s spare directory, if it has one. The caller moves it (Dir::MoveDirHere) or removes it.
  std::optional<SpareDir> TakeDir(const std::string& key);
  // Closes `key`'s spare files and makes none for it until it is wanted again (its job is gone, or
  // moved to another root). Returns its spare directories, for the caller to Remove (on the pool:
  // the loop does no filesystem work).
  [[nodiscard]] std::vector<SpareDir> Drop(const std::string& key);
  size_t total() const;  // fds held: a file, or a directory's parent
  // Removes the spare directory `d` if it is still the (empty) directory made; for a caller that
  // took it and did not move it.
  static void Remove(const SpareDir& d);

 private:
  struct Entry {
    std::vector<UniqueFd> files;
    std::vector<SpareDir> dirs;
  };

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> spares_;  // the wanted keys; guarded by mu_
  size_t total_ = 0;                               // guarded by mu_
  const size_t max_total_, files_per_key_;
};

}  // namespace sedna::fs
