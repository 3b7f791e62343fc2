#include "adapters/dataset/shared_read.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <tuple>

#include <gtest/gtest.h>

namespace sedna::dataset {
namespace {

namespace stdfs = std::filesystem;

// What a cursor carries from one read to the next (the in-memory scan/check state excluded).
auto Persisted(const IndexCursor& c) {
  return std::make_tuple(c.dev, c.ino, c.offset, c.samples, c.skip, c.header_done, c.header,
                         c.skipping, c.prefix_digest, c.prefix_samples, c.prefix_digest_known);
}

class SharedReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "shared_read_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    index_ = dir_ + "/index.txt";
  }
  void TearDown() override {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }
  void Append(const std::string& data) {
    std::ofstream out(index_, std::ios::binary | std::ios::app);
    out << data;
    ASSERT_TRUE(out.good());
  }
  void Replace(const std::string& data) {
    {
      std::ofstream out(index_ + ".new", std::ios::binary | std::ios::trunc);
      out << data;
    }
    ASSERT_EQ(::rename((index_ + ".new").c_str(), index_.c_str()), 0);
  }
  static std::string Lines(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) s += "/data/img" + std::to_string(i) + ".jpg\n";
    return s;
  }

  // A member collecting its samples.
  struct Collector {
    PassMember m;
    std::vector<std::string> got;
    int fail_at = 0;  // > 0: on_sample fails at this sample
    explicit Collector(IndexCursor c) {
      m.cursor = std::move(c);
      m.on_sample = [this](std::string_view s) -> Status {
        if (fail_at > 0 && static_cast<int>(got.size()) + 1 == fail_at) {
          return Status::Error("disk full");
        }
        got.emplace_back(s);
        return Status::Ok();
      };
    }
  };

  // What a read of its own from `c` (to the end, taking a tail when `take`) gives.
  std::pair<std::vector<std::string>, IndexCursor> Alone(IndexCursor c, IndexFormat f,
                                                         ReadOptions o = {}) {
    std::vector<std::string> got;
    o.max_bytes = 0;
    auto r = ReadNewSamples(index_, f, c, o, [&](std::string_view s) {
      got.emplace_back(s);
      return Status::Ok();
    });
    EXPECT_TRUE(r.ok()) << r.message();
    return {got, c};
  }

  // Runs passes until none asks for more; returns the bytes they read (and their reads).
  int64_t Passes(std::vector<std::unique_ptr<Collector>>& cs, IndexFormat f, ReadOptions o = {},
                 int* reads = nullptr, int* passes = nullptr) {
    int64_t bytes = 0;
    for (int i = 0; i < 1000; ++i) {
      if (passes != nullptr) ++*passes;
      std::vector<PassMember*> ms;
      for (auto& c : cs) ms.push_back(&c->m);
      PassTotals t = ReadPass(index_, f, ms, o);
      bytes += t.bytes_read;
      if (reads != nullptr) *reads += t.reads;
      if (!t.more) return bytes;
    }
    ADD_FAILURE() << "passes never settled";
    return bytes;
  }

  // Every member got what a read of its own would have given it and stands where it would.
  void ExpectAsAlone(const std::vector<std::unique_ptr<Collector>>& cs,
                     const std::vector<IndexCursor>& starts, IndexFormat f) {
    for (size_t i = 0; i < cs.size(); ++i) {
      auto [want, cursor] = Alone(starts[i], f);
      EXPECT_EQ(cs[i]->got, want) << "member " << i;
      EXPECT_EQ(Persisted(cs[i]->m.cursor), Persisted(cursor)) << "member " << i;
      EXPECT_TRUE(cs[i]->m.status.ok()) << "member " << i << ": " << cs[i]->m.status.message();
    }
  }

  std::string dir_, index_;
};

// One to four level cursors (a Dataset's count and its jobs): the pass reads each appended byte
// once, and each gets every sample.
TEST_F(SharedReadTest, LevelCursorsReadEachByteOnce) {
  for (int members = 1; members <= 4; ++members) {
    SCOPED_TRACE(members);
    std::error_code ec;
    stdfs::remove(index_, ec);
    Append(Lines(1, 100));
    std::vector<std::unique_ptr<Collector>> cs;
    for (int i = 0; i < members; ++i) cs.push_back(std::make_unique<Collector>(IndexCursor{}));
    int64_t appended = static_cast<int64_t>(Lines(1, 100).size());
    EXPECT_EQ(Passes(cs, IndexFormat::kTxt), appended);
    std::vector<IndexCursor> starts;
    for (auto& c : cs) starts.push_back(c->m.cursor);
    for (auto& c : cs) c->got.clear();
    Append(Lines(101, 250));
    appended = static_cast<int64_t>(Lines(101, 250).size());
    EXPECT_EQ(Passes(cs, IndexFormat::kTxt), appended);
    ExpectAsAlone(cs, starts, IndexFormat::kTxt);
    EXPECT_EQ(cs[0]->got.size(), 150u);
  }
}

// A new job (a fresh cursor) on a Dataset whose count has read the index while it was still empty
// (at its start: offset 0, nothing consumed): the samples appended before the job's first pass are
// read once, for both. (The fresh cursor was read on its own here, every appended byte twice,
// whenever the job's first pass came after the append.)
TEST_F(SharedReadTest, AFreshCursorJoinsOneAtTheStartOfTheFile) {
  for (IndexFormat f : {IndexFormat::kTxt, IndexFormat::kCsv}) {
    SCOPED_TRACE(f == IndexFormat::kTxt ? "txt" : "csv");
    Replace("");
    auto [none, at_start] = Alone(IndexCursor{}, f);
    ASSERT_TRUE(none.empty());
    ASSERT_NE(at_start.ino, 0u);
    const std::string appended = (f == IndexFormat::kCsv ? "url,label\n" : "") + Lines(1, 300);
    Append(appended);
    for (bool count_first : {true, false}) {
      SCOPED_TRACE(count_first ? "count first" : "job first");
      std::vector<IndexCursor> starts = {at_start, IndexCursor{}};
      if (!count_first) std::swap(starts[0], starts[1]);
      std::vector<std::unique_ptr<Collector>> cs;
      for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
      int reads = 0;
      EXPECT_EQ(Passes(cs, f, {}, &reads), static_cast<int64_t>(appended.size()));
      ExpectAsAlone(cs, starts, f);
      EXPECT_TRUE(SameReadPosition(cs[0]->m.cursor, cs[1]->m.cursor));
      EXPECT_EQ(cs[0]->got.size(), 300u);
    }
  }
  // A fresh cursor beside one at the start of ANOTHER file (the index was replaced meanwhile)
  // reads on its own, as before: the other's read sees the replacement.
  auto [none, old_start] = Alone(IndexCursor{}, IndexFormat::kTxt);
  Replace(Lines(1, 50));
  std::vector<IndexCursor> starts = {old_start, IndexCursor{}};
  std::vector<std::unique_ptr<Collector>> cs;
  for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
  Passes(cs, IndexFormat::kTxt);
  ExpectAsAlone(cs, starts, IndexFormat::kTxt);
}

// Sliced (max_bytes) passes with a cursor behind the others: the one behind reads its range only
// and then joins; every byte is read once overall.
TEST_F(SharedReadTest, ACursorBehindCatchesUpAndJoins) {
  Append(Lines(1, 1000));
  auto [g1, behind] = Alone(IndexCursor{}, IndexFormat::kTxt);
  Append(Lines(1001, 3000));
  auto [g2, at] = Alone(behind, IndexFormat::kTxt);
  ASSERT_EQ(at.samples, 3000);
  Append(Lines(3001, 5000));
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  // Members 0 (the Dataset) and 2 at 3000 samples; 1 (a new job) and 3 (behind) further back.
  std::vector<IndexCursor> starts = {at, IndexCursor{}, at, behind};
  std::vector<std::unique_ptr<Collector>> cs;
  for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
  // In one pass (no slice bound): the file is read once.
  EXPECT_EQ(Passes(cs, IndexFormat::kTxt), size);
  ExpectAsAlone(cs, starts, IndexFormat::kTxt);
  for (auto& c : cs) EXPECT_TRUE(SameReadPosition(c->m.cursor, cs[0]->m.cursor));
  EXPECT_EQ(cs[1]->got.size(), 5000u);
  EXPECT_EQ(cs[3]->got.size(), 4000u);
  EXPECT_EQ(cs[0]->m.cursor.samples, 5000);
  EXPECT_EQ(cs[1]->m.cursor.samples, 5000);
  EXPECT_EQ(cs[3]->m.cursor.samples, 5000);
}

// The same in slices (ReadOptions::max_bytes, as kIngestSliceBytes bounds the LC's reads), the
// usual case: the Dataset's cursor at the end, a new job and one behind catching up. Nothing is
// read twice but what ReadNewSamples itself reads again after a slice ends (the rest of its last
// 64 KiB chunk).
TEST_F(SharedReadTest, CursorsBehindCatchUpInSlices) {
  Append(Lines(1, 20000));
  auto [g1, behind] = Alone(IndexCursor{}, IndexFormat::kTxt);
  Append(Lines(20001, 60000));
  auto [g2, at] = Alone(behind, IndexFormat::kTxt);
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  std::vector<IndexCursor> starts = {at, IndexCursor{}, at, behind};
  std::vector<std::unique_ptr<Collector>> cs;
  for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
  ReadOptions o;
  o.max_bytes = 128 << 10;
  int reads = 0;
  int64_t bytes = Passes(cs, IndexFormat::kTxt, o, &reads);
  // The new job reads the whole file; the one behind its own range, which the new job's reads
  // overlap only while both are behind (each slice of either moves it on, never back).
  EXPECT_GE(bytes, size);
  EXPECT_LE(bytes, size + (size - behind.offset) + reads * int64_t{64 << 10}) << reads;
  ExpectAsAlone(cs, starts, IndexFormat::kTxt);
  for (auto& c : cs) EXPECT_TRUE(SameReadPosition(c->m.cursor, cs[0]->m.cursor));
  EXPECT_EQ(cs[1]->got.size(), 60000u);
  // Then all level: an append is read once, in slices.
  std::vector<IndexCursor> level;
  for (auto& c : cs) level.push_back(c->m.cursor);
  for (auto& c : cs) c->got.clear();
  Append(Lines(60001, 90000));
  const int64_t appended = static_cast<int64_t>(stdfs::file_size(index_)) - size;
  reads = 0;
  int passes = 0;
  bytes = Passes(cs, IndexFormat::kTxt, o, &reads, &passes);
  EXPECT_GE(bytes, appended);
  EXPECT_LE(bytes, appended + reads * int64_t{64 << 10}) << reads;
  EXPECT_EQ(reads, passes);  // one read per pass for the four
  ExpectAsAlone(cs, level, IndexFormat::kTxt);
}

// A job ahead of the Dataset's cursor (e.g. its count record was not committed): the Dataset
// reads up to it and joins it.
TEST_F(SharedReadTest, ACursorAheadIsJoinedByTheOnesBehind) {
  Append(Lines(1, 100));
  auto [a, at100] = Alone(IndexCursor{}, IndexFormat::kTxt);
  Append(Lines(101, 200));
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  std::vector<IndexCursor> starts = {IndexCursor{}, at100};
  std::vector<std::unique_ptr<Collector>> cs;
  for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
  EXPECT_EQ(Passes(cs, IndexFormat::kTxt), size);
  ExpectAsAlone(cs, starts, IndexFormat::kTxt);
}

// A member whose samples cannot be kept (its spool is full) stops alone, where it was.
TEST_F(SharedReadTest, AFailingMemberStopsAloneAndStaysWhereItWas) {
  Append(Lines(1, 50));
  std::vector<std::unique_ptr<Collector>> cs;
  for (int i = 0; i < 3; ++i) cs.push_back(std::make_unique<Collector>(IndexCursor{}));
  cs[1]->fail_at = 10;
  Passes(cs, IndexFormat::kTxt);
  EXPECT_EQ(cs[1]->m.status.message(), "disk full");
  EXPECT_EQ(Persisted(cs[1]->m.cursor), Persisted(IndexCursor{}));
  EXPECT_EQ(cs[0]->got.size(), 50u);
  EXPECT_EQ(cs[2]->got.size(), 50u);
  EXPECT_TRUE(cs[0]->m.status.ok());
  // Retried: it reads its own range, the others nothing new, and it joins them.
  cs[1]->fail_at = 0;
  cs[1]->got.clear();
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  EXPECT_EQ(Passes(cs, IndexFormat::kTxt), size);
  EXPECT_EQ(cs[1]->got.size(), 50u);
  EXPECT_TRUE(SameReadPosition(cs[1]->m.cursor, cs[0]->m.cursor));
}

// Every member of a group failing ends that read; a read error stops only that group.
TEST_F(SharedReadTest, AllMembersFailingEndsTheirRead) {
  Append(Lines(1, 50));
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::make_unique<Collector>(IndexCursor{}));
  cs[0]->fail_at = 1;
  std::vector<PassMember*> ms = {&cs[0]->m};
  PassTotals t = ReadPass(index_, IndexFormat::kTxt, ms, {});
  EXPECT_EQ(t.reads, 1);
  EXPECT_EQ(cs[0]->m.status.message(), "disk full");
  EXPECT_TRUE(cs[0]->got.empty());
}

// The Dataset took an unterminated last line (a poll saw it unchanged); a member behind it takes
// the same line at the stop and is level.
TEST_F(SharedReadTest, AnUnterminatedLineTakenAtTheStop) {
  Append(Lines(1, 5) + "/data/tail.jpg");
  ReadOptions take;
  take.take_unterminated = true;
  auto [got1, ds1] = Alone(IndexCursor{}, IndexFormat::kTxt, take);  // records the tail size
  auto [got2, ds2] = Alone(ds1, IndexFormat::kTxt, take);            // takes it
  ASSERT_EQ(got2, std::vector<std::string>{"/data/tail.jpg"});
  Append("\n" + Lines(6, 7));
  std::vector<IndexCursor> starts = {ds2, IndexCursor{}};
  std::vector<std::unique_ptr<Collector>> cs;
  for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  EXPECT_EQ(Passes(cs, IndexFormat::kTxt), size);
  EXPECT_EQ(cs[0]->got, (std::vector<std::string>{"/data/img6.jpg", "/data/img7.jpg"}));
  ASSERT_EQ(cs[1]->got.size(), 8u);
  EXPECT_EQ(cs[1]->got[5], "/data/tail.jpg");
  EXPECT_TRUE(SameReadPosition(cs[1]->m.cursor, cs[0]->m.cursor));
}

// The Dataset stands inside an over-long line it is skipping: a member behind stops there too,
// skipping it, and they read on together.
TEST_F(SharedReadTest, InsideAnOverLongLineAtTheStop) {
  ReadOptions o;
  o.max_line_bytes = 100;
  Append(Lines(1, 3) + std::string(5000, 'x'));
  auto [g, ds] = Alone(IndexCursor{}, IndexFormat::kTxt, o);
  ASSERT_TRUE(ds.skipping);
  Append(std::string(3000, 'y') + "\n" + Lines(4, 6));
  std::vector<IndexCursor> starts = {ds, IndexCursor{}};
  std::vector<std::unique_ptr<Collector>> cs;
  for (const auto& s : starts) cs.push_back(std::make_unique<Collector>(s));
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  EXPECT_EQ(Passes(cs, IndexFormat::kTxt, o), size);
  EXPECT_EQ(cs[0]->got,
            (std::vector<std::string>{"/data/img4.jpg", "/data/img5.jpg", "/data/img6.jpg"}));
  EXPECT_EQ(cs[1]->got.size(), 6u);
  EXPECT_TRUE(SameReadPosition(cs[1]->m.cursor, cs[0]->m.cursor));
  EXPECT_EQ(cs[1]->m.result.skipped_lines, 1);
}

// csv: the header is read once per file for every member; a member behind keeps its old header
// until the new file's is read.
TEST_F(SharedReadTest, CsvHeaderAndAReplacedFile) {
  Append("a,b\n1,2\n3,4\n");
  std::vector<std::unique_ptr<Collector>> cs;
  for (int i = 0; i < 3; ++i) cs.push_back(std::make_unique<Collector>(IndexCursor{}));
  Passes(cs, IndexFormat::kCsv);
  for (auto& c : cs) EXPECT_EQ(c->m.cursor.header, "a,b");
  std::vector<IndexCursor> starts;
  for (auto& c : cs) starts.push_back(c->m.cursor);
  for (auto& c : cs) c->got.clear();
  Replace("c,d\n5,6\n");  // another file, not starting with what was consumed
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  const int64_t bytes = Passes(cs, IndexFormat::kCsv);
  EXPECT_LE(bytes, size + static_cast<int64_t>(std::string("a,b\n1,2\n3,4\n").size()));
  ExpectAsAlone(cs, starts, IndexFormat::kCsv);
  for (auto& c : cs) {
    EXPECT_EQ(c->m.cursor.header, "c,d");
    EXPECT_EQ(c->got, std::vector<std::string>{"5,6"});
    EXPECT_TRUE(c->m.result.rewritten);
  }
}

// Reading with a stop: the cursor lands level with the one stopped at.
TEST_F(SharedReadTest, StopLeavesTheCursorLevel) {
  Append(Lines(1, 10));
  auto [g10, at10] = Alone(IndexCursor{}, IndexFormat::kTxt);
  Append(Lines(11, 20));
  IndexCursor c;
  ReadOptions o;
  o.stop = StopAt(at10);
  std::vector<std::string> got;
  auto r = ReadNewSamples(index_, IndexFormat::kTxt, c, o, [&](std::string_view s) {
    got.emplace_back(s);
    return Status::Ok();
  });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(got.size(), 10u);
  EXPECT_EQ(r->bytes_read, at10.offset);
  EXPECT_EQ(Persisted(c), Persisted(at10));
  // A stop on another file is ignored.
  IndexCursor d;
  o.stop.ino += 1;
  got.clear();
  r = ReadNewSamples(index_, IndexFormat::kTxt, d, o, [&](std::string_view s) {
    got.emplace_back(s);
    return Status::Ok();
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(got.size(), 20u);
}

}  // namespace
}  // namespace sedna::dataset
