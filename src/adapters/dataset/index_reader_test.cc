#include "adapters/dataset/index_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sedna::dataset {
namespace {

namespace stdfs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class IndexReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "index_reader_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    index_ = dir_ + "/index.txt";
  }
  void TearDown() override {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  static void WriteFile(const std::string& path, const std::string& data, bool append) {
    std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
    out << data;
    ASSERT_TRUE(out.good()) << path;
  }
  void Append(const std::string& data) { WriteFile(index_, data, true); }
  // Rewrite in place: same inode, truncated then written.
  void Overwrite(const std::string& data) { WriteFile(index_, data, false); }
  // Replacement: a new file renamed over the index (new inode).
  void Replace(const std::string& data) {
    const std::string tmp = index_ + ".new";
    WriteFile(tmp, data, false);
    ASSERT_EQ(::rename(tmp.c_str(), index_.c_str()), 0);
  }

  // Reads with the given options and returns the delivered samples.
  std::vector<std::string> Read(IndexFormat format, IndexCursor& cursor, bool take = false,
                                int64_t max_bytes = 0, ReadResult* result = nullptr) {
    std::vector<std::string> got;
    auto r = ReadNewSamples(index_, format, cursor, take, max_bytes, [&](std::string_view s) {
      got.emplace_back(s);
      return Status::Ok();
    });
    EXPECT_TRUE(r.ok()) << r.message();
    if (r.ok() && result != nullptr) *result = *r;
    if (r.ok()) {
      EXPECT_EQ(r->new_samples, static_cast<int64_t>(got.size()));
    }
    return got;
  }

  std::string dir_;
  std::string index_;
};

enum class Op { kAppend, kOverwrite, kReplace, kRemove, kRead };

struct Step {
  Op op;
  std::string data;  // for writes
  std::vector<std::string> want = {};
  bool take = false;
  bool rewritten = false;
  bool missing = false;
};

Step A(std::string data) { return {Op::kAppend, std::move(data)}; }
Step W(std::string data) { return {Op::kOverwrite, std::move(data)}; }
Step Rn(std::string data) { return {Op::kReplace, std::move(data)}; }
Step Rm() { return {Op::kRemove, ""}; }
Step Rd(std::vector<std::string> want, bool take = false) {
  return {Op::kRead, "", std::move(want), take};
}
Step RdRewritten(std::vector<std::string> want) {
  return {Op::kRead, "", std::move(want), false, true};
}
Step RdMissing() { return {Op::kRead, "", {}, false, false, true}; }

struct Scenario {
  std::string name;
  IndexFormat format;
  std::vector<Step> steps;
  std::string want_header = "";
};

TEST_F(IndexReaderTest, Scenarios) {
  const IndexFormat kTxt = IndexFormat::kTxt, kCsv = IndexFormat::kCsv;
  const std::vector<Scenario> scenarios = {
      {"txt appends",
       kTxt,
       {A("train_images/1.jpg 1,2,3,4,1\nb 2\n"), Rd({"train_images/1.jpg 1,2,3,4,1", "b 2"}),
        A("c 3\n"), Rd({"c 3"}), Rd({}), A("d\ne\n"), Rd({"d", "e"})}},
      {"crlf stripped", kTxt, {A("a\r\nb\r\n\r\nc\r\n"), Rd({"a", "b", "c"})}},
      {"only one trailing cr stripped", kTxt, {A("a\r\r\n"), Rd({"a\r"})}},
      {"empty lines are not samples",
       kTxt,
       {A("\n\na\n\n\nb\n\n"), Rd({"a", "b"}), A("\n"), Rd({}), A("c\n"), Rd({"c"})}},
      {"whitespace-only line is a sample", kTxt, {A(" \n"), Rd({" "})}},
      {"half-written line waits for its newline",
       kTxt,
       {A("a\nhal"), Rd({"a"}), Rd({}), A("f li"), Rd({}), A("ne\nnext"), Rd({"half line"}),
        A("\n"), Rd({"next"})}},
      {"unterminated tail taken on the second take call with unchanged size",
       kTxt,
       {A("a\nb"), Rd({"a"}, true), Rd({}), Rd({"b"}, true), Rd({}, true), A("\nc\n"), Rd({"c"})}},
      {"unterminated tail waits while it keeps changing",
       kTxt,
       {A("a\nb"), Rd({"a"}, true), A("c"), Rd({}, true), Rd({}), Rd({"bc"}, true)}},
      {"calls without take never take the tail", kTxt, {A("a"), Rd({}), Rd({}), Rd({})}},
      {"unterminated tail that is only a cr", kTxt, {A("a\n\r"), Rd({"a"}, true), Rd({}, true)}},
      {"replacement by rename with a longer file",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("a\nb\nc\nd\n"), RdRewritten({"c", "d"}), A("e\n"),
        Rd({"e"})}},
      {"replacement with different lines counts only beyond the consumed count",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("x\n\ny\nz\n"), RdRewritten({"z"})}},
      {"replacement shorter, then it grows",
       kTxt,
       {A("a\nb\nc\n"), Rd({"a", "b", "c"}), Rn("a\n"), RdRewritten({}), A("b\nc\nd\n"),
        Rd({"d"})}},
      {"rewrite in place shorter then longer",
       kTxt,
       {A("a\nb\nc\n"), Rd({"a", "b", "c"}), W("a\n"), RdRewritten({}), W("a\nb\nc\nd\ne\n"),
        Rd({"d", "e"})}},
      {"rewrite detected while a tail was pending",
       kTxt,
       {A("a\nb"), Rd({"a"}, true), W("x"), RdRewritten({}), Rd({}, true), Rd({}, true), A("\ny\n"),
        Rd({"y"})}},
      {"csv header is never a sample",
       kCsv,
       {A("h1,h2\n1,2\n3,4\n"), Rd({"1,2", "3,4"}), A("5,6\n"), Rd({"5,6"})},
       "h1,h2"},
      {"csv header split across writes",
       kCsv,
       {A("h1,"), Rd({}), A("h2\r\n"), Rd({}), A("1,2\n"), Rd({"1,2"})},
       "h1,h2"},
      {"csv leading empty lines before the header", kCsv, {A("\nh\n1\n"), Rd({"1"})}, "h"},
      {"csv header only", kCsv, {A("h\n"), Rd({})}, "h"},
      {"csv unterminated header",
       kCsv,
       {A("h"), Rd({}, true), Rd({}, true), A("\n1\n"), Rd({"1"})},
       "h"},
      {"csv header after replacement",
       kCsv,
       {A("h1,h2\n1,2\n"), Rd({"1,2"}), Rn("h1,h2,h3\n1,2,x\n3,4,y\n"), RdRewritten({"3,4,y"})},
       "h1,h2,h3"},
      {"csv header after rewrite in place",
       kCsv,
       {A("h1\n1\n2\n"), Rd({"1", "2"}), W("g1\n1\n"), RdRewritten({}), A("2\n3\n"), Rd({"3"})},
       "g1"},
      {"missing file, then created, deleted and recreated",
       kTxt,
       {RdMissing(), RdMissing(), A("a\nb\n"), Rd({"a", "b"}), Rm(), RdMissing(), Rn("c\n"),
        RdRewritten({}), A("d\ne\n"), Rd({"e"})}},
  };
  for (const Scenario& sc : scenarios) {
    SCOPED_TRACE(sc.name);
    ::unlink(index_.c_str());
    IndexCursor cursor;
    int64_t delivered = 0;
    for (size_t i = 0; i < sc.steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      const Step& st = sc.steps[i];
      switch (st.op) {
        case Op::kAppend:
          Append(st.data);
          break;
        case Op::kOverwrite:
          Overwrite(st.data);
          break;
        case Op::kReplace:
          Replace(st.data);
          break;
        case Op::kRemove:
          ASSERT_EQ(::unlink(index_.c_str()), 0);
          break;
        case Op::kRead: {
          const IndexCursor before = cursor;
          ReadResult r;
          EXPECT_EQ(Read(sc.format, cursor, st.take, 0, &r), st.want);
          EXPECT_EQ(r.rewritten, st.rewritten);
          EXPECT_EQ(r.missing, st.missing);
          if (st.missing) {
            EXPECT_EQ(cursor.offset, before.offset);
            EXPECT_EQ(cursor.ino, before.ino);
          }
          delivered += static_cast<int64_t>(st.want.size());
          EXPECT_EQ(cursor.samples, delivered);
          break;
        }
      }
    }
    if (sc.format == IndexFormat::kCsv) {
      EXPECT_EQ(cursor.header, sc.want_header);
    }
  }
}

TEST_F(IndexReaderTest, B27_LongLineNotTruncated) {
  // bufio.Scanner in the Go LC silently stopped at a line over 64 KiB.
  std::string long_line(1024 * 1024, 'x');
  for (size_t i = 0; i < long_line.size(); i += 1000)
    long_line[i] = static_cast<char>('a' + i % 26);
  Append("first\n" + long_line + "\nlast\n");
  IndexCursor cursor;
  std::vector<std::string> got = Read(IndexFormat::kTxt, cursor);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "first");
  EXPECT_EQ(got[1].size(), long_line.size());
  EXPECT_TRUE(got[1] == long_line);
  EXPECT_EQ(got[2], "last");

  // The same line arriving in pieces is delivered once, whole, when its newline lands.
  const std::string half = long_line.substr(0, long_line.size() / 2);
  Append(half);
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor), IsEmpty());
  Append(long_line.substr(half.size()) + "\r\n");
  got = Read(IndexFormat::kTxt, cursor);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == long_line);
  EXPECT_EQ(cursor.offset, static_cast<int64_t>(stdfs::file_size(index_)));
}

TEST_F(IndexReaderTest, AppendsReadOnlyNewBytes) {
  std::string content;
  for (int i = 0; i < 5000; ++i)
    content += "train_images/" + std::to_string(i) + ".jpg 1,2,3,4,1\n";
  Append(content);
  IndexCursor cursor;
  ReadResult r;
  EXPECT_EQ(Read(IndexFormat::kTxt, cursor, false, 0, &r).size(), 5000u);
  EXPECT_EQ(r.bytes_read, static_cast<int64_t>(content.size()));
  EXPECT_EQ(cursor.offset, static_cast<int64_t>(content.size()));

  Read(IndexFormat::kTxt, cursor, false, 0, &r);
  EXPECT_EQ(r.bytes_read, 0);
  EXPECT_EQ(r.new_samples, 0);

  Append("new 9\n");
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor, false, 0, &r), ElementsAre("new 9"));
  EXPECT_EQ(r.bytes_read, 6);
  EXPECT_EQ(cursor.samples, 5001);
}

TEST_F(IndexReaderTest, OnSampleErrorLeavesCursorUnchanged) {
  Append("a\nb\n");
  IndexCursor cursor;
  ASSERT_EQ(Read(IndexFormat::kTxt, cursor).size(), 2u);
  Replace("a\nb\nc\nd\ne\n");  // the failing read would also have detected a rewrite
  const IndexCursor before = cursor;
  int calls = 0;
  auto r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, true, 0, [&](std::string_view s) {
    return ++calls == 2 ? Status::Error("spool full") : Status::Ok();
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "spool full");
  EXPECT_EQ(cursor.dev, before.dev);
  EXPECT_EQ(cursor.ino, before.ino);
  EXPECT_EQ(cursor.offset, before.offset);
  EXPECT_EQ(cursor.samples, before.samples);
  EXPECT_EQ(cursor.skip, before.skip);
  EXPECT_EQ(cursor.header_done, before.header_done);
  EXPECT_EQ(cursor.tail_size, before.tail_size);

  ReadResult res;
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor, false, 0, &res), ElementsAre("c", "d", "e"));
  EXPECT_TRUE(res.rewritten);
  EXPECT_EQ(cursor.samples, 5);
}

TEST_F(IndexReaderTest, MaxBytesSlicingGivesTheSameSamples) {
  std::string content = "h,1\n";
  for (int i = 0; i < 3000; ++i) {
    content += "train_images/" + std::to_string(i) + ".jpg " + std::to_string(i * 7) + ",1";
    content += (i % 7 == 0) ? "\r\n" : "\n";
    if (i % 11 == 0) content += "\n";
    if (i == 1500) content += std::string(200 * 1024, 'L') + "\n";
  }
  content += "tail";
  Append(content);
  const int64_t terminated = static_cast<int64_t>(content.size() - 4);

  for (IndexFormat format : {IndexFormat::kTxt, IndexFormat::kCsv}) {
    IndexCursor whole_cursor;
    const std::vector<std::string> whole = Read(format, whole_cursor);
    ASSERT_EQ(whole_cursor.offset, terminated);
    for (int64_t max_bytes : {1, 3, 50, 4096, 65536, 1 << 20}) {
      SCOPED_TRACE("max_bytes " + std::to_string(max_bytes));
      IndexCursor cursor;
      std::vector<std::string> sliced;
      for (int calls = 0; calls < 100000; ++calls) {
        const int64_t before = cursor.offset;
        ReadResult r;
        std::vector<std::string> got = Read(format, cursor, false, max_bytes, &r);
        sliced.insert(sliced.end(), got.begin(), got.end());
        if (cursor.offset == before) break;
        // Each call stops at the first line end at or past the budget.
        EXPECT_LE(cursor.offset - before, max_bytes + 200 * 1024 + 1);
      }
      EXPECT_EQ(sliced, whole);
      EXPECT_EQ(cursor.offset, terminated);
      EXPECT_EQ(cursor.header, whole_cursor.header);
      EXPECT_THAT(Read(format, cursor, true, max_bytes), IsEmpty());
      EXPECT_THAT(Read(format, cursor, true, max_bytes), ElementsAre("tail"));
    }
  }
}

TEST_F(IndexReaderTest, ErrorsNameThePath) {
  IndexCursor cursor;
  auto r = ReadNewSamples(dir_, IndexFormat::kTxt, cursor, false, 0,
                          [](std::string_view) { return Status::Ok(); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "reading " + dir_ + ": is a directory");
}

TEST(ParseIndexFormatTest, CaseInsensitiveTxtAndCsv) {
  struct Case {
    std::string in;
    bool ok;
    IndexFormat want;
  };
  const std::vector<Case> cases = {
      {"txt", true, IndexFormat::kTxt},
      {"TXT", true, IndexFormat::kTxt},
      {"Csv", true, IndexFormat::kCsv},
      {"csv", true, IndexFormat::kCsv},
      {"json", false, {}},
      {"", false, {}},
      {" txt", false, {}},
  };
  for (const Case& c : cases) {
    auto r = ParseIndexFormat(c.in);
    ASSERT_EQ(r.ok(), c.ok) << c.in;
    if (c.ok) {
      EXPECT_EQ(*r, c.want) << c.in;
    }
  }
  EXPECT_EQ(ParseIndexFormat("json").message(),
            "format: unsupported \"json\" (expected txt or csv)");
}

}  // namespace
}  // namespace sedna::dataset
