// The outbox's sent mark: the id of the last frame written upstream, kept in a small file beside
// the database (`<db>-sent`) that is memory-mapped, so recording a write is one store to a shared
// page, no syscall and no SQLite commit.
//
// Contract: after Set(id) returns, the value survives a crash of this process (kill -9): the
// page belongs to the page cache, which the kernel writes back on its own. Like the database
// under synchronous=NORMAL it is not fsynced, so after a power loss it may read older (frames
// are re-sent: at-least-once) or, with the WAL losing its newest commits, newer than the outbox's
// last id; Store::Open clamps it to the outbox's AUTOINCREMENT sequence so that no new frame is
// ever taken as sent.
//
// The file records the database file's inode (its identity): a mark left by another database
// file (deleted and re-created, or replaced) reads as 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace sedna::store {

class SentMark {
 public:
  // Opens or creates `path` (blocks allocated up front, so a full disk fails here, never as a
  // SIGBUS on a later store). `db_identity` is compared with the one in the file; on a mismatch,
  // or in a new or malformed file, the mark starts at 0 with the new identity.
  static Result<std::unique_ptr<SentMark>> Open(const std::string& path, uint64_t db_identity);

  ~SentMark();
  SentMark(const SentMark&) = delete;
  SentMark& operator=(const SentMark&) = delete;

  int64_t Get() const;
  void Set(int64_t id);

 private:
  struct Page;
  SentMark(int fd, Page* page) : fd_(fd), page_(page) {}
  int fd_;
  Page* page_;
};

}  // namespace sedna::store
