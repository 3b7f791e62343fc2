// The database's default location and the adoption of the old one (db_location.h).
#include "app/cli/db_location.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "adapters/fs/files.h"

namespace sedna::app {
namespace {

namespace stdfs = std::filesystem;

// The files beside a database that belong to it and move with it. -shm is not among them: it is
// an index of the WAL that SQLite rebuilds, and the checkpoint empties the WAL anyway.
constexpr const char* kCompanions[] = {"-wal", "-intake", "-sent"};

Status Errno(const std::string& what, int e) {
  return Status::Errno(e, what + ": " + std::strerror(e));
}

bool Exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

std::string Base(const std::string& p) { return p.substr(p.rfind('/') + 1); }

class Sqlite {
 public:
  ~Sqlite() {
    if (db_) sqlite3_close(db_);
  }
  Status Open(const std::string& path, int flags) {
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) return Status::Error(Message(rc));
    return Status::Ok();
  }
  // Runs `sql`; `row` gets each row's first column.
  Status Query(const char* sql, std::vector<std::string>* rows, int* rc_out = nullptr) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      if (rows) rows->push_back(t ? reinterpret_cast<const char*>(t) : "");
      rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc_out) *rc_out = rc;
    if (rc != SQLITE_DONE) return Status::Error(Message(rc));
    return Status::Ok();
  }
  void Close() {
    if (db_) sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  std::string Message(int rc) const { return db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc); }
  sqlite3* db_ = nullptr;
};

// An exclusive flock on <db>.lock, the daemon's own lock (controller.cc), released on destruction.
class DbLock {
 public:
  ~DbLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Take(const std::string& db) {
    const std::string lock = db + ".lock";
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Errno("database " + db + ": cannot create " + lock, errno);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      if (e == EWOULDBLOCK) {
        return Status::Error("database " + db + " is in use by another sedna-lc (lock " + lock +
                             ")");
      }
      return Errno("locking " + lock, e);
    }
    return Status::Ok();
  }

 private:
  int fd_ = -1;
};

Result<bool> SameBytes(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (stdfs::equivalent(a, b, ec)) return true;
  const auto sa = stdfs::file_size(a, ec);
  if (ec) return Result<bool>::Error("reading " + a + ": " + ec.message());
  const auto sb = stdfs::file_size(b, ec);
  if (ec) return Result<bool>::Error("reading " + b + ": " + ec.message());
  if (sa != sb) return false;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  if (!fa || !fb) return Result<bool>::Error("reading " + (fa ? b : a));
  auto ba = std::make_unique<char[]>(1 << 16), bb = std::make_unique<char[]>(1 << 16);
  while (fa && fb) {
    fa.read(ba.get(), 1 << 16);
    fb.read(bb.get(), 1 << 16);
    if (fa.gcount() != fb.gcount() ||
        std::memcmp(ba.get(), bb.get(), static_cast<size_t>(fa.gcount())) != 0) {
      return false;
    }
  }
  return true;
}

// A hard link where src and dst share a filesystem, else a copy (fsynced, mode kept).
Status LinkOrCopy(const std::string& src, const std::string& dst, bool copy, int64_t* bytes,
                  bool* copied) {
  struct stat st {};
  if (::stat(src.c_str(), &st) != 0) return Errno("reading " + src, errno);
  *bytes += st.st_size;
  if (!copy && ::link(src.c_str(), dst.c_str()) == 0) return Status::Ok();
  *copied = true;
  return fs::AtomicCopyFile(src, dst);
}

// The tree under `src` into the new directory `dst` (regular files and directories only).
Status LinkOrCopyTree(const std::string& src, const std::string& dst, bool copy, int64_t* bytes,
                      bool* copied) {
  if (Status s = fs::MakeDirs(dst); !s.ok()) return s;
  std::error_code ec;
  for (stdfs::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string from = it->path().string(), to = dst + "/" + it->path().filename().string();
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      if (Status s = LinkOrCopyTree(from, to, copy, bytes, copied); !s.ok()) return s;
    } else if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      if (Status s = LinkOrCopy(from, to, copy, bytes, copied); !s.ok()) return s;
    }
  }
  if (ec) return Status::Error("reading " + src + ": " + ec.message());
  return fs::SyncDir(dst);
}

// Merges the WAL into the database file, so that the file alone is the database.
Status Checkpoint(const std::string& db) {
  Sqlite c;
  if (Status s = c.Open(db, SQLITE_OPEN_READWRITE); !s.ok()) {
    return s.With("database " + db + ": cannot open to checkpoint it");
  }
  std::vector<std::string> busy;
  if (Status s = c.Query("PRAGMA wal_checkpoint(TRUNCATE)", &busy); !s.ok()) {
    return s.With("database " + db + ": checkpoint");
  }
  if (!busy.empty() && busy[0] != "0") {
    return Status::Error("database " + db + ": checkpoint: busy (is another process using it?)");
  }
  c.Close();
  struct stat st {};
  if (::stat((db + "-wal").c_str(), &st) == 0 && st.st_size > 0) {
    return Status::Error("database " + db + ": its -wal file still holds " +
                         std::to_string(st.st_size) + " bytes after a checkpoint");
  }
  return Status::Ok();
}

Status Remove(const std::string& p) {
  std::error_code ec;
  stdfs::remove_all(p, ec);
  if (ec) return Status::Error("removing " + p + ": " + ec.message());
  return Status::Ok();
}

// Removes the old database: the file first (after that the adoption is complete), then the rest.
Status RemoveOld(const Config& cfg) {
  const std::string& old = cfg.db_adopt_from;
  if (::unlink(old.c_str()) != 0 && errno != ENOENT) return Errno("removing " + old, errno);
  if (Status s = fs::SyncDir(fs::Dirname(old)); !s.ok()) return s;
  for (const char* c : {"-wal", "-shm", "-intake", "-sent", ".lock"}) {
    if (Status s = Remove(old + c); !s.ok()) return s;
  }
  if (!cfg.spool_adopt_from.empty()) return Remove(cfg.spool_adopt_from);
  return Status::Ok();
}

std::string Mib(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

}  // namespace

Result<DbProbe> ProbeDatabase(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return DbProbe{};
    return Errno("database " + path, errno);
  }
  if (!S_ISREG(st.st_mode)) return Result<DbProbe>::Error("database " + path + ": not a file");
  struct stat wal {};
  if (st.st_size == 0 && (::stat((path + "-wal").c_str(), &wal) != 0 || wal.st_size == 0)) {
    return DbProbe{DbKind::kEmpty, ""};
  }
  Sqlite c;
  if (Status s = c.Open(path, SQLITE_OPEN_READONLY); !s.ok()) {
    return s.With("database " + path + ": cannot open read-only");
  }
  std::vector<std::string> tables;
  int rc = SQLITE_OK;
  Status s =
      c.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", &tables, &rc);
  if (!s.ok()) {
    if ((rc & 0xff) == SQLITE_NOTADB) return DbProbe{DbKind::kNotSqlite, ""};
    return s.With("database " + path + ": reading its tables");
  }
  DbProbe p;
  for (const auto& t : tables) {
    if (t == "lc_state") return DbProbe{DbKind::kSednaLc, ""};
    if (t.rfind("sqlite_", 0) == 0) continue;
    p.tables += (p.tables.empty() ? "" : ", ") + t;
  }
  p.kind = p.tables.empty() ? DbKind::kEmpty : DbKind::kForeign;
  return p;
}

Result<std::string> AdoptOldDatabase(const Config& cfg, bool copy) {
  if (cfg.db_adopt_from.empty()) return std::string();
  const std::string& old_db = cfg.db_adopt_from;
  const std::string& db = cfg.db_path;
  const std::string how =
      " Move it away, or set SEDNA_DB_PATH (--db) to the database sedna-lc should use.";
  // The directory the controller would create anyway; failing here names the cause and the way
  // out (a non-root user may not write the host's /var/lib).
  if (Status s = fs::MakeDirs(fs::Dirname(db)); !s.ok()) {
    return Result<std::string>::Error(
        "database " + db + " (the default with the rootfs mounted, on the host): " + s.message() +
        "; run as a user who may write there, or set "
        "SEDNA_DB_PATH (--db) to a writable path");
  }
  auto now = ProbeDatabase(db);
  if (!now.ok()) return now.status();
  if (now->kind == DbKind::kForeign || now->kind == DbKind::kNotSqlite) {
    return Result<std::string>::Error(
        "database " + db + " (the default with the rootfs mounted) is not a sedna-lc database (" +
        (now->kind == DbKind::kNotSqlite ? std::string("not SQLite")
                                         : "tables " + now->tables + ", no lc_state") +
        "); sedna-lc does not open it as its own." + how);
  }
  // A sedna-lc daemon always makes <db>.lock beside its database (controller.cc). Without one the
  // file at the old default is someone else's (the Go LC's own database.db when ROOTFS_MOUNT_DIR
  // is "/" or /var/lib/sedna is mounted there): it is not even opened.
  if (!Exists(old_db + ".lock")) {
    if (!Exists(old_db)) return std::string();
    return "database: " + old_db + " (the old default) has no " + Base(old_db) +
           ".lock beside it, so it is no sedna-lc database; left alone, not opened";
  }
  auto old = ProbeDatabase(old_db);
  if (!old.ok()) return old.status();
  if (old->kind != DbKind::kSednaLc) {
    if (old->kind == DbKind::kAbsent) return std::string();
    return "database: " + old_db + " (the old default) is not a sedna-lc database; left alone";
  }
  std::error_code ec;
  if (now->kind != DbKind::kAbsent && stdfs::equivalent(db, old_db, ec)) return std::string();

  DbLock old_lock, new_lock;
  if (Status s = old_lock.Take(old_db); !s.ok()) return s;
  if (Status s = new_lock.Take(db); !s.ok()) return s;
  if (Status s = Checkpoint(old_db); !s.ok()) return s;

  if (now->kind == DbKind::kSednaLc) {
    auto same = SameBytes(old_db, db);
    if (!same.ok()) return same.status();
    if (!*same) {
      return Result<std::string>::Error(
          "database: both " + old_db + " (the old default, inside the container) and " + db +
          " (the default on the host since the rootfs is mounted) hold a sedna-lc database; "
          "sedna-lc does not choose. Keep one: delete the other with its -wal, -shm, -intake and "
          "-sent files" +
          (cfg.spool_adopt_from.empty()
               ? std::string()
               : " and its spool directory (" + cfg.spool_adopt_from + ", " + cfg.spool_dir + ")") +
          ", and start again; or set SEDNA_DB_PATH (--db) to the one to use.");
    }
    if (Status s = RemoveOld(cfg); !s.ok()) return s.With("finishing the adoption of " + old_db);
    return "database: " + old_db + " (the old default) was a byte copy of " + db +
           " (a move that stopped before removing it, or two unused databases): removed";
  }

  // Stage everything beside the new database, so that the renames into place cannot fail across
  // filesystems; the database goes last: once it is in place the adoption is done.
  const std::string stage = fs::Dirname(db) + "/.adopting";
  if (Status s = Remove(stage); !s.ok()) return s;
  if (Status s = fs::MakeDirs(stage); !s.ok()) return s;
  int64_t bytes = 0;
  bool copied = false;
  int files = 1;
  const std::string staged_db = stage + "/" + Base(db);
  if (Status s = LinkOrCopy(old_db, staged_db, copy, &bytes, &copied); !s.ok()) return s;
  std::vector<std::string> staged;
  for (const char* c : kCompanions) {
    if (!Exists(old_db + c)) continue;
    if (Status s = LinkOrCopy(old_db + c, staged_db + c, copy, &bytes, &copied); !s.ok()) return s;
    staged.emplace_back(c);
    ++files;
  }
  const bool spool = !cfg.spool_adopt_from.empty() && stdfs::is_directory(cfg.spool_adopt_from, ec);
  if (spool) {
    if (Status s = LinkOrCopyTree(cfg.spool_adopt_from, stage + "/spool", copy, &bytes, &copied);
        !s.ok()) {
      return s;
    }
  }
  if (Status s = fs::SyncDir(stage); !s.ok()) return s;

  // Whatever is beside the (absent or empty) new database belonged to no database of ours.
  for (const char* c : {"-wal", "-shm", "-intake", "-sent"}) {
    if (Status s = Remove(db + c); !s.ok()) return s;
  }
  for (const auto& c : staged) {
    if (::rename((staged_db + c).c_str(), (db + c).c_str()) != 0) {
      return Errno("moving " + staged_db + c + " to " + db + c, errno);
    }
  }
  if (spool) {
    if (Status s = Remove(cfg.spool_dir); !s.ok()) return s;
    if (Status s = fs::MakeDirs(fs::Dirname(cfg.spool_dir)); !s.ok()) return s;
    if (::rename((stage + "/spool").c_str(), cfg.spool_dir.c_str()) != 0) {
      return Errno("moving " + stage + "/spool to " + cfg.spool_dir, errno);
    }
    if (Status s = fs::SyncDir(fs::Dirname(cfg.spool_dir)); !s.ok()) return s;
  }
  if (::rename(staged_db.c_str(), db.c_str()) != 0) {
    return Errno("moving " + staged_db + " to " + db, errno);
  }
  if (Status s = fs::SyncDir(fs::Dirname(db)); !s.ok()) return s;
  if (Status s = RemoveOld(cfg); !s.ok()) return s.With("removing the adopted " + old_db);
  if (Status s = Remove(stage); !s.ok()) return s;
  return "database: moved " + old_db + " (the old default, inside the container) to " + db +
         " (on the host, where it survives a re-created container): " + std::to_string(files) +
         " file(s)" + (spool ? " and the spool directory " + cfg.spool_dir : std::string()) + ", " +
         Mib(bytes) + (copied ? ", copied" : ", linked");
}

}  // namespace sedna::app
