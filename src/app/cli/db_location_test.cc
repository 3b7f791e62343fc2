// The adoption of the old default database (db_location.h), on real files: a temp directory plays
// the container (the old default) and the host's root (the new one).
#include "app/cli/db_location.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/store/store.h"

namespace sedna::app {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "db_location_test.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

std::string Read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void Write(const std::string& p, const std::string& content) {
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

constexpr const char* kGormResourcesDdl =
    "CREATE TABLE `resources` (`id` integer,`created_at` datetime,`updated_at` datetime,"
    "`deleted_at` datetime,`name` text UNIQUE,`type_meta` text,`object_meta` text,`spec` text,"
    "PRIMARY KEY (`id`))";

// A container and a rootfs; the config LoadConfig makes when the rootfs is mounted.
struct Layout {
  TempDir t;
  Config cfg;
  Layout() {
    cfg.db_adopt_from = t.path() + "/container/var/lib/sedna/database.db";
    cfg.spool_adopt_from = t.path() + "/container/var/lib/sedna/spool";
    cfg.db_path = t.path() + "/rootfs/var/lib/sedna/sedna-lc/database.db";
    cfg.spool_dir = t.path() + "/rootfs/var/lib/sedna/sedna-lc/spool";
    fs::create_directories(t.path() + "/rootfs");
  }
  // A sedna-lc database at `path` holding ("il", "default/il/j") = `value`, the row committed to
  // the WAL only (as a killed daemon leaves it): a copy of the files taken while the writer had
  // the database open with checkpoints off.
  static void MakeSednaDb(const std::string& path, const std::string& value) {
    fs::create_directories(fs::path(path).parent_path());
    const std::string tmp = path + ".making";
    {
      auto st = store::Store::Open(tmp);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(tmp.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           ("PRAGMA wal_autocheckpoint = 0; INSERT INTO lc_state VALUES "
                            "('il', 'default/il/j', '" +
                            value + "', 'now')")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    fs::copy_file(tmp, path);
    fs::copy_file(tmp + "-wal", path + "-wal");
    Write(path + ".lock", "");  // as the daemon that wrote it left it (controller.cc)
    sqlite3_close(db);
    for (const char* c : {"", "-wal", "-shm", "-sent"}) fs::remove(tmp + c);
    ASSERT_GT(fs::file_size(path + "-wal"), 0u);
  }
  static std::string StateOf(const std::string& path) {
    auto st = store::Store::Open(path);
    if (!st.ok()) return "open: " + st.message();
    auto v = (*st)->GetState("il", "default/il/j");
    if (!v.ok()) return "get: " + v.message();
    return v->value_or("(none)");
  }
};

TEST(ProbeDatabase, TellsOursFromTheGoLcsAndOtherFiles) {
  TempDir t;
  const std::string ours = t.path() + "/ours.db", go = t.path() + "/go.db",
                    text = t.path() + "/text.db", empty = t.path() + "/empty.db";
  Layout::MakeSednaDb(ours, "x");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(go.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, kGormResourcesDdl, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  Write(text, std::string(4096, 'x'));
  Write(empty, "");
  const auto go_before = Read(go);
  EXPECT_EQ(ProbeDatabase(ours)->kind, DbKind::kSednaLc);
  EXPECT_EQ(ProbeDatabase(go)->kind, DbKind::kForeign);
  EXPECT_EQ(ProbeDatabase(go)->tables, "resources");
  EXPECT_EQ(ProbeDatabase(text)->kind, DbKind::kNotSqlite);
  EXPECT_EQ(ProbeDatabase(empty)->kind, DbKind::kEmpty);
  EXPECT_EQ(ProbeDatabase(t.path() + "/none.db")->kind, DbKind::kAbsent);
  EXPECT_EQ(Read(go), go_before);  // read-only
  EXPECT_FALSE(fs::exists(t.path() + "/none.db"));
}

// Moves the database with its WAL, intake journal, sent mark and spool, across filesystems (copy)
// or within one (hard links); the store then opens at the new path with the old data.
TEST(AdoptOldDatabase, MovesTheDatabaseAndItsFilesOnce) {
  for (bool copy : {false, true}) {
    SCOPED_TRACE(copy ? "copied" : "linked");
    Layout l;
    const Config& c = l.cfg;
    Layout::MakeSednaDb(c.db_adopt_from, "round 3");
    Write(c.db_adopt_from + "-intake", "journal bytes");
    Write(c.db_adopt_from + "-sent", "sent mark");
    Write(c.spool_adopt_from + "/default_il_j.train", "a.png\nb.png\n");
    Write(c.spool_adopt_from + "/s3-index/x.index", "s3://b/a.png\n");
    // Left by something else beside the absent new database: never applied to the adopted one.
    Write(c.db_path + "-intake", "stale journal");
    Write(c.spool_dir + "/stale", "stale");

    auto r = AdoptOldDatabase(c, copy);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_THAT(*r, HasSubstr("moved " + c.db_adopt_from));
    EXPECT_THAT(*r, HasSubstr("to " + c.db_path));
    EXPECT_THAT(*r, HasSubstr(copy ? "copied" : "linked"));

    for (const char* f : {"", "-wal", "-shm", "-intake", "-sent", ".lock"}) {
      EXPECT_FALSE(fs::exists(c.db_adopt_from + f)) << f;
    }
    EXPECT_FALSE(fs::exists(c.spool_adopt_from));
    EXPECT_FALSE(fs::exists(fs::path(c.db_path).parent_path() / ".adopting"));
    EXPECT_EQ(Read(c.db_path + "-intake"), "journal bytes");
    EXPECT_EQ(Read(c.db_path + "-sent"), "sent mark");
    EXPECT_EQ(Read(c.spool_dir + "/default_il_j.train"), "a.png\nb.png\n");
    EXPECT_EQ(Read(c.spool_dir + "/s3-index/x.index"), "s3://b/a.png\n");
    EXPECT_FALSE(fs::exists(c.spool_dir + "/stale"));
    EXPECT_EQ(Layout::StateOf(c.db_path), "round 3");  // the row that was in the WAL only

    // Once: the next start finds nothing to adopt and leaves the new database alone.
    auto again = AdoptOldDatabase(c, copy);
    ASSERT_TRUE(again.ok()) << again.message();
    EXPECT_EQ(*again, "");
    EXPECT_EQ(Layout::StateOf(c.db_path), "round 3");
  }
}

TEST(AdoptOldDatabase, BothDatabasesStopStartUpNamingBothAndWhatToDo) {
  Layout l;
  const Config& c = l.cfg;
  Layout::MakeSednaDb(c.db_adopt_from, "old");
  Layout::MakeSednaDb(c.db_path, "new");
  auto r = AdoptOldDatabase(c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr(c.db_adopt_from));
  EXPECT_THAT(r.message(), HasSubstr(c.db_path));
  EXPECT_THAT(r.message(), HasSubstr("does not choose"));
  EXPECT_THAT(r.message(), HasSubstr("SEDNA_DB_PATH"));
  EXPECT_EQ(Layout::StateOf(c.db_adopt_from), "old");
  EXPECT_EQ(Layout::StateOf(c.db_path), "new");
}

// A stop after the new database was in place and before the old one was removed: both are the
// same bytes, and the next start finishes the move.
TEST(AdoptOldDatabase, FinishesAnAdoptionThatStoppedBeforeRemovingTheOld) {
  Layout l;
  const Config& c = l.cfg;
  Layout::MakeSednaDb(c.db_adopt_from, "old");
  Write(c.db_adopt_from + "-intake", "journal");
  {
    sqlite3* db = nullptr;  // what the adoption does first: the WAL into the file
    ASSERT_EQ(sqlite3_open(c.db_adopt_from.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  fs::create_directories(fs::path(c.db_path).parent_path());
  fs::copy_file(c.db_adopt_from, c.db_path);
  fs::copy_file(c.db_adopt_from + "-intake", c.db_path + "-intake");
  auto r = AdoptOldDatabase(c);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_THAT(*r, HasSubstr("was a byte copy of " + c.db_path));
  EXPECT_FALSE(fs::exists(c.db_adopt_from));
  EXPECT_FALSE(fs::exists(c.db_adopt_from + "-intake"));
  EXPECT_EQ(Read(c.db_path + "-intake"), "journal");
  EXPECT_EQ(Layout::StateOf(c.db_path), "old");
}

// The Go LC's database.db (same resources table, plaintext credentials) at the new path is never
// opened as ours: start-up stops, and the file is not changed.
TEST(AdoptOldDatabase, RefusesAForeignDatabaseAtTheNewPath) {
  for (bool with_old : {false, true}) {
    SCOPED_TRACE(with_old ? "with an old database" : "alone");
    Layout l;
    const Config& c = l.cfg;
    if (with_old) Layout::MakeSednaDb(c.db_adopt_from, "old");
    fs::create_directories(fs::path(c.db_path).parent_path());
    {
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(c.db_path.c_str(), &db), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(db, kGormResourcesDdl, nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
    }
    const auto before = Read(c.db_path);
    auto r = AdoptOldDatabase(c);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.message(), HasSubstr(c.db_path));
    EXPECT_THAT(r.message(), HasSubstr("not a sedna-lc database (tables resources, no lc_state)"));
    EXPECT_THAT(r.message(), HasSubstr("SEDNA_DB_PATH"));
    EXPECT_EQ(Read(c.db_path), before);
    if (with_old) {
      EXPECT_EQ(Layout::StateOf(c.db_adopt_from), "old");
    }
  }
}

TEST(AdoptOldDatabase, LeavesAnythingButASednaLcDatabaseAtTheOldPathAlone) {
  Layout l;
  const Config& c = l.cfg;
  Write(c.db_adopt_from, std::string(4096, 'x'));
  Write(c.db_adopt_from + ".lock", "");
  auto r = AdoptOldDatabase(c);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_THAT(*r, HasSubstr("not a sedna-lc database; left alone"));
  EXPECT_EQ(Read(c.db_adopt_from), std::string(4096, 'x'));
  EXPECT_FALSE(fs::exists(c.db_path));
}

// The Go LC's database.db at the old default (ROOTFS_MOUNT_DIR "/", or /var/lib/sedna mounted
// into the container): no sedna-lc daemon left a database.db.lock beside it, so it is not even
// opened (inotify sees no open), and nothing is created beside it.
TEST(AdoptOldDatabase, NeverOpensTheGoLcsDatabaseAtTheOldPath) {
  Layout l;
  const Config& c = l.cfg;
  fs::create_directories(fs::path(c.db_adopt_from).parent_path());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(c.db_adopt_from.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, kGormResourcesDdl, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string before = Read(c.db_adopt_from);
  const int in = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(in, 0);
  ASSERT_GE(::inotify_add_watch(in, c.db_adopt_from.c_str(), IN_ALL_EVENTS), 0);
  ASSERT_GE(::inotify_add_watch(in, fs::path(c.db_adopt_from).parent_path().c_str(),
                                IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO),
            0);
  auto r = AdoptOldDatabase(c);
  char buf[4096];
  const ssize_t n = ::read(in, buf, sizeof buf);  // nothing queued: EAGAIN
  const int read_errno = errno;
  ::close(in);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_THAT(*r, HasSubstr("left alone, not opened"));
  EXPECT_EQ(n, -1) << "inotify saw " << n << " bytes of events on the Go LC's database";
  EXPECT_EQ(read_errno, EAGAIN);
  EXPECT_EQ(Read(c.db_adopt_from), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(fs::path(c.db_adopt_from).parent_path()),
                          fs::directory_iterator()),
            1);
  EXPECT_FALSE(fs::exists(c.db_path));
}

TEST(AdoptOldDatabase, NothingToDoWithoutAnOldDatabaseOrWithAnExplicitPath) {
  Layout l;
  Config c = l.cfg;
  auto r = AdoptOldDatabase(c);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "");
  EXPECT_FALSE(fs::exists(c.db_path));

  // --db / SEDNA_DB_PATH: LoadConfig leaves db_adopt_from empty; an old database stays put.
  Layout::MakeSednaDb(c.db_adopt_from, "old");
  c.db_adopt_from.clear();
  r = AdoptOldDatabase(c);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "");
  EXPECT_TRUE(fs::exists(l.cfg.db_adopt_from));
  EXPECT_FALSE(fs::exists(c.db_path));
}

// The host's directory cannot be made (a non-root user): the error says so and what to do.
TEST(AdoptOldDatabase, AnUnwritableHostDirectoryIsNamedWithTheWayOut) {
  Layout l;
  Config c = l.cfg;
  Write(l.t.path() + "/rootfs/var/lib", "a file where a directory must be");
  auto r = AdoptOldDatabase(c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr("database " + c.db_path +
                                     " (the default with the rootfs "
                                     "mounted, on the host): mkdir"));
  EXPECT_THAT(r.message(), HasSubstr("or set SEDNA_DB_PATH (--db) to a writable path"));
}

// A daemon still running on the old database (its <db>.lock held): not moved under it.
TEST(AdoptOldDatabase, WaitsForTheDaemonThatHoldsTheOldDatabase) {
  Layout l;
  const Config& c = l.cfg;
  Layout::MakeSednaDb(c.db_adopt_from, "old");
  const int fd = ::open((c.db_adopt_from + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto r = AdoptOldDatabase(c);
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr("in use by another sedna-lc"));
  EXPECT_EQ(Layout::StateOf(c.db_adopt_from), "old");
  EXPECT_FALSE(fs::exists(c.db_path));
}

}  // namespace
}  // namespace sedna::app
