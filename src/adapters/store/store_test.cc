#include "adapters/store/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "adapters/clock/fake_clock.h"

namespace sedna::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The DDL of docs/protocol.md §P9.2, as GORM issues it (one line each).
constexpr const char* kGormResourcesDdl =
    "CREATE TABLE `resources` (`id` integer,`created_at` datetime,`updated_at` datetime,"
    "`deleted_at` datetime,`name` text UNIQUE,`type_meta` text,`object_meta` text,`spec` text,"
    "PRIMARY KEY (`id`))";
constexpr const char* kGormIndexDdl =
    "CREATE INDEX `idx_resources_deleted_at` ON `resources`(`deleted_at`)";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "store_test.XXXXXX").string();
    char* d = mkdtemp(tmpl.data());
    if (d == nullptr) std::abort();
    path_ = d;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A second, raw connection to the same file: plays the Go LC or another process.
class RawDb {
 public:
  explicit RawDb(const fs::path& p) {
    if (sqlite3_open(p.c_str(), &db_) != SQLITE_OK) std::abort();
  }
  ~RawDb() { sqlite3_close(db_); }
  // Returns the SQLite result code.
  int Exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  // First column of every row, as text ("NULL" for NULL).
  std::vector<std::string> Column(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return out;
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      out.push_back(t ? std::string(t, sqlite3_column_bytes(s, 0)) : "NULL");
    }
    sqlite3_finalize(s);
    return out;
  }
  std::string One(const std::string& sql) {
    auto c = Column(sql);
    return c.empty() ? "<no row>" : c[0];
  }

 private:
  sqlite3* db_ = nullptr;
};

std::unique_ptr<Store> MustOpen(const fs::path& p, StoreOptions o = {}) {
  auto r = Store::Open(p.string(), o);
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? std::move(r).value() : nullptr;
}

Status PutAndAppend(Store& s, const std::string& key, const std::string& value) {
  return s.Transact([&](Store::Tx& tx) -> Status {
    if (Status st = tx.PutState("job", key, value); !st.ok()) return st;
    auto id = tx.OutboxAppend("frame-" + key);
    return id.status();
  });
}

// Appends `frames` in one transaction; their outbox ids.
std::vector<int64_t> AppendAll(Store& s, std::initializer_list<const char*> frames) {
  std::vector<int64_t> ids;
  Status st = s.Transact([&](Store::Tx& tx) -> Status {
    for (const char* f : frames) {
      auto id = tx.OutboxAppend(f);
      if (!id.ok()) return id.status();
      ids.push_back(*id);
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  return ids;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// mattn/go-sqlite3's rendering of time.Time: fraction without trailing zeros, UTC offset.
const std::regex kGormTime(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{0,8}[1-9])?\+00:00)");

TEST(StoreTest, OpenCreatesParentDirectoriesAndFile) {
  TempDir t;
  fs::path p = t.path() / "a" / "b" / "database.db";
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path(), p.string());
  EXPECT_TRUE(fs::is_regular_file(p));
}

TEST(StoreTest, WalEnabledAndSchemaVersionSet) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  RawDb raw(p);
  EXPECT_EQ(raw.One("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.One("PRAGMA user_version"), "1");
}

TEST(StoreTest, ResourcesTableIsExactlyGormDdl) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  RawDb raw(p);
  EXPECT_EQ(raw.One("SELECT sql FROM sqlite_master WHERE type='table' AND name='resources'"),
            kGormResourcesDdl);
  EXPECT_EQ(raw.One("SELECT sql FROM sqlite_master WHERE name='idx_resources_deleted_at'"),
            kGormIndexDdl);
  EXPECT_THAT(raw.Column("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"),
              ::testing::IsSupersetOf({"lc_outbox", "lc_state", "resources"}));
}

TEST(StoreTest, ResourceUpsertLoadDelete) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  ResourceRow a{"default/dataset/a", R"({"kind":"Dataset"})", R"({"name":"a"})", R"({"url":"/x"})"};
  ResourceRow b{"default/model/b", R"({"kind":"Model"})", R"({"name":"b"})", R"({"url":"/m"})"};
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 if (Status st = tx.UpsertResource(a); !st.ok()) return st;
                 return tx.UpsertResource(b);
               }).ok());
  auto rows = s->LoadResources();
  ASSERT_TRUE(rows.ok()) << rows.message();
  EXPECT_EQ(*rows, (std::vector<ResourceRow>{a, b}));

  RawDb raw(p);
  const std::string created =
      raw.One("SELECT created_at FROM resources WHERE name='" + a.name + "'");
  EXPECT_TRUE(std::regex_match(created, kGormTime)) << created;
  EXPECT_EQ(raw.One("SELECT updated_at FROM resources WHERE name='" + a.name + "'"), created);
  EXPECT_EQ(raw.One("SELECT deleted_at FROM resources WHERE name='" + a.name + "'"), "NULL");
  const std::string id = raw.One("SELECT id FROM resources WHERE name='" + a.name + "'");

  // Update in place: same id and created_at, new updated_at, new contents; order unchanged.
  ResourceRow a2 = a;
  a2.spec = R"({"url":"/y"})";
  usleep(2000);
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) { return tx.UpsertResource(a2); }).ok());
  rows = s->LoadResources();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, (std::vector<ResourceRow>{a2, b}));
  EXPECT_EQ(raw.One("SELECT count(*) FROM resources"), "2");
  EXPECT_EQ(raw.One("SELECT id FROM resources WHERE name='" + a.name + "'"), id);
  EXPECT_EQ(raw.One("SELECT created_at FROM resources WHERE name='" + a.name + "'"), created);
  const std::string updated =
      raw.One("SELECT updated_at FROM resources WHERE name='" + a.name + "'");
  EXPECT_TRUE(std::regex_match(updated, kGormTime)) << updated;
  EXPECT_NE(updated, created);

  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 if (Status st = tx.DeleteResource(a.name); !st.ok()) return st;
                 return tx.DeleteResource("default/model/absent");
               }).ok());
  rows = s->LoadResources();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, (std::vector<ResourceRow>{b}));
  EXPECT_EQ(raw.One("SELECT count(*) FROM resources"), "1");  // hard delete
}

// What a burst of commits leaves in the page cache (up to cache_size, 256 KiB) goes back when the
// LC is idle: the pages are the heap's again, to be trimmed, and a later read is still right.
TEST(StoreTest, ReleaseMemoryEmptiesThePageCache) {
  TempDir dir;
  auto r = Store::Open((dir.path() / "db" / "lc.db").string());
  ASSERT_TRUE(r.ok()) << r.message();
  Store& s = **r;
  const std::string value(3000, 'v');  // about a page a row
  ASSERT_TRUE(s.Transact([&](Store::Tx& tx) -> Status {
                 for (int i = 0; i < 100; ++i) {
                   if (Status st = tx.PutState("job", "k" + std::to_string(i), value); !st.ok()) {
                     return st;
                   }
                 }
                 return Status::Ok();
               }).ok());
  const int64_t before = s.CachedBytes();
  EXPECT_GT(before, 128 * 1024) << "the burst should have filled the cache";
  s.ReleaseMemory();
  const int64_t after = s.CachedBytes();
  EXPECT_GE(after, 0);
  EXPECT_LT(after, 16 * 1024) << "before: " << before;
  auto all = s.LoadStates("job");
  ASSERT_TRUE(all.ok()) << all.message();
  EXPECT_EQ(all->size(), 100u);
  auto one = s.GetState("job", "k42");
  ASSERT_TRUE(one.ok()) << one.message();
  EXPECT_EQ(*one, std::optional<std::string>(value));
}

// A commit that frees pages writes no zeroed copies of them to the WAL (secure_delete FAST;
// Debian's SQLite defaults to ON, which writes every freed page).
TEST(StoreTest, FreedPagesAreNotWrittenAgain) {
  TempDir dir;
  const std::filesystem::path db = dir.path() / "lc.db";
  auto r = Store::Open(db.string());
  ASSERT_TRUE(r.ok()) << r.message();
  Store& s = **r;
  const std::string big(200 * 1024, 'v');  // ~50 overflow pages
  ASSERT_TRUE(s.Transact([&](Store::Tx& tx) { return tx.PutState("job", "big", big); }).ok());
  const std::filesystem::path wal = db.string() + "-wal";
  const auto before = std::filesystem::file_size(wal);
  ASSERT_TRUE(s.Transact([&](Store::Tx& tx) { return tx.DeleteState("job", "big"); }).ok());
  const auto after = std::filesystem::file_size(wal);
  ASSERT_GT(after, before) << "the delete was committed to the WAL";
  // Page 1, the freelist trunk and the table's leaf: 3 frames of 4 KiB (ON writes ~50 more).
  EXPECT_LE(after - before, 8u * (4096 + 24)) << "before " << before << ", after " << after;
  auto gone = s.GetState("job", "big");
  ASSERT_TRUE(gone.ok()) << gone.message();
  EXPECT_FALSE(gone->has_value());
}

TEST(StoreTest, StateRoundTrip) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 for (auto [k, v] : {std::pair{"b", "2"}, {"a", "1"}, {"c", "3"}}) {
                   if (Status st = tx.PutState("job/x", k, v); !st.ok()) return st;
                 }
                 if (Status st = tx.PutState("job/y", "a", "other"); !st.ok()) return st;
                 return tx.PutState("job/x", "bin", binary);
               }).ok());
  auto v = s->GetState("job/x", "a");
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_EQ(*v, std::optional<std::string>("1"));
  v = s->GetState("job/x", "bin");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::optional<std::string>(binary));
  v = s->GetState("job/x", "missing");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::nullopt);

  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 if (Status st = tx.PutState("job/x", "a", "1b"); !st.ok()) return st;
                 if (Status st = tx.DeleteState("job/x", "c"); !st.ok()) return st;
                 return tx.DeleteState("job/x", "never-set");
               }).ok());
  auto all = s->LoadStates("job/x");
  ASSERT_TRUE(all.ok()) << all.message();
  using KV = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(*all, (KV{{"a", "1b"}, {"b", "2"}, {"bin", binary}}));
  all = s->LoadStates("job/y");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (KV{{"a", "other"}}));
  all = s->LoadStates("nothing");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST(StoreTest, OutboxIdsOrderAndStats) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{0, 0}));
  std::vector<int64_t> ids;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 for (const char* f : {"one", "three", "fiver"}) {
                   auto id = tx.OutboxAppend(f);
                   if (!id.ok()) return id.status();
                   ids.push_back(*id);
                 }
                 return Status::Ok();
               }).ok());
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_LT(ids[0], ids[1]);
  EXPECT_LT(ids[1], ids[2]);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 3 + 5 + 5}));

  auto peek = s->OutboxPeek(2);
  ASSERT_TRUE(peek.ok()) << peek.message();
  EXPECT_EQ(*peek, (std::vector<OutboxEntry>{{ids[0], "one"}, {ids[1], "three"}}));
  EXPECT_TRUE(s->OutboxPeek(0)->empty());

  // Sent and deleted: the entries leave the stats at once, the table at the flush.
  s->OutboxAck(ids[0], 3);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{2, 5 + 5}));
  s->OutboxAck(ids[0], 3);  // already acknowledged: no-op
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{2, 5 + 5}));
  peek = s->OutboxPeek(10);
  ASSERT_TRUE(peek.ok());
  EXPECT_EQ(*peek, (std::vector<OutboxEntry>{{ids[1], "three"}, {ids[2], "fiver"}}));

  // Deleting the newest entry does not let its id be reused.
  s->OutboxAck(ids[1], 5);
  s->OutboxAck(ids[2], 5);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{0, 0}));
  int64_t next = 0;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 auto id = tx.OutboxAppend("after");
                 if (id.ok()) next = *id;
                 return id.status();
               }).ok());
  EXPECT_GT(next, ids[2]);
  s.reset();

  // Reopen: ids keep growing, stats are reloaded.
  s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 5}));
  s->OutboxAck(next, 5);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  int64_t after_reopen = 0;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 auto id = tx.OutboxAppend("x");
                 if (id.ok()) after_reopen = *id;
                 return id.status();
               }).ok());
  EXPECT_GT(after_reopen, next);
}

// A transaction's frames are inserted at its commit, in multi-row statements (32, 16, ..., 1
// rows): every count from 1 to 100 lands whole, in order, with consecutive ids, also after a
// reopen; a failed transaction stores none of its frames and gives its ids out again; and a row
// another writer put at the next id fails one commit, not every later one.
TEST(StoreTest, OutboxFramesGoInAtTheCommitInOrder) {
  TempDir t;
  const auto path = t.path() / "db.sqlite";
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  std::vector<OutboxEntry> want;
  for (int n : {1, 2, 3, 7, 31, 32, 33, 63, 100}) {
    ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                   for (int i = 0; i < n; ++i) {
                     std::string f = "n" + std::to_string(n) + "-" + std::to_string(i);
                     auto id = tx.OutboxAppend(f);
                     if (!id.ok()) return id.status();
                     if (!want.empty()) {
                       EXPECT_EQ(*id, want.back().id + 1);
                     }
                     want.push_back({*id, f});
                   }
                   return tx.PutState("s", "k", std::to_string(n));
                 }).ok());
  }
  auto peek = s->OutboxPeek(1000);
  ASSERT_TRUE(peek.ok()) << peek.message();
  EXPECT_EQ(*peek, want);

  // Rolled back with its state: nothing stored, and the next transaction gets the same first id.
  int64_t rolled_back = 0;
  EXPECT_FALSE(s->Transact([&](Store::Tx& tx) -> Status {
                  rolled_back = *tx.OutboxAppend("lost-1");
                  (void)tx.OutboxAppend("lost-2");
                  (void)tx.PutState("s", "k", "lost");
                  return Status::Error("no");
                }).ok());
  EXPECT_EQ(rolled_back, want.back().id + 1);
  EXPECT_EQ(*s->GetState("s", "k"), std::optional<std::string>("100"));
  s.reset();

  // Reopened: the same rows (from the table, not this process's memory), ids go on from the last.
  s = MustOpen(path);
  ASSERT_TRUE(s);
  peek = s->OutboxPeek(1000);
  ASSERT_TRUE(peek.ok()) << peek.message();
  EXPECT_EQ(*peek, want);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{static_cast<int64_t>(want.size()), [&] {
                                                 int64_t b = 0;
                                                 for (auto& e : want) b += e.frame.size();
                                                 return b;
                                               }()}));

  // Another writer takes the next id: the commit that collides fails whole, the next succeeds.
  const int64_t taken = want.back().id + 1;
  {
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    const std::string sql = "INSERT INTO lc_outbox (id, frame, created_at) VALUES (" +
                            std::to_string(taken) + ", 'planted', 'now')";
    EXPECT_EQ(sqlite3_exec(other, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(other);
  }
  Status failed = s->Transact([&](Store::Tx& tx) -> Status {
    EXPECT_EQ(*tx.OutboxAppend("collides"), taken);
    return tx.PutState("s", "k", "collided");
  });
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), ::testing::HasSubstr("append to outbox"));
  EXPECT_EQ(*s->GetState("s", "k"), std::optional<std::string>("100"));
  int64_t after = 0;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 after = *tx.OutboxAppend("after");
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(after, taken + 1);
}

// The informational counts (the outbox quotas): what StoreOptions::outbox_informational says, for
// committed and unacknowledged entries, reloaded at Open from the entries cut as documented.
TEST(StoreTest, OutboxCountsInformationalEntries) {
  TempDir t;
  std::vector<std::string> seen_at_open;
  bool opening = false;
  StoreOptions o;
  o.outbox_informational = [&](std::string_view frame) {
    if (opening) seen_at_open.emplace_back(frame);
    return frame.find("info") != std::string_view::npos;
  };
  auto s = MustOpen(t.path() / "db.sqlite", o);
  ASSERT_TRUE(s);
  std::vector<int64_t> ids;
  auto append = [&](const std::vector<std::string>& frames, bool fail = false) {
    return s->Transact([&](Store::Tx& tx) -> Status {
      for (const auto& f : frames) {
        auto id = tx.OutboxAppend(f);
        if (!id.ok()) return id.status();
        ids.push_back(*id);
      }
      return fail ? Status::Error("rolled back") : Status::Ok();
    });
  };
  ASSERT_TRUE(append({"info-1", "ready", "info-22"}).ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 6 + 5 + 7, 2, 6 + 7}));
  // A rolled-back transaction counts nothing.
  EXPECT_FALSE(append({"info-333"}, true).ok());
  ids.pop_back();
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 18, 2, 13}));
  s->OutboxAck(ids[0], 6);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{2, 12, 1, 7}));
  s->OutboxAck(ids[1], 5);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 7, 1, 7}));
  const std::string content = "{\"header\":{},\"content\":\"" + std::string(700, 'A') + "\"}";
  const int64_t long_size = static_cast<int64_t>(content.size()) + 4;
  ASSERT_TRUE(append({"count", content + "info"}).ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 7 + 5 + long_size, 2, 7 + long_size}));
  s.reset();

  // Reopened: the unacknowledged entries are classified again, cut after the content key and 684
  // more characters (so the long one's "info" tail is not seen: it is not informational now).
  opening = true;
  s = MustOpen(t.path() / "db.sqlite", o);
  opening = false;
  ASSERT_TRUE(s);
  ASSERT_EQ(seen_at_open.size(), 3u);
  EXPECT_EQ(seen_at_open[0], "info-22");
  EXPECT_EQ(seen_at_open[1], "count");
  EXPECT_EQ(seen_at_open[2], content.substr(0, content.find("\"content\":\"") + 11 + 684));
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 7 + 5 + long_size, 1, 7}));
  s->OutboxAck(ids[2], 7);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{2, 5 + long_size, 0, 0}));
  s->OutboxAck(ids[3], 5);
  s->OutboxAck(ids[4], long_size);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{0, 0, 0, 0}));
}

// A frame appended with its class known is counted as the caller says, without asking
// StoreOptions::outbox_informational (the job runner knows a forward's class from its report).
TEST(StoreTest, OutboxTakesAnInformationalClassTheCallerKnows) {
  TempDir t;
  std::vector<std::string> asked;
  StoreOptions o;
  o.outbox_informational = [&](std::string_view frame) {
    asked.emplace_back(frame);
    return frame.find("info") != std::string_view::npos;
  };
  auto s = MustOpen(t.path() / "db.sqlite", o);
  ASSERT_TRUE(s);
  std::vector<int64_t> ids;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 for (auto [frame, known] :
                      std::vector<std::pair<std::string, std::optional<bool>>>{
                          {"info-a", true}, {"b", false}, {"info-cc", std::nullopt}, {"dd", {}}}) {
                   auto id = tx.OutboxAppend(frame, known);
                   if (!id.ok()) return id.status();
                   ids.push_back(*id);
                 }
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(asked, (std::vector<std::string>{"info-cc", "dd"}));
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{4, 6 + 1 + 7 + 2, 2, 6 + 7}));
  s->OutboxAck(ids[0], 6);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 1 + 7 + 2, 1, 7}));
}

// Written frames are acknowledged in the sent mark and deleted in batches by a later transaction
// (or by OutboxFlushAcks), so a busy LC does not pay a DELETE, let alone a commit, per frame sent.
TEST(StoreTest, OutboxAckedEntriesAreDeletedInBatches) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  const std::vector<int64_t> ids = AppendAll(*s, {"aa", "bbb", "cccc"});
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(s->OutboxAckedThrough(), 0);
  s->OutboxAck(ids[0], 2);
  s->OutboxAck(ids[1], 3);
  EXPECT_EQ(s->OutboxAckedThrough(), ids[1]);
  {
    RawDb raw(t.path() / "db.sqlite");
    EXPECT_EQ(raw.One("SELECT count(*) FROM lc_outbox"), "3") << "acknowledged, not deleted";
  }
  // Acknowledged entries are neither peeked nor counted, though not deleted yet.
  EXPECT_EQ(*s->OutboxPeek(10), (std::vector<OutboxEntry>{{ids[2], "cccc"}}));
  EXPECT_EQ(*s->OutboxPeek(10, ids[2]), std::vector<OutboxEntry>{});
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 4}));
  s->OutboxAck(ids[0], 2);  // acknowledgements never move back
  EXPECT_EQ(s->OutboxAckedThrough(), ids[1]);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 4}));

  // Fewer than a batch pending: a transaction leaves them in the table.
  ASSERT_TRUE(PutAndAppend(*s, "k", "v").ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{2, 4 + 7}));
  {
    RawDb raw(t.path() / "db.sqlite");
    EXPECT_EQ(raw.One("SELECT count(*) FROM lc_outbox"), "4");
  }
  // A batch pending: the next transaction that commits deletes them all, a failed one nothing.
  std::vector<int64_t> more;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 for (int i = 0; i < 70; ++i) {
                   auto id = tx.OutboxAppend("f");
                   if (!id.ok()) return id.status();
                   more.push_back(*id);
                 }
                 return Status::Ok();
               }).ok());
  s->OutboxAck(ids[2], 4);
  auto frame_k = s->OutboxPeek(1);
  ASSERT_EQ(frame_k->size(), 1u);
  s->OutboxAck(frame_k->front().id, 7);
  for (int i = 0; i <= 60; ++i) s->OutboxAck(more[i], 1);
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{9, 9}));  // more[61..69]
  EXPECT_FALSE(s->Transact([](Store::Tx&) { return Status::Error("no"); }).ok());
  {
    RawDb raw(t.path() / "db.sqlite");
    EXPECT_EQ(raw.One("SELECT count(*) FROM lc_outbox"), "74");
  }
  ASSERT_TRUE(s->Transact([](Store::Tx&) { return Status::Ok(); }).ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{9, 9}));
  {
    RawDb raw(t.path() / "db.sqlite");
    EXPECT_EQ(raw.One("SELECT count(*) FROM lc_outbox"), "9");
  }
  // OutboxFlushAcks deletes even one.
  s->OutboxAck(more[61], 1);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{8, 8}));
  s.reset();
  RawDb raw(t.path() / "db.sqlite");
  EXPECT_EQ(raw.One("SELECT count(*) FROM lc_outbox WHERE id <= " + std::to_string(more[61])), "0");
  EXPECT_EQ(raw.One("SELECT count(*) FROM lc_outbox"), "8");
}

// Every entry acknowledged: the delete empties the table at once (no WHERE clause), the ids go on
// from the sequence, and a row above the acknowledged id (another writer's) is never part of it.
TEST(StoreTest, OutboxAllAcknowledgedEmptiesTheTableAndKeepsNewerRows) {
  TempDir t;
  const auto path = t.path() / "db.sqlite";
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  std::vector<int64_t> ids = AppendAll(*s, {"aa", "bbb", "cccc"});
  for (size_t i = 0; i < ids.size(); ++i) s->OutboxAck(ids[i], static_cast<int64_t>(i) + 2);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{0, 0}));
  EXPECT_EQ(RawDb(path).One("SELECT count(*) FROM lc_outbox"), "0");
  const std::vector<int64_t> next = AppendAll(*s, {"ddddd", "eeeeee"});
  ASSERT_EQ(next.size(), 2u);
  EXPECT_GT(next[0], ids.back());
  // A row above the acknowledged ones, written behind the store's back, stays.
  EXPECT_EQ(RawDb(path).Exec("INSERT INTO lc_outbox (id, frame, created_at) VALUES (" +
                             std::to_string(next[1] + 10) + ", 'foreign', 'now')"),
            SQLITE_OK);
  s->OutboxAck(next[0], 5);
  s->OutboxAck(next[1], 6);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(RawDb(path).One("SELECT group_concat(frame) FROM lc_outbox"), "foreign");
}

// A delete takes the acknowledged entries' count and bytes from the acknowledgements; should the
// table disagree (an entry removed behind the store's back), the stats are read from the table.
TEST(StoreTest, OutboxStatsFollowTheTableWhenADeleteRemovesOtherThanAcknowledged) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  const std::vector<int64_t> ids = AppendAll(*s, {"aa", "bbb", "cccc", "ddddd"});
  ASSERT_EQ(ids.size(), 4u);
  s->OutboxAck(ids[0], 2);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{3, 12}));
  {
    RawDb raw(t.path() / "db.sqlite");
    raw.Exec("DELETE FROM lc_outbox WHERE id = " + std::to_string(ids[1]));
    raw.Exec("UPDATE lc_outbox SET frame = 'dd' WHERE id = " + std::to_string(ids[3]));
  }
  s->OutboxAck(ids[1], 3);  // the delete removes nothing: the stats are read from the table
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{2, 6})) << "the table holds cccc and dd";
  s->OutboxAck(ids[2], 4);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 2}));
}

// The sent mark is a store to a shared mapping: a process that dies right after OutboxAck (no
// destructor, no commit) has still recorded it; the restarted store neither re-sends nor counts
// those entries.
TEST(StoreTest, OutboxAckSurvivesAProcessCrash) {
  TempDir t;
  const fs::path db = t.path() / "db.sqlite";
  for (int how : {0, 1}) {
    SCOPED_TRACE(how == 0 ? "_exit" : "SIGKILL");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto r = Store::Open(db.string());
      if (!r.ok()) _exit(10);
      Store& s = **r;
      if (!PutAndAppend(s, "a", "1").ok() || !PutAndAppend(s, "b", "2").ok()) _exit(11);
      auto peek = s.OutboxPeek(10);
      if (!peek.ok() || peek->size() != 2) _exit(12);
      s.OutboxAck(peek->front().id, 7);
      if (how == 1) kill(getpid(), SIGKILL);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(how == 0 ? WIFEXITED(status) && WEXITSTATUS(status) == 0 : WIFSIGNALED(status))
        << status;
    auto s = MustOpen(db);
    ASSERT_TRUE(s);
    auto left = *s->OutboxPeek(10);
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].frame, "frame-b");
    EXPECT_EQ(s->OutboxAckedThrough(), left[0].id - 1);
    EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 7}));  // the acked one deleted at open
    s->OutboxAck(left[0].id, 7);
    ASSERT_TRUE(s->OutboxFlushAcks().ok());
  }
  // Without an acknowledgement, everything is re-sent (at-least-once).
  auto s = MustOpen(db);
  ASSERT_TRUE(PutAndAppend(*s, "c", "3").ok());
  s.reset();
  s = MustOpen(db);
  EXPECT_EQ(s->OutboxPeek(10)->size(), 1u);
}

// A mark above the outbox's AUTOINCREMENT sequence (the WAL lost its newest commits in a power
// loss, the mark did not) is clamped, so the ids handed out next are not taken as sent.
TEST(StoreTest, SentMarkAboveTheOutboxSequenceIsClamped) {
  TempDir t;
  const fs::path db = t.path() / "db.sqlite";
  auto s = MustOpen(db);
  ASSERT_TRUE(PutAndAppend(*s, "a", "1").ok());
  ASSERT_TRUE(PutAndAppend(*s, "b", "2").ok());
  auto all = *s->OutboxPeek(10);
  s->OutboxAck(all[0].id, 7);
  s->OutboxAck(all[1].id, 7);
  s.reset();
  {
    RawDb raw(db);
    ASSERT_EQ(raw.Exec("DELETE FROM lc_outbox; UPDATE sqlite_sequence SET seq = " +
                       std::to_string(all[0].id) + " WHERE name = 'lc_outbox'"),
              SQLITE_OK);
  }
  s = MustOpen(db);
  EXPECT_EQ(s->OutboxAckedThrough(), all[0].id);
  ASSERT_TRUE(PutAndAppend(*s, "c", "3").ok());
  auto next = *s->OutboxPeek(10);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].id, all[1].id) << "the id reused after the lost commit is not skipped";
  EXPECT_EQ(next[0].frame, "frame-c");
}

// A damaged mark file (truncated, or garbage where the header is) reads as "nothing sent": every
// frame still in the table is sent (again), the store opens, and the file is repaired for the
// next acks.
TEST(StoreTest, DamagedSentMarkResendsEverythingAndIsRepaired) {
  TempDir t;
  const fs::path db = t.path() / "db.sqlite";
  const std::string mark = db.string() + "-sent";
  for (const std::string& damage : {std::string("SED"), std::string(4096, '\xff'),
                                    std::string("SEDNASM1") + std::string(100, '\x7f')}) {
    SCOPED_TRACE(damage.size());
    auto s = MustOpen(db);
    ASSERT_TRUE(PutAndAppend(*s, "a", "1").ok());
    ASSERT_TRUE(PutAndAppend(*s, "b", "2").ok());
    auto all = *s->OutboxPeek(10);
    ASSERT_EQ(all.size(), 2u);
    s->OutboxAck(all[0].id, 7);
    s.reset();
    {
      std::ofstream out(mark, std::ios::binary | std::ios::trunc);
      out << damage;
    }
    s = MustOpen(db);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->OutboxAckedThrough(), 0);
    EXPECT_EQ(*s->OutboxPeek(10), all) << "the acknowledged one is sent again (at-least-once)";
    s->OutboxAck(all[0].id, 7);
    s->OutboxAck(all[1].id, 7);
    s.reset();
    s = MustOpen(db);
    EXPECT_EQ(s->OutboxAckedThrough(), all[1].id) << "the repaired mark records acks again";
    EXPECT_TRUE(s->OutboxPeek(10)->empty());
    s.reset();
  }
}

// The mark names the database file it belongs to: another file at the same path (restored from a
// copy, re-created) does not inherit it.
TEST(StoreTest, SentMarkOfAnotherDatabaseFileIsIgnored) {
  TempDir t;
  const fs::path db = t.path() / "db.sqlite";
  const fs::path other = t.path() / "other.sqlite";
  {
    auto o = MustOpen(other);
    for (const char* k : {"x", "y", "z"}) ASSERT_TRUE(PutAndAppend(*o, k, "1").ok());
  }
  auto s = MustOpen(db);
  for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(PutAndAppend(*s, k, "1").ok());
  auto sent = s->OutboxPeek(10);
  ASSERT_TRUE(sent.ok());
  for (const auto& e : *sent) s->OutboxAck(e.id, 7);
  ASSERT_TRUE(s->OutboxFlushAcks().ok());
  s.reset();
  // The old file stays alive under another name, so the copy cannot get its inode.
  fs::rename(db, t.path() / "old.sqlite");
  fs::remove(t.path() / "db.sqlite-wal");
  fs::copy_file(other, db);
  s = MustOpen(db);
  EXPECT_EQ(s->OutboxAckedThrough(), 0);
  EXPECT_EQ(s->OutboxPeek(10)->size(), 3u) << "the copy's unsent frames are all still to send";
}

// OutboxPeek serves what this process just committed from memory (no SELECT), and OutboxTake
// moves it out of memory; whatever the mix of commits, failed transactions, takes,
// acknowledgements, batch deletes and tail evictions, both return exactly what SQL returns (a
// read-only store on the same file always reads SQL).
TEST(StoreTest, OutboxPeekFromMemoryMatchesSql) {
  TempDir t;
  const fs::path db = t.path() / "db.sqlite";
  auto s = MustOpen(db);
  ASSERT_TRUE(PutAndAppend(*s, "before", "1").ok());  // committed before the reopen: SQL only
  s.reset();
  s = MustOpen(db);
  StoreOptions ro_opts;
  ro_opts.read_only = true;
  auto ro = MustOpen(db, ro_opts);
  ASSERT_TRUE(s && ro);
  uint32_t rng = 12345;
  auto next = [&](uint32_t n) {
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % n;
  };
  int64_t last_id = 0, checks = 0;
  for (int step = 0; step < 3000; ++step) {
    const uint32_t op = next(10);
    if (op < 5) {  // a transaction with 0-3 frames (big ones now and then), sometimes failing
      const bool fail = next(8) == 0;
      const int n = static_cast<int>(next(4));
      Status st = s->Transact([&](Store::Tx& tx) -> Status {
        for (int i = 0; i < n; ++i) {
          const size_t len = next(50) == 0 ? 300000 : 1 + next(40);
          auto id = tx.OutboxAppend(std::string(len, static_cast<char>('a' + next(26))));
          if (!id.ok()) return id.status();
          if (!fail) last_id = std::max(last_id, *id);
        }
        return fail ? Status::Error("rolled back") : Status::Ok();
      });
      ASSERT_EQ(st.ok(), !fail) << st.message();
    } else if (op < 8) {  // acknowledge the next unsent entries, one at a time
      auto peek = next(2) == 0 ? s->OutboxPeek(1 + next(4)) : s->OutboxTake(1 + next(4));
      ASSERT_TRUE(peek.ok());
      for (const auto& e : *peek) s->OutboxAck(e.id, static_cast<int64_t>(e.frame.size()));
    } else if (op == 8) {
      ASSERT_TRUE(s->OutboxFlushAcks().ok());
    }
    const int64_t after = next(3) == 0 ? 0 : std::max<int64_t>(0, last_id - next(300));
    const size_t limit = 1 + next(70);
    const bool take = next(3) == 0;
    auto mem = take ? s->OutboxTake(limit, after) : s->OutboxPeek(limit, after);
    auto sql = ro->OutboxPeek(limit, std::max(after, s->OutboxAckedThrough()));
    ASSERT_TRUE(mem.ok() && sql.ok());
    ASSERT_EQ(*mem, *sql) << "step " << step << " after " << after << " limit " << limit
                          << (take ? " (take)" : " (peek)");
    checks += static_cast<int64_t>(mem->size());
  }
  EXPECT_GT(checks, 10000) << "the comparison saw too few entries to mean much";
}

// OutboxTake hands over the frames it serves from memory: asked again for the same range (the
// pump's resend after a reconnect), it and OutboxPeek read them from the database, unchanged.
TEST(StoreTest, OutboxTakeMovesFramesOutAndAResendReadsThemBack) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  std::vector<int64_t> ids;
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 for (const char* f : {"aaaa", "bbbb", "cccc"}) {
                   auto id = tx.OutboxAppend(f);
                   if (!id.ok()) return id.status();
                   ids.push_back(*id);
                 }
                 return Status::Ok();
               }).ok());
  const std::vector<OutboxEntry> all = {{ids[0], "aaaa"}, {ids[1], "bbbb"}, {ids[2], "cccc"}};
  auto first = s->OutboxTake(2);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, (std::vector<OutboxEntry>{all[0], all[1]}));
  EXPECT_EQ(*s->OutboxTake(10, ids[1]), std::vector<OutboxEntry>{all[2]});
  EXPECT_EQ(*s->OutboxPeek(10), all) << "taken, not acknowledged: still in the outbox";
  EXPECT_EQ(*s->OutboxTake(10), all) << "the resend";
  s->OutboxAck(ids[0], 4);
  EXPECT_EQ(*s->OutboxTake(10), (std::vector<OutboxEntry>{all[1], all[2]}));
  EXPECT_EQ(s->GetOutboxStats()->count, 2);
}

TEST(StoreTest, TransactRollsBackWhenFnFails) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  ASSERT_TRUE(PutAndAppend(*s, "kept", "v").ok());
  const OutboxStats before = *s->GetOutboxStats();

  Status st = s->Transact([&](Store::Tx& tx) -> Status {
    EXPECT_TRUE(tx.PutState("job", "kept", "overwritten").ok());
    EXPECT_TRUE(tx.PutState("job", "new", "v").ok());
    EXPECT_TRUE(tx.OutboxAppend("lost frame").ok());
    EXPECT_TRUE(tx.UpsertResource({"ns/dataset/d", "{}", "{}", "{}"}).ok());
    return Status::Error("step failed");
  });
  EXPECT_EQ(st.message(), "step failed");
  EXPECT_EQ(*s->GetState("job", "kept"), std::optional<std::string>("v"));
  EXPECT_EQ(*s->GetState("job", "new"), std::nullopt);
  EXPECT_EQ(s->OutboxPeek(10)->size(), 1u);
  EXPECT_EQ(*s->GetOutboxStats(), before);
  EXPECT_TRUE(s->LoadResources()->empty());

  // The connection is usable afterwards (no transaction left open).
  ASSERT_TRUE(PutAndAppend(*s, "next", "v").ok());
  EXPECT_EQ(s->GetOutboxStats()->count, 2);
}

TEST(StoreTest, TransactRollsBackWhenAStatementFailsEvenIfFnReturnsOk) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  {
    RawDb raw(p);
    ASSERT_EQ(raw.Exec("CREATE TRIGGER boom BEFORE INSERT ON lc_state WHEN NEW.key = 'boom' "
                       "BEGIN SELECT RAISE(ABORT, 'boom refused'); END"),
              SQLITE_OK);
  }
  Status st = s->Transact([&](Store::Tx& tx) -> Status {
    EXPECT_TRUE(tx.OutboxAppend("f").ok());
    Status bad = tx.PutState("job", "boom", "v");
    EXPECT_FALSE(bad.ok());
    EXPECT_FALSE(tx.PutState("job", "ok", "v").ok());  // the Tx is poisoned
    return Status::Ok();                               // and fn ignores it
  });
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("boom refused"));
  EXPECT_THAT(st.message(), HasSubstr(p.string()));
  EXPECT_TRUE(s->OutboxPeek(10)->empty());
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{0, 0}));
  EXPECT_TRUE(PutAndAppend(*s, "k", "v").ok());
}

TEST(StoreTest, TxIsOnlyValidInsideTransactAndTransactIsNotReentrant) {
  TempDir t;
  auto s = MustOpen(t.path() / "db.sqlite");
  ASSERT_TRUE(s);
  Store::Tx* leaked = nullptr;
  Status st = s->Transact([&](Store::Tx& tx) -> Status {
    leaked = &tx;
    Status nested = s->Transact([](Store::Tx&) { return Status::Ok(); });
    EXPECT_THAT(nested.message(), HasSubstr("inside a transaction"));
    return tx.PutState("a", "b", "c");
  });
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(*s->GetState("a", "b"), std::optional<std::string>("c"));
  ASSERT_NE(leaked, nullptr);
  Status late = leaked->PutState("a", "b", "late");
  EXPECT_THAT(late.message(), HasSubstr("transaction used outside Transact"));
  EXPECT_FALSE(leaked->OutboxAppend("late").ok());
  EXPECT_EQ(*s->GetState("a", "b"), std::optional<std::string>("c"));
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{0, 0}));
}

TEST(StoreTest, ReopenKeepsEverything) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  ResourceRow r{"ns/incrementallearningjob/j", R"({"a":1})", R"({"b":2})", R"({"c":3})"};
  {
    auto s = MustOpen(p);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                   if (Status st = tx.UpsertResource(r); !st.ok()) return st;
                   if (Status st = tx.PutState("job/j", "stage", "train"); !st.ok()) return st;
                   return tx.OutboxAppend("hello").status();
                 }).ok());
  }
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->LoadResources(), std::vector<ResourceRow>{r});
  EXPECT_EQ(*s->GetState("job/j", "stage"), std::optional<std::string>("train"));
  auto peek = s->OutboxPeek(10);
  ASSERT_EQ(peek->size(), 1u);
  EXPECT_EQ((*peek)[0].frame, "hello");
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 5}));
}

TEST(StoreTest, AdoptsGoLcDatabase) {
  TempDir t;
  fs::path p = t.path() / "database.db";
  const std::string go_time = "2021-08-20 08:00:00.123456789+00:00";
  {
    RawDb go(p);  // what the Go LC leaves behind: rollback journal, no user_version
    ASSERT_EQ(go.Exec(kGormResourcesDdl), SQLITE_OK);
    ASSERT_EQ(go.Exec(kGormIndexDdl), SQLITE_OK);
    ASSERT_EQ(go.Exec("INSERT INTO resources (created_at, updated_at, name, type_meta, "
                      "object_meta, spec) VALUES ('" +
                      go_time + "', '" + go_time +
                      "', 'default/dataset/ds', '{\"kind\":\"Dataset\"}', '{\"name\":\"ds\"}', "
                      "'{\"url\":\"/data/index.txt\"}')"),
              SQLITE_OK);
    // A GORM soft-deleted row (never written by the Go LC, but GORM's scope hides it).
    ASSERT_EQ(go.Exec("INSERT INTO resources (created_at, updated_at, deleted_at, name) VALUES "
                      "('" +
                      go_time + "', '" + go_time + "', '" + go_time + "', 'ns/model/gone')"),
              SQLITE_OK);
  }
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  ResourceRow ds{"default/dataset/ds", R"({"kind":"Dataset"})", R"({"name":"ds"})",
                 R"({"url":"/data/index.txt"})"};
  EXPECT_EQ(*s->LoadResources(), std::vector<ResourceRow>{ds});

  ds.spec = R"({"url":"/data/index2.txt"})";
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 if (Status st = tx.UpsertResource(ds); !st.ok()) return st;
                 return tx.PutState("job", "k", "v");
               }).ok());
  EXPECT_EQ(*s->LoadResources(), std::vector<ResourceRow>{ds});

  RawDb raw(p);
  EXPECT_EQ(raw.One("PRAGMA user_version"), "1");
  EXPECT_EQ(raw.One("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.One("SELECT sql FROM sqlite_master WHERE name='resources'"), kGormResourcesDdl);
  EXPECT_EQ(raw.One("SELECT id FROM resources WHERE name='default/dataset/ds'"), "1");
  EXPECT_EQ(raw.One("SELECT created_at FROM resources WHERE name='default/dataset/ds'"), go_time);
  EXPECT_NE(raw.One("SELECT updated_at FROM resources WHERE name='default/dataset/ds'"), go_time);
  EXPECT_EQ(raw.One("SELECT count(*) FROM sqlite_master WHERE type='index' AND "
                    "name='idx_resources_deleted_at'"),
            "1");
}

// The lc_state of sedna-lc before session 36 (WITHOUT ROWID), with records in it: Open rebuilds it
// as a rowid table once, every record and its updated_at kept, the schema version unchanged (an
// earlier sedna-lc uses the rebuilt table as its own: same columns, key and statements).
TEST(StoreTest, RebuildsTheStateTableOfEarlierVersionsOnce) {
  TempDir t;
  fs::path p = t.path() / "database.db";
  const std::string big(3000, 'r');  // spilled to an overflow page in the old layout
  {
    RawDb old(p);
    ASSERT_EQ(old.Exec(std::string(kGormResourcesDdl) + "; " + kGormIndexDdl +
                       "; CREATE TABLE lc_state (scope TEXT NOT NULL, key TEXT NOT NULL, "
                       "value TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (scope, key)) "
                       "WITHOUT ROWID; CREATE TABLE lc_outbox (id INTEGER PRIMARY KEY "
                       "AUTOINCREMENT, frame TEXT NOT NULL, created_at TEXT NOT NULL); "
                       "INSERT INTO lc_state VALUES ('il', 'a', '" +
                       big +
                       "', '2026-01-01T00:00:00Z'), ('ds', 'b', '{}', 'then'); "
                       "PRAGMA user_version = 1"),
              SQLITE_OK);
  }
  {
    auto s = MustOpen(p);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s->GetState("il", "a"), std::optional<std::string>(big));
    EXPECT_EQ(*s->GetState("ds", "b"), std::optional<std::string>("{}"));
    ASSERT_TRUE(s->Transact([](Store::Tx& tx) { return tx.PutState("il", "c", "3"); }).ok());
  }
  RawDb raw(p);
  const std::string sql = raw.One("SELECT sql FROM sqlite_master WHERE name='lc_state'");
  EXPECT_THAT(sql, ::testing::Not(HasSubstr("WITHOUT ROWID")));
  EXPECT_THAT(sql, HasSubstr("PRIMARY KEY (scope, key)"));
  EXPECT_EQ(raw.One("SELECT count(*) FROM sqlite_master WHERE name = 'lc_state_rebuilt'"), "0");
  EXPECT_EQ(raw.One("SELECT updated_at FROM lc_state WHERE key='a'"), "2026-01-01T00:00:00Z");
  EXPECT_EQ(raw.One("SELECT count(*) FROM lc_state"), "3");
  EXPECT_EQ(raw.One("PRAGMA user_version"), "1");
  // A second open finds nothing to rebuild: the table keeps its root page (a rebuild makes the
  // new table while the old one still holds its pages).
  const std::string root = raw.One("SELECT rootpage FROM sqlite_master WHERE name='lc_state'");
  ASSERT_TRUE(MustOpen(p));
  EXPECT_EQ(raw.One("SELECT rootpage FROM sqlite_master WHERE name='lc_state'"), root);
  EXPECT_EQ(raw.One("SELECT count(*) FROM lc_state"), "3");
}

// An older-looking lc_state that is not ours (a column missing): Open refuses, naming the
// database and the rebuild, and leaves the table and its rows as they were.
TEST(StoreTest, AForeignStateTableIsNotRebuilt) {
  TempDir t;
  fs::path p = t.path() / "database.db";
  {
    RawDb old(p);
    ASSERT_EQ(old.Exec(std::string(kGormResourcesDdl) + "; " + kGormIndexDdl +
                       "; CREATE TABLE lc_state (scope TEXT NOT NULL, key TEXT NOT NULL, "
                       "value TEXT NOT NULL, PRIMARY KEY (scope, key)) WITHOUT ROWID; "
                       "INSERT INTO lc_state VALUES ('il', 'a', 'kept'); PRAGMA user_version = 1"),
              SQLITE_OK);
  }
  auto r = Store::Open(p.string());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr("database " + p.string()));
  EXPECT_THAT(r.message(), HasSubstr("rebuild table lc_state"));
  RawDb raw(p);
  EXPECT_THAT(raw.One("SELECT sql FROM sqlite_master WHERE name='lc_state'"),
              HasSubstr("WITHOUT ROWID"));
  EXPECT_EQ(raw.One("SELECT value FROM lc_state WHERE key='a'"), "kept");
  EXPECT_EQ(raw.One("SELECT count(*) FROM sqlite_master WHERE name = 'lc_state_rebuilt'"), "0");
}

// Updating a job's record (1-4 KB) writes its leaf page only: no overflow page, no freelist.
TEST(StoreTest, UpdatingARecordWritesOnePage) {
  TempDir t;
  const fs::path p = t.path() / "lc.db";
  auto s = MustOpen(p);
  ASSERT_TRUE(s);
  auto put = [&](char c) {
    return s->Transact(
        [&](Store::Tx& tx) { return tx.PutState("il", "job", std::string(2500, c)); });
  };
  ASSERT_TRUE(put('a').ok());
  const auto before = fs::file_size(p.string() + "-wal");
  ASSERT_TRUE(put('b').ok());
  const auto after = fs::file_size(p.string() + "-wal");
  EXPECT_EQ(after - before, 4096u + 24u) << "frames written: " << (after - before) / 4120.0;
  EXPECT_EQ(*s->GetState("il", "job"), std::optional<std::string>(std::string(2500, 'b')));
}

TEST(StoreTest, RefusesForeignResourcesTable) {
  TempDir t;
  fs::path p = t.path() / "database.db";
  {
    RawDb other(p);
    ASSERT_EQ(other.Exec("CREATE TABLE resources (id INTEGER PRIMARY KEY, name TEXT)"), SQLITE_OK);
  }
  auto r = Store::Open(p.string());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr("database " + p.string() +
                                     ": existing table resources has "
                                     "no column created_at"));
  RawDb raw(p);
  EXPECT_EQ(raw.One("PRAGMA user_version"), "0");  // migration rolled back
  EXPECT_EQ(raw.One("SELECT count(*) FROM sqlite_master WHERE name='lc_state'"), "0");
}

TEST(StoreTest, ErrorParentDirectoryNotCreatable) {
  TempDir t;
  fs::path file = t.path() / "plain";
  std::ofstream(file) << "x";
  fs::path p = file / "sub" / "db.sqlite";
  auto r = Store::Open(p.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "database " + p.string() + ": cannot create directory " +
                             (file / "sub").string() + ": Not a directory");
}

// Store::Open's error message for `p`, obtained in a child running as an unprivileged user when
// this test runs as root (root ignores directory permissions).
std::string OpenErrorUnprivileged(const fs::path& p) {
  if (geteuid() != 0) {
    auto r = Store::Open(p.string());
    return r.ok() ? "<opened>" : r.message();
  }
  int fds[2];
  if (pipe(fds) != 0) return "<pipe failed>";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    auto r = Store::Open(p.string());
    std::string m = r.ok() ? "<opened>" : r.message();
    if (write(fds[1], m.data(), m.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "<child failed>";
  return out;
}

TEST(StoreTest, ErrorParentDirectoryPermissionDenied) {
  TempDir t;
  fs::permissions(t.path(), fs::perms::all, fs::perm_options::add);
  fs::path ro = t.path() / "ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::path p = ro / "x" / "db.sqlite";
  EXPECT_EQ(OpenErrorUnprivileged(p), "database " + p.string() + ": cannot create directory " +
                                          (ro / "x").string() + ": Permission denied");
}

TEST(StoreTest, ErrorNotASqliteDatabase) {
  TempDir t;
  fs::path p = t.path() / "garbage.db";
  {
    std::ofstream f(p, std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  auto r = Store::Open(p.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "database " + p.string() + " is not a SQLite database (file is not a database)");
}

TEST(StoreTest, ErrorLockedByAnotherProcessAtOpenAndTransact) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  StoreOptions quick;
  quick.busy_timeout = std::chrono::milliseconds(50);
  auto s = MustOpen(p, quick);
  ASSERT_TRUE(s);
  RawDb other(p);
  ASSERT_EQ(other.Exec("BEGIN IMMEDIATE"), SQLITE_OK);

  auto r = Store::Open(p.string(), quick);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "database " + p.string() + " is locked by another process");

  Status st = PutAndAppend(*s, "k", "v");
  EXPECT_EQ(st.message(), "database " + p.string() + " is locked by another process");
  // Reads still work under WAL while another process writes.
  EXPECT_TRUE(s->LoadStates("job").ok());

  ASSERT_EQ(other.Exec("COMMIT"), SQLITE_OK);
  EXPECT_TRUE(PutAndAppend(*s, "k", "v").ok());
  EXPECT_EQ(s->GetOutboxStats()->count, 1);
}

TEST(StoreTest, ErrorLockedRollbackJournalDatabase) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  RawDb other(p);
  ASSERT_EQ(other.Exec("CREATE TABLE x (a); BEGIN EXCLUSIVE; INSERT INTO x VALUES (1)"), SQLITE_OK);
  StoreOptions quick;
  quick.busy_timeout = std::chrono::milliseconds(50);
  auto r = Store::Open(p.string(), quick);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "database " + p.string() + " is locked by another process");
}

TEST(StoreTest, ErrorNewerSchemaVersion) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  ASSERT_TRUE(MustOpen(p));
  {
    RawDb raw(p);
    ASSERT_EQ(raw.Exec("PRAGMA user_version = 7"), SQLITE_OK);
  }
  for (bool ro : {false, true}) {
    StoreOptions o;
    o.read_only = ro;
    auto r = Store::Open(p.string(), o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(),
              "database " + p.string() + " has schema version 7, this sedna-lc knows up to 1");
  }
}

TEST(StoreTest, ReadOnly) {
  TempDir t;
  fs::path p = t.path() / "missing" / "db.sqlite";
  StoreOptions ro;
  ro.read_only = true;
  auto r = Store::Open(p.string(), ro);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "database " + p.string() + ": cannot open read-only: No such file or directory");
  EXPECT_FALSE(fs::exists(p.parent_path()));  // nothing created

  {
    auto w = MustOpen(p);
    ASSERT_TRUE(w);
    ASSERT_TRUE(PutAndAppend(*w, "k", "v").ok());
  }
  auto s = MustOpen(p, ro);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->GetState("job", "k"), std::optional<std::string>("v"));
  EXPECT_EQ(*s->GetOutboxStats(), (OutboxStats{1, 7}));
  EXPECT_EQ(PutAndAppend(*s, "k2", "v").message(),
            "database " + p.string() + " is opened read-only");
  const std::string mark_before = ReadBytes(p.string() + "-sent");
  s->OutboxAck(1, 7);
  EXPECT_EQ(s->OutboxFlushAcks().message(), "database " + p.string() + " is opened read-only");
  EXPECT_EQ(ReadBytes(p.string() + "-sent"), mark_before) << "a read-only store writes nothing";

  // A Go LC database (schema version 0) is not migrated by a read-only open.
  fs::path go = t.path() / "go.db";
  {
    RawDb raw(go);
    ASSERT_EQ(raw.Exec(kGormResourcesDdl), SQLITE_OK);
  }
  auto g = Store::Open(go.string(), ro);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.message(), HasSubstr("has schema version 0"));
}

TEST(StoreTest, SynchronousFullOpensAndWrites) {
  TempDir t;
  StoreOptions o;
  o.synchronous_full = true;
  auto s = MustOpen(t.path() / "db.sqlite", o);
  ASSERT_TRUE(s);
  EXPECT_TRUE(PutAndAppend(*s, "k", "v").ok());
}

// Forks a child that commits `committed` transactions and then dies inside the next one, after
// writing more than the page cache holds (so uncommitted pages reach the WAL file). `how`:
// 0 = _exit(), 1 = SIGKILL.
void CrashChild(const fs::path& p, int committed, int how) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = Store::Open(p.string());
    if (!r.ok()) _exit(10);
    Store& s = **r;
    for (int i = 0; i < committed; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "k%04d", i);
      if (!PutAndAppend(s, key, "committed").ok()) _exit(11);
    }
    (void)s.Transact([&](Store::Tx& tx) -> Status {
      const std::string big(64 * 1024, 'x');
      for (int i = 0; i < 64; ++i) {
        (void)tx.PutState("job", "uncommitted" + std::to_string(i), big);
        (void)tx.OutboxAppend(big);
      }
      (void)tx.UpsertResource({"ns/dataset/uncommitted", "{}", "{}", "{}"});
      if (how == 1) kill(getpid(), SIGKILL);
      _exit(3);
    });
    _exit(12);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  if (how == 1) {
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  } else {
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 3);
  }
}

TEST(StoreTest, CrashMidTransactionKeepsExactlyTheCommittedOnes) {
  for (int how : {0, 1}) {
    SCOPED_TRACE(how == 0 ? "_exit" : "SIGKILL");
    TempDir t;
    fs::path p = t.path() / "db.sqlite";
    constexpr int kCommitted = 50;
    CrashChild(p, kCommitted, how);
    EXPECT_TRUE(fs::exists(fs::path(p.string() + "-wal")));  // no clean close happened

    auto s = MustOpen(p);
    ASSERT_TRUE(s);
    auto states = s->LoadStates("job");
    ASSERT_TRUE(states.ok()) << states.message();
    ASSERT_EQ(states->size(), static_cast<size_t>(kCommitted));
    for (int i = 0; i < kCommitted; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "k%04d", i);
      EXPECT_EQ((*states)[i], (std::pair<std::string, std::string>{key, "committed"}));
    }
    auto peek = s->OutboxPeek(1000);
    ASSERT_TRUE(peek.ok());
    ASSERT_EQ(peek->size(), static_cast<size_t>(kCommitted));
    EXPECT_EQ(peek->front().frame, "frame-k0000");
    EXPECT_EQ(peek->back().frame, "frame-k0049");
    EXPECT_EQ(s->GetOutboxStats()->count, kCommitted);
    EXPECT_TRUE(s->LoadResources()->empty());
    // The store keeps working after recovery, and ids keep growing.
    int64_t id = 0;
    ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                   auto r = tx.OutboxAppend("after crash");
                   if (r.ok()) id = *r;
                   return r.status();
                 }).ok());
    EXPECT_GT(id, peek->back().id);
  }
}

// Every time the store writes is its options' clock's (the controller's Context::clock).
TEST(Store, WritesItsTimesFromTheOptionsClock) {
  TempDir t;
  fs::path p = t.path() / "db.sqlite";
  clock::FakeClock fake;  // 2026-01-01T00:00:00Z
  StoreOptions o;
  o.clock = &fake;
  auto s = MustOpen(p, o);
  ASSERT_TRUE(s);
  ResourceRow a{"default/dataset/a", R"({"kind":"Dataset"})", R"({"name":"a"})", R"({"url":"/x"})"};
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) -> Status {
                 if (Status st = tx.UpsertResource(a); !st.ok()) return st;
                 if (Status st = tx.PutState("il", "k", "v"); !st.ok()) return st;
                 return tx.OutboxAppend("frame").status();
               }).ok());
  fake.Advance(std::chrono::milliseconds(1500));
  ASSERT_TRUE(s->Transact([&](Store::Tx& tx) { return tx.UpsertResource(a); }).ok());
  RawDb raw(p);
  EXPECT_EQ(raw.One("SELECT created_at FROM resources"), "2026-01-01 00:00:00+00:00");
  EXPECT_EQ(raw.One("SELECT updated_at FROM resources"), "2026-01-01 00:00:01.5+00:00");
  EXPECT_EQ(raw.One("SELECT updated_at FROM lc_state WHERE scope='il'"),
            "2026-01-01 00:00:00+00:00");
  EXPECT_EQ(raw.One("SELECT created_at FROM lc_outbox"), "2026-01-01 00:00:00+00:00");

  // Within a second and across one, and a clock set back: each row its own time, to the ns.
  const int64_t start_ns = clock::FakeClock::kStartUnixMs * 1000000;
  for (auto [ns, want] : std::vector<std::pair<int64_t, std::string>>{
           {1750000000, "2026-01-01 00:00:01.75+00:00"},
           {1750000001, "2026-01-01 00:00:01.750000001+00:00"},
           {2000000000, "2026-01-01 00:00:02+00:00"},
           {0, "2026-01-01 00:00:00+00:00"},
           {int64_t{86400} * 1000000000 + 123456789, "2026-01-02 00:00:00.123456789+00:00"}}) {
    fake.SetNow(core::Clock::WallTime(std::chrono::duration_cast<core::Clock::WallTime::duration>(
        std::chrono::nanoseconds(start_ns + ns))));
    ASSERT_TRUE(s->Transact([&](Store::Tx& tx) { return tx.UpsertResource(a); }).ok());
    EXPECT_EQ(raw.One("SELECT updated_at FROM resources"), want);
  }
}

}  // namespace

}  // namespace sedna::store
