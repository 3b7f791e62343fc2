// The swap both ways on one node (docs/deploy.md "Swap a running Sedna install"): a node whose Go
// LC (Sedna v0.7.0) kept its database at <rootfs>/var/lib/sedna/database.db is taken over by
// sedna-lc, which runs, is killed and resumes from its own database beside it
// (<rootfs>/var/lib/sedna/sedna-lc/), and then gives the node back. The Go LC's file is never
// opened (inotify), never changed (bytes, inode, times), and nothing but sedna-lc's own directory
// appears beside it; its rows are still the Go LC's, which is what the Go LC resumes from.
//
// By default the Go LC's database is the fixture go_lc_v070_database.sql: the `.dump` of a
// database the real Go LC v0.7.0 wrote for this test's job (docs/deploy.md says how it was made).
// With SEDNA_TEST_GO_LC=<path of a Go LC v0.7.0 binary> the real Go LC runs first (writing its
// database), and again after sedna-lc (resuming from it), then sedna-lc once more.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

namespace stdfs = std::filesystem;

// The Go LC's rows, one string per row ("id | name | created_at | type_meta | object_meta | spec |
// deleted_at"), read through SQLite read-only; an error is a row saying so.
std::vector<std::string> GoRows(const std::string& path) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {"cannot open " + path};
  }
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "SELECT id, name, created_at, type_meta, object_meta, spec, ifnull(deleted_at, '') FROM "
      "resources ORDER BY name";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    rows.push_back(std::string("query: ") + sqlite3_errmsg(db));
  } else {
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < 7; ++c) {
        const unsigned char* t = sqlite3_column_text(st, c);
        row += (c ? " | " : "") + std::string(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(row);
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

struct FileId {
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};
  bool operator==(const FileId& o) const {
    return ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
  }
};
FileId IdOf(const std::string& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : stdfs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Everything inotify reported on the watched paths, as "<watched name>: <event names>".
class Watch {
 public:
  Watch() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}
  ~Watch() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Add(const std::string& path, uint32_t mask) {
    const int wd = ::inotify_add_watch(fd_, path.c_str(), mask);
    if (wd < 0) return false;
    names_[wd] = path;
    return true;
  }
  std::vector<std::string> Drain() {
    std::vector<std::string> out;
    alignas(inotify_event) char buf[8192];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + i);
        std::string what = names_[e->wd] + (e->len ? "/" + std::string(e->name) : "") + ":";
        if (e->mask & IN_OPEN) what += " open";
        if (e->mask & IN_ACCESS) what += " read";
        if (e->mask & IN_MODIFY) what += " write";
        if (e->mask & IN_ATTRIB) what += " attrib";
        if (e->mask & IN_CREATE) what += " create";
        if (e->mask & IN_DELETE) what += " delete";
        if (e->mask & (IN_MOVED_FROM | IN_MOVED_TO)) what += " move";
        out.push_back(what);
        i += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return out;
  }

 private:
  int fd_;
  std::map<int, std::string> names_;
};

class LcSwapTest : public IlJobFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-swap-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + "/models/deploy_model/saved_model.pb", "deployed");
    WriteFile(rootfs + "/data/train_data.txt", "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    go_dir = rootfs + "/var/lib/sedna";
    go_db = go_dir + "/database.db";
    our_db = go_dir + "/sedna-lc/database.db";
    // sedna-lc (StartLc: the DaemonSet's environment) on its database where the default puts it
    // with the rootfs mounted (load_config_test checks that default). Named with --db so that the
    // test never looks at this machine's own /var/lib/sedna (the default's old location,
    // db_location.h).
    db = our_db;
    if (const char* go = std::getenv("SEDNA_TEST_GO_LC"); go && *go) go_lc = go;
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
  }

  // The real Go LC (SEDNA_TEST_GO_LC) on the same node: same env, its database under the rootfs.
  void RunGoLc(const std::string& log) {
    LcProcess go(go_lc,
                 {{"GM_ADDRESS", gm->address()},
                  {"NODENAME", "edge-node"},
                  {"BIND_PORT", std::to_string(port)},
                  {"ROOTFS_MOUNT_DIR", rootfs}},
                 {}, tmp + "/" + log);
    ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(20))) << go.Log();
    gm->Send("insert", DatasetObject());
    Sync();
    // The Go LC saves the job as it handles it (db.SaveResource); it sends nothing back that
    // says so, so its file is watched for the row (bounded).
    // The job's row written (first run) or updated (a later run: the Go LC found its own row).
    const std::string before = JobUpdatedAt();
    auto saved = [&] {
      const std::string now = JobUpdatedAt();
      return !now.empty() && now != before;
    };
    for (int i = 0; i < 200 && !saved(); ++i) ::usleep(50 * 1000);
    go.Stop();
    ASSERT_TRUE(saved()) << go.Log();
    // No error from its database (klog error lines start with 'E').
    std::istringstream lines(go.Log());
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("E", 0) == 0 &&
          (line.find("db") != std::string::npos || line.find("resource(") != std::string::npos)) {
        ADD_FAILURE() << "the Go LC's database: " << line;
      }
    }
    if (std::getenv("SEDNA_TEST_GO_LC_SHOW_LOG")) std::cout << go.Log();
    // What the Go LC sent the GM is not what the tests after it wait for.
    while (gm->Next("Dataset", std::chrono::milliseconds(0))) {
    }
    while (gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0))) {
    }
  }

  // updated_at of the job's row in the Go LC's database, "" when there is none.
  std::string JobUpdatedAt() {
    std::string at;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(go_db.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      const std::string sql =
          "SELECT updated_at FROM resources WHERE name = 'default/incrementallearningjob/" +
          std::string(kIlJobName) + "'";
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        at = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      }
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return at;
  }

  // The fixture: a database the Go LC v0.7.0 wrote for this job, from its `.dump`.
  void WriteGoFixture() {
    stdfs::create_directories(go_dir);
    const std::string sql = ReadFile(std::string(SEDNA_SOURCE_DIR) +
                                     "/tests/integration/fixtures/go_lc_v070_database.sql");
    ASSERT_FALSE(sql.empty());
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(go_db.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    const std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }

  // Samples 1..n, the count seen, the round's Train Ready sent.
  void FirstRoundToTrainReady() {
    gm->Send("insert", DatasetObject());
    Sync();
    Barrier();
    AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
    WaitSampleCount(1000);
    UpstreamFrame il1 = NextJob();
    ASSERT_NE(il1.content.find(R"("phase":"Train","status":"Ready")"), std::string::npos)
        << il1.content;
    job->Report(il1.content);
    job->SetPod(core::Stage::kTrain, core::gm::PodPhase::kRunning);
    Sync();
  }

  // After a restart: samples appended while it was down are counted once on top of its own
  // count, and no second Train Ready for the round it had started.
  void ResumesItsOwnState(int total_before, int total_after) {
    AppendFile(rootfs + "/data/train_data.txt", IndexLines(total_before + 1, total_after));
    Sync();
    WaitSampleCount(total_after, kIlDatasetName, "samples counted again after the restart");
    Barrier();
    auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
    EXPECT_FALSE(extra) << "a second Train Ready after the restart: " << extra->content;
  }

  std::string go_dir, go_db, our_db, go_lc;
};

TEST_F(LcSwapTest, GoLcToSednaLcAndBack_TheGoLcsDatabaseIsNeverOpened) {
  if (go_lc.empty()) {
    WriteGoFixture();
  } else {
    RunGoLc("go-lc-1.log");
    // How the fixture was made: SEDNA_TEST_GO_LC_DB_COPY=<file> keeps a copy to `.dump`.
    if (const char* copy = std::getenv("SEDNA_TEST_GO_LC_DB_COPY"); copy && *copy) {
      stdfs::copy_file(go_db, copy, stdfs::copy_options::overwrite_existing);
    }
  }
  const std::string go_bytes = ReadFile(go_db);
  const FileId go_id = IdOf(go_db);
  const std::vector<std::string> go_rows = GoRows(go_db);
  // The Dataset, the job and the initial model, by name.
  ASSERT_EQ(go_rows.size(), 3u);
  ASSERT_NE(go_rows[1].find("incrementallearningjob/" + std::string(kIlJobName)), std::string::npos)
      << go_rows[1];
  const std::vector<std::string> beside = Names(go_dir);

  Watch watch;
  ASSERT_TRUE(watch.Add(go_db, IN_ALL_EVENTS));
  ASSERT_TRUE(watch.Add(go_dir, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB));

  // sedna-lc takes the node: a round starts, it is killed -9 and resumes from its own database.
  StartLc();
  FirstRoundToTrainReady();
  Barrier();
  KillAndRestart();
  ResumesItsOwnState(1000, 1700);
  EXPECT_EQ(lc->Stop(), 0);
  EXPECT_TRUE(stdfs::exists(our_db)) << lc->Log();

  // Only sedna-lc's own directory appeared beside the Go LC's file; the file was not touched.
  EXPECT_EQ(watch.Drain(), std::vector<std::string>{go_dir + "/sedna-lc: create"});
  EXPECT_EQ(ReadFile(go_db), go_bytes);
  EXPECT_TRUE(IdOf(go_db) == go_id);
  std::vector<std::string> now = Names(go_dir);
  std::vector<std::string> expected = beside;
  expected.push_back("sedna-lc");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(now, expected);
  EXPECT_EQ(GoRows(go_db), go_rows);

  if (go_lc.empty()) return;
  // The Go LC again, from its own database; then sedna-lc again, from its own.
  RunGoLc("go-lc-2.log");
  const std::vector<std::string> go_rows_2 = GoRows(go_db);
  ASSERT_EQ(go_rows_2.size(), go_rows.size());
  // The same rows (id, name and created_at kept: the Go LC updated its own rows, it did not start
  // over).
  auto key = [](const std::string& row) {
    size_t at = 0;
    for (int i = 0; i < 3 && at != std::string::npos; ++i) at = row.find(" | ", at + 1);
    return row.substr(0, at);
  };
  for (size_t i = 0; i < go_rows.size(); ++i) EXPECT_EQ(key(go_rows_2[i]), key(go_rows[i]));
  StartLc();
  job->SetPod(core::Stage::kTrain, core::gm::PodPhase::kRunning);
  ResumesItsOwnState(1700, 1800);
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
