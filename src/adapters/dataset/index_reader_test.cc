#include "adapters/dataset/index_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>

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
  Rewrite rewrite = Rewrite::kNone;
  bool missing = false;
};

Step A(std::string data) { return {Op::kAppend, std::move(data)}; }
Step W(std::string data) { return {Op::kOverwrite, std::move(data)}; }
Step Rn(std::string data) { return {Op::kReplace, std::move(data)}; }
Step Rm() { return {Op::kRemove, ""}; }
Step Rd(std::vector<std::string> want, bool take = false) {
  return {Op::kRead, "", std::move(want), take};
}
// A read that finds the file replaced or rewritten, starting with what was consumed.
Step RdKept(std::vector<std::string> want) {
  return {Op::kRead, "", std::move(want), false, Rewrite::kPrefixKept};
}
// A read that finds the file replaced or rewritten by one that does not start with it.
Step RdNew(std::vector<std::string> want, bool take = false) {
  return {Op::kRead, "", std::move(want), take, Rewrite::kNewFile};
}
Step RdMissing() { return {Op::kRead, "", {}, false, Rewrite::kNone, true}; }

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
      // Rotation ([D:I15.9]): a replacement that starts with the consumed bytes adds only
      // what follows them; any other is a new file, all of whose samples are new.
      {"replacement by rename with a longer file",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("a\nb\nc\nd\n"), RdKept({"c", "d"}), A("e\n"), Rd({"e"})}},
      {"replacement by a different longer file: all its lines are new",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("x\n\ny\nz\n"), RdNew({"x", "y", "z"})}},
      {"replacement by a different file of the same size: all its lines are new",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("c\nd\n"), RdNew({"c", "d"})}},
      {"replacement by a different shorter file: all its lines are new",
       kTxt,
       {A("a\nb\nc\n"), Rd({"a", "b", "c"}), Rn("x\n"), RdNew({"x"}), A("y\n"), Rd({"y"})}},
      {"replacement by a shorter file is a new file even when it is a prefix",
       kTxt,
       {A("a\nb\nc\n"), Rd({"a", "b", "c"}), Rn("a\n"), RdNew({"a"}), A("b\nc\nd\n"),
        Rd({"b", "c", "d"})}},
      {"same prefix, then a different line: only the lines after the prefix are new",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("a\nb\nzz\n"), RdKept({"zz"})}},
      {"one changed byte inside the consumed prefix makes it a new file",
       kTxt,
       {A("a1\nb2\n"), Rd({"a1", "b2"}), Rn("a1\nb3\nc4\n"), RdNew({"a1", "b3", "c4"})}},
      {"replacement that is unchanged (touch by rename) adds nothing",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), Rn("a\nb\n"), RdKept({}), A("c\n"), Rd({"c"})}},
      {"two rotations in a row",
       kTxt,
       {A("a\n"), Rd({"a"}), Rn("b\n"), RdNew({"b"}), Rn("b\nc\n"), RdKept({"c"}), Rn("d\n"),
        RdNew({"d"})}},
      {"rewrite in place shorter then longer",
       kTxt,
       {A("a\nb\nc\n"), Rd({"a", "b", "c"}), W("a\n"), RdNew({"a"}), W("a\nb\nc\nd\ne\n"),
        Rd({"b", "c", "d", "e"})}},
      // Known limit: a rewrite in place that leaves the file at least as long as what was read is
      // indistinguishable from an append (same inode, no shrink) and is read as one.
      {"rewrite in place to the same size is not detected",
       kTxt,
       {A("a\nb\n"), Rd({"a", "b"}), W("c\nd\n"), Rd({}), A("e\n"), Rd({"e"})}},
      {"rewrite detected while a tail was pending",
       kTxt,
       {A("a\nb"), Rd({"a"}, true), W("x"), RdNew({}), Rd({}, true), Rd({"x"}, true), A("\ny\n"),
        Rd({"y"})}},
      {"in-place rewrite shorter than the scanned partial line keeps the consumed prefix",
       kTxt,
       {A("a\nbcd"), Rd({"a"}), W("a\nb"), RdKept({}), A("\nc\n"), Rd({"b", "c"})}},
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
      {"csv grown by replacement (the LL seasons example): only the added rows are new",
       kCsv,
       {A("h1,h2\n1,2\n"), Rd({"1,2"}), Rn("h1,h2\n1,2\n3,4\n5,6\n"), RdKept({"3,4", "5,6"}),
        Rn("h1,h2\n1,2\n3,4\n5,6\n7,8\n"), RdKept({"7,8"})},
       "h1,h2"},
      {"csv replaced by a file with another header: its header is read, all rows are new",
       kCsv,
       {A("h1,h2\n1,2\n"), Rd({"1,2"}), Rn("h1,h2,h3\n1,2,x\n3,4,y\n"), RdNew({"1,2,x", "3,4,y"})},
       "h1,h2,h3"},
      {"csv replaced by a file with the same header and other rows: all rows are new",
       kCsv,
       {A("h\n1\n2\n"), Rd({"1", "2"}), Rn("h\n3\n4\n5\n"), RdNew({"3", "4", "5"})},
       "h"},
      {"csv replaced while only the header was consumed",
       kCsv,
       {A("h\n"), Rd({}), Rn("h\n1\n"), RdKept({"1"}), Rn("g\n2\n"), RdNew({"2"})},
       "g"},
      {"csv header after rewrite in place",
       kCsv,
       {A("h1\n1\n2\n"), Rd({"1", "2"}), W("g1\n1\n"), RdNew({"1"}), A("2\n3\n"), Rd({"2", "3"})},
       "g1"},
      {"missing file, then created, deleted and recreated",
       kTxt,
       {RdMissing(), RdMissing(), A("a\nb\n"), Rd({"a", "b"}), Rm(), RdMissing(), Rn("c\n"),
        RdNew({"c"}), A("d\ne\n"), Rd({"d", "e"})}},
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
          EXPECT_EQ(r.rewrite, st.rewrite);
          EXPECT_EQ(r.rewritten, st.rewrite != Rewrite::kNone);
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
  EXPECT_EQ(r.message(), "reading " + dir_ + ": is a directory, not a regular file");
}

// Runs fn in a forked child and returns what it returned, or nullopt when it did not finish
// within `timeout` (the child is then killed) or died. Bounds tests of code that could block.
std::optional<std::string> RunInChild(const std::function<std::string()>& fn,
                                      std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = fn();
    } catch (...) {  // never back into the test runner's code in the child
      ::_exit(4);
    }
    for (size_t off = 0; off < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) ::_exit(3);
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool done = false;
  while (!done) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      done = true;
    }
  }
  ::close(fds[0]);
  if (!done) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

// [D:I15.2]: a FIFO at the index path froze the loop (open(O_RDONLY) waits for a writer).
TEST_F(IndexReaderTest, NonRegularFilesAreErrorsAndNeverBlock) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  const std::string sock = dir_ + "/sock";
  const int sfd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sfd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(sfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
      << std::strerror(errno);
  const std::string subdir = dir_ + "/sub";
  ASSERT_EQ(::mkdir(subdir.c_str(), 0755), 0);
  struct Case {
    std::string name;
    std::string target;  // what the index path is a symlink to ("" : the path itself is it)
    std::string path;
    std::string kind;
  };
  const std::vector<Case> cases = {
      {"fifo", "", fifo, "a FIFO"},
      {"symlink to a fifo", fifo, dir_ + "/l1", "a FIFO"},
      {"unix socket", "", sock, "a socket"},
      {"directory", "", subdir, "a directory"},
      {"character device", "/dev/null", dir_ + "/l2", "a character device"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    if (!c.target.empty()) {
      ASSERT_EQ(::symlink(c.target.c_str(), c.path.c_str()), 0);
    }
    for (bool take : {false, true}) {
      auto got = RunInChild(
          [&] {
            IndexCursor cursor;
            auto r = ReadNewSamples(c.path, IndexFormat::kTxt, cursor, take, 0,
                                    [](std::string_view) { return Status::Ok(); });
            return r.ok() ? std::string("ok") : r.message();
          },
          std::chrono::seconds(10));
      ASSERT_TRUE(got.has_value()) << c.path << ": the read blocked (or crashed)";
      EXPECT_EQ(*got, "reading " + c.path + ": is " + c.kind + ", not a regular file");
    }
  }
  ::close(sfd);
}

// [D:I15.3]: a line longer than the limit is skipped, reported once with its offset, and
// the next line counts; a line of exactly the limit (plus a CRLF) is delivered.
TEST_F(IndexReaderTest, LinesOverTheLimitAreSkipped) {
  constexpr int64_t kLimit = 100;
  const std::string max(kLimit, 'm'), over(kLimit + 1, 'o');
  struct Case {
    std::string name;
    IndexFormat format;
    std::vector<std::string> appends;  // one read (take_unterminated per `take`) after each
    std::vector<std::string> want;
    std::vector<int64_t> want_skipped_at;
    bool take = false;
    std::string want_header = "";
  };
  const std::vector<Case> cases = {
      {"limit+1 bytes skipped, next line counts",
       IndexFormat::kTxt,
       {"a\n" + over + "\nnext\n"},
       {"a", "next"},
       {2}},
      {"exactly the limit, with CRLF, is delivered",
       IndexFormat::kTxt,
       {max + "\r\n" + max + "\n"},
       {max, max},
       {}},
      {"limit+1 bytes ending in a second cr is too long",
       IndexFormat::kTxt,
       {max + "\r\r\nz\n"},
       {"z"},
       {0}},
      {"over-long line arriving in pieces is reported once",
       IndexFormat::kTxt,
       {"a\n" + std::string(60, 'x'), std::string(60, 'x'), std::string(500, 'x'),
        std::string(70, 'x') + "\nb\n", "c\n"},
       {"a", "b", "c"},
       {2}},
      {"several over-long lines in one chunk",
       IndexFormat::kTxt,
       {over + "\n" + over + "\nok\n" + over + "\n"},
       {"ok"},
       {0, 102, 207}},
      {"over-long unterminated tail ends like a taken tail",
       IndexFormat::kTxt,
       {"a\n" + over, "", "", "z\n"},
       {"a", "z"},
       {2},
       true},
      {"unterminated tail of limit+1 bytes is skipped when taken",
       IndexFormat::kTxt,
       {"a\n" + over, "", "z\n"},
       {"a", "z"},
       {2},
       true},
      {"over-long csv header: the next line is the header",
       IndexFormat::kCsv,
       {over + "\nh1,h2\n1,2\n"},
       {"1,2"},
       {0},
       false,
       "h1,h2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ::unlink(index_.c_str());
    IndexCursor cursor;
    std::vector<std::string> got;
    std::vector<int64_t> skipped_at;
    for (const std::string& data : c.appends) {
      Append(data);
      ReadOptions opt;
      opt.take_unterminated = c.take;
      opt.max_line_bytes = kLimit;
      auto r = ReadNewSamples(index_, c.format, cursor, opt, [&](std::string_view s) {
        got.emplace_back(s);
        return Status::Ok();
      });
      ASSERT_TRUE(r.ok()) << r.message();
      EXPECT_EQ(r->skipped_lines, static_cast<int64_t>(r->skipped_offsets.size()));
      skipped_at.insert(skipped_at.end(), r->skipped_offsets.begin(), r->skipped_offsets.end());
    }
    EXPECT_EQ(got, c.want);
    EXPECT_EQ(skipped_at, c.want_skipped_at);
    EXPECT_EQ(cursor.samples, static_cast<int64_t>(c.want.size()));
    if (c.format == IndexFormat::kCsv) {
      EXPECT_EQ(cursor.header, c.want_header);
    }
  }
}

TEST_F(IndexReaderTest, DefaultLimitIsOneMiB) {
  // Through the overload the controller calls: a line of 1 MiB + 1 bytes is not delivered.
  const std::string over(kDefaultMaxLineBytes + 1, 'o');
  Append(over + "\nnext\n");
  IndexCursor cursor;
  ReadResult r;
  std::vector<std::string> got = Read(IndexFormat::kTxt, cursor, false, 0, &r);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "next");
  EXPECT_EQ(cursor.offset, static_cast<int64_t>(over.size() + 6));
  EXPECT_EQ(SkippedLinesMessage(r, kDefaultMaxLineBytes),
            "skipped 1 line(s) longer than 1048576 bytes, at byte offset(s) 0");
}

TEST_F(IndexReaderTest, SkippingStateSurvivesACursorCopy) {
  // The cursor is persisted: a copy taken while skipping (offset inside the over-long line)
  // resumes skipping, and a max_bytes budget ends the calls in the middle of that line.
  const std::string over(300 * 1024, 'o');
  Append("a\n" + over);
  IndexCursor cursor;
  ReadOptions opt;
  opt.max_line_bytes = 1000;
  opt.max_bytes = 64 * 1024;
  std::vector<std::string> got;
  auto collect = [&](std::string_view s) {
    got.emplace_back(s);
    return Status::Ok();
  };
  auto r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, opt, collect);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(got, std::vector<std::string>{"a"});  // the budget ends the call after "a"
  EXPECT_EQ(r->skipped_lines, 0);
  r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, opt, collect);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->skipped_offsets, std::vector<int64_t>{2});
  EXPECT_TRUE(cursor.skipping);
  EXPECT_GT(cursor.offset, 2);
  EXPECT_LT(cursor.offset, static_cast<int64_t>(2 + over.size()));
  IndexCursor persisted = cursor;
  persisted.scanned = 0;
  Append("o\nb\n");
  for (int i = 0; i < 100 && persisted.offset < static_cast<int64_t>(stdfs::file_size(index_));
       ++i) {
    r = ReadNewSamples(index_, IndexFormat::kTxt, persisted, opt, collect);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->skipped_lines, 0);
    EXPECT_LE(r->bytes_read, opt.max_bytes + 64 * 1024);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(persisted.skipping);
}

// [D:I15.3]: every small append to an unterminated line re-read the whole line (quadratic).
TEST_F(IndexReaderTest, AppendsToAPartialLineAreReadOnce) {
  constexpr int kAppends = 2000;
  const std::string piece(100, 'p');
  Append("first\n");
  IndexCursor cursor;
  ASSERT_EQ(Read(IndexFormat::kTxt, cursor).size(), 1u);
  int64_t total_read = 0;
  for (int i = 0; i < kAppends; ++i) {
    Append(piece);
    ReadResult r;
    EXPECT_THAT(Read(IndexFormat::kTxt, cursor, false, 0, &r), IsEmpty());
    total_read += r.bytes_read;
  }
  Append("\n");
  ReadResult r;
  std::vector<std::string> got = Read(IndexFormat::kTxt, cursor, false, 0, &r);
  total_read += r.bytes_read;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].size(), piece.size() * kAppends);
  EXPECT_TRUE(got[0] == std::string(piece.size() * kAppends, 'p'));
  // Each byte is scanned once and read once more when its line completes.
  const int64_t line_bytes = static_cast<int64_t>(piece.size()) * kAppends + 1;
  EXPECT_LE(total_read, 2 * line_bytes) << "the partial line was re-read at every append";
}

// Free of the address-space limit the old reader's 4 GiB buffer hit, the child measures its own
// peak RSS growth.
bool UnderAddressSanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// [D:I15.3]: a sparse 3 GiB file without a newline took the LC to 4 GB.
TEST_F(IndexReaderTest, Sparse3GiBLineWithoutNewlineHasBoundedMemory) {
  constexpr int64_t kSize = int64_t{3} << 30;
  auto got = RunInChild(
      [&]() -> std::string {
        if (!UnderAddressSanitizer()) {
          // A runaway buffer fails fast instead of taking the machine's memory.
          std::ifstream statm("/proc/self/statm");
          long pages = 0;
          statm >> pages;
          const rlim_t cap = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (512 << 20);
          rlimit rl{cap, cap};
          ::setrlimit(RLIMIT_AS, &rl);
        }
        const int fd = ::open(index_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ::ftruncate(fd, kSize) != 0) return "ftruncate failed";
        ::close(fd);
        rusage before{}, after{};
        ::getrusage(RUSAGE_SELF, &before);
        IndexCursor cursor;
        auto r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, false, 0,
                                [](std::string_view) { return Status::Ok(); });
        ::getrusage(RUSAGE_SELF, &after);
        if (!r.ok()) return "read failed: " + r.message();
        std::string out = "samples=" + std::to_string(r->new_samples) +
                          " offset=" + std::to_string(cursor.offset);
        const long grew_kib = after.ru_maxrss - before.ru_maxrss;
        out += grew_kib <= 16 * 1024 ? " rss<=16MiB" : " rss+" + std::to_string(grew_kib) + "KiB";
        // The writer ends the line at last: reading goes on after it.
        std::ofstream(index_, std::ios::app) << "\nnext\n";
        std::vector<std::string> samples;
        r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, false, 0, [&](std::string_view s) {
          samples.emplace_back(s);
          return Status::Ok();
        });
        if (!r.ok()) return "second read failed: " + r.message();
        out += " then=" + (samples.empty() ? std::string("none") : samples[0]) +
               " read=" + std::to_string(r->bytes_read);
        return out;
      },
      std::chrono::seconds(120));
  ASSERT_TRUE(got.has_value()) << "the reader died or took over 120 s";
  EXPECT_EQ(*got, "samples=0 offset=" + std::to_string(kSize) + " rss<=16MiB then=next read=6");
}

// [D:I15.9]: a rotated index (a new file at the path) is not skipped by the count already
// consumed; a replacement that starts with the consumed bytes adds only the rest. The result says
// which case it was, with the counts the controller logs.
TEST_F(IndexReaderTest, RewriteSaysWhichCaseWithTheConsumedCounts) {
  struct Case {
    std::string name;
    IndexFormat format;
    std::string first, second;
    Rewrite want;
    std::vector<std::string> want_samples;  // of the second read
    std::string want_message;
  };
  const std::vector<Case> cases = {
      {"grown by replacement",
       IndexFormat::kTxt,
       "a\nb\n",
       "a\nb\nc\n",
       Rewrite::kPrefixKept,
       {"c"},
       "index replaced or rewritten: it starts with the 2 sample(s) (4 bytes) already consumed; "
       "only what follows is new"},
      {"rotated",
       IndexFormat::kTxt,
       "a\nb\n",
       "x\ny\nz\n",
       Rewrite::kNewFile,
       {"x", "y", "z"},
       "index replaced or rewritten by a new file (it does not start with the 2 sample(s), 4 "
       "bytes, already consumed): all its samples are new"},
      {"rotated to a shorter file",
       IndexFormat::kTxt,
       "a\nb\nc\n",
       "x\n",
       Rewrite::kNewFile,
       {"x"},
       "index replaced or rewritten by a new file (it does not start with the 3 sample(s), 6 "
       "bytes, already consumed): all its samples are new"},
      {"csv: the header is not a sample",
       IndexFormat::kCsv,
       "h\n1\n",
       "h\n1\n2\n",
       Rewrite::kPrefixKept,
       {"2"},
       "index replaced or rewritten: it starts with the 1 sample(s) (4 bytes) already consumed; "
       "only what follows is new"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ::unlink(index_.c_str());
    IndexCursor cursor;
    Append(c.first);
    ReadResult first;
    Read(c.format, cursor, false, 0, &first);
    EXPECT_EQ(first.rewrite, Rewrite::kNone);
    EXPECT_EQ(RewriteMessage(first), "");
    Replace(c.second);
    ReadResult r;
    EXPECT_EQ(Read(c.format, cursor, false, 0, &r), c.want_samples);
    EXPECT_EQ(r.rewrite, c.want);
    EXPECT_TRUE(r.rewritten);
    EXPECT_EQ(r.consumed_bytes, static_cast<int64_t>(c.first.size()));
    EXPECT_EQ(r.file_bytes, static_cast<int64_t>(c.second.size()));
    // The new file's start is read once, and only when it is long enough to match.
    EXPECT_EQ(r.prefix_bytes_checked,
              c.second.size() >= c.first.size() ? static_cast<int64_t>(c.first.size()) : 0);
    EXPECT_EQ(RewriteMessage(r), c.want_message);
    EXPECT_EQ(cursor.prefix_samples, first.new_samples + r.new_samples -
                                         (c.want == Rewrite::kNewFile ? first.new_samples : 0));
  }
}

// The digest always covers exactly the bytes [0, offset), whatever path moved the offset: lines,
// CRLF, empty lines, over-long lines found at once or only after a partial line was scanned by an
// earlier call, skipping across calls, taken unterminated tails, max_bytes slices.
TEST_F(IndexReaderTest, PrefixDigestCoversExactlyTheConsumedBytes) {
  std::mt19937 rng(20261201);
  auto random_text = [&](size_t len) {
    static const char kAlphabet[] = "ab\n\n\r,xyz";
    std::string t;
    for (size_t i = 0; i < len; ++i) t += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    return t;
  };
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ::unlink(index_.c_str());
    IndexCursor cursor;
    std::string content;
    const IndexFormat format = round % 2 ? IndexFormat::kCsv : IndexFormat::kTxt;
    for (int step = 0; step < 12; ++step) {
      const size_t kind = rng() % 4;
      std::string data = kind == 0   ? std::string(rng() % 40, 'L')  // may outgrow the limit
                         : kind == 1 ? random_text(rng() % 30)
                                     : random_text(rng() % 8);
      Append(data);
      content += data;
      ReadOptions opt;
      opt.max_line_bytes = 16;
      opt.take_unterminated = rng() % 3 == 0;
      opt.max_bytes = rng() % 2 ? 0 : 1 + static_cast<int64_t>(rng() % 20);
      auto r = ReadNewSamples(index_, format, cursor, opt,
                              [](std::string_view) { return Status::Ok(); });
      ASSERT_TRUE(r.ok()) << r.message();
      ASSERT_EQ(r->rewrite, Rewrite::kNone);
      ASSERT_LE(cursor.offset, static_cast<int64_t>(content.size()));
      ASSERT_EQ(cursor.prefix_digest,
                ExtendPrefixDigest(kEmptyPrefixDigest,
                                   std::string_view(content).substr(0, cursor.offset)))
          << "offset " << cursor.offset << " of " << content.size();
    }
    // And so a replacement with the same bytes plus more keeps the prefix.
    Replace(content + "new\n");
    ReadOptions opt;
    opt.max_line_bytes = 16;
    auto r =
        ReadNewSamples(index_, format, cursor, opt, [](std::string_view) { return Status::Ok(); });
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->rewrite, cursor.offset == 0 ? Rewrite::kNewFile : Rewrite::kPrefixKept);
  }
}

// Holes (a sparse over-long line) enter the digest without being read, and a copy of the file
// with the zeros written out matches it.
TEST_F(IndexReaderTest, PrefixDigestOverAHoleMatchesTheWrittenZeros) {
  constexpr int64_t kHole = 8 << 20;
  Append("a\nx");
  ASSERT_EQ(::truncate(index_.c_str(), kHole), 0);
  Append("\nb\n");
  IndexCursor cursor;
  ReadOptions opt;
  opt.max_line_bytes = 1000;
  std::vector<std::string> got;
  auto collect = [&](std::string_view s) {
    got.emplace_back(s);
    return Status::Ok();
  };
  auto r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, opt, collect);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_THAT(got, ElementsAre("a", "b"));
  EXPECT_LT(r->bytes_read, kHole / 2) << "the hole was read";
  std::string content = "a\nx" + std::string(kHole - 3, '\0') + "\nb\n";
  EXPECT_EQ(cursor.prefix_digest, ExtendPrefixDigest(kEmptyPrefixDigest, content));
  Replace(content + "c\n");  // written out: no hole
  got.clear();
  r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, opt, collect);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->rewrite, Rewrite::kPrefixKept);
  EXPECT_THAT(got, ElementsAre("c"));
}

// A cursor restored from a record written before prefix digests (prefix_digest_known false)
// handles a rewrite as before: the first `samples` samples of the new file are skipped. The
// digest is kept from then on, so the next rotation is told apart.
TEST_F(IndexReaderTest, CursorWithoutADigestFallsBackToTheConsumedCount) {
  Append("a\nb\n");
  IndexCursor cursor;
  ASSERT_EQ(Read(IndexFormat::kTxt, cursor).size(), 2u);
  cursor.prefix_digest = kEmptyPrefixDigest;  // what a decoded old record holds
  cursor.prefix_samples = 0;
  cursor.prefix_digest_known = false;
  Append("c\n");  // appends are read as ever
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor), ElementsAre("c"));
  Replace("x\ny\nz\nw\n");
  ReadResult r;
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor, false, 0, &r), ElementsAre("w"));
  EXPECT_EQ(r.rewrite, Rewrite::kSkippedByCount);
  EXPECT_EQ(r.consumed_samples, 3);
  EXPECT_EQ(RewriteMessage(r),
            "index replaced or rewritten (cursor without a prefix digest): its first 3 sample(s) "
            "are taken as already consumed");
  EXPECT_TRUE(cursor.prefix_digest_known);
  EXPECT_EQ(cursor.prefix_samples, 4);
  Replace("x\ny\nz\nw\nv\n");
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor, false, 0, &r), ElementsAre("v"));
  EXPECT_EQ(r.rewrite, Rewrite::kPrefixKept);
  Replace("p\n");
  EXPECT_THAT(Read(IndexFormat::kTxt, cursor, false, 0, &r), ElementsAre("p"));
  EXPECT_EQ(r.rewrite, Rewrite::kNewFile);
  EXPECT_EQ(cursor.samples, 6);  // never goes down: 3 + "w" + "v" + "p"
}

// The prefix check reads the consumed length once, in max_bytes slices (so a large index does
// not stall the caller's loop): the calls before the last say `checking` and read nothing else.
// A replacement during the check restarts it on the new file.
TEST_F(IndexReaderTest, PrefixCheckIsSlicedByMaxBytes) {
  constexpr int64_t kSlice = 64 * 1024;
  std::string content;
  for (int i = 0; i < 30000; ++i) content += "line " + std::to_string(i) + "\n";
  const int64_t size = static_cast<int64_t>(content.size());
  struct Case {
    std::string name;
    std::string replacement;
    std::string mid_check;  // replaces the file after the first slice, if not empty
    Rewrite want;
    std::vector<std::string> want_samples;
  };
  const std::vector<Case> cases = {
      {"grown", content + "n1\nn2\n", "", Rewrite::kPrefixKept, {"n1", "n2"}},
      {"differs at the end",
       content.substr(0, content.size() - 2) + "X\nn1\n",
       "",
       Rewrite::kNewFile,
       {}},
      {"replaced again during the check",
       content + "n1\n",
       content + "m1\nm2\n",
       Rewrite::kPrefixKept,
       {"m1", "m2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ::unlink(index_.c_str());
    Append(content);
    IndexCursor cursor;
    ASSERT_EQ(Read(IndexFormat::kTxt, cursor).size(), 30000u);
    // Kept linked so that its inode is not reused by the mid-check replacement (which would
    // then look like the file read before, appended to).
    const std::string keep = dir_ + "/kept";
    ::unlink(keep.c_str());
    ASSERT_EQ(::link(index_.c_str(), keep.c_str()), 0);
    Replace(c.replacement);
    std::vector<std::string> got;
    int64_t checked = 0;
    int checking_calls = 0;
    Rewrite decided = Rewrite::kNone;
    for (int call = 0; call < 100; ++call) {
      ReadResult r;
      std::vector<std::string> part = Read(IndexFormat::kTxt, cursor, false, kSlice, &r);
      got.insert(got.end(), part.begin(), part.end());
      EXPECT_LE(r.prefix_bytes_checked, kSlice);
      checked += r.prefix_bytes_checked;
      if (r.checking) {
        ++checking_calls;
        EXPECT_EQ(r.rewrite, Rewrite::kNone);
        EXPECT_TRUE(part.empty());
        if (checking_calls == 1 && !c.mid_check.empty()) Replace(c.mid_check);
        continue;
      }
      decided = r.rewrite;
      std::vector<std::string> rest = Read(IndexFormat::kTxt, cursor);  // unsliced, to the end
      got.insert(got.end(), rest.begin(), rest.end());
      break;
    }
    EXPECT_EQ(decided, c.want);
    const int64_t restarted = c.mid_check.empty() ? 0 : kSlice;  // the first slice read again
    EXPECT_EQ(checked, size + restarted);
    EXPECT_EQ(checking_calls,
              static_cast<int>((size + kSlice - 1) / kSlice) - 1 + (c.mid_check.empty() ? 0 : 1));
    if (c.want == Rewrite::kNewFile) {
      ASSERT_EQ(got.size(), 30001u);  // all lines of the new file
      EXPECT_EQ(got.back(), "n1");
      EXPECT_EQ(got[29999], "line 2999X");
    } else {
      EXPECT_EQ(got, c.want_samples);
    }
  }
}

// Figures for the report (not run by default): a 1e7-line index read from the start, then a
// replacement by the same content plus a line (the prefix check reads the whole consumed length),
// then a rotation to a new file of one line. Run with --gtest_also_run_disabled_tests on a release
// build.
TEST_F(IndexReaderTest, DISABLED_BenchTenMillionLines) {
  {
    std::ofstream out(index_, std::ios::binary);
    for (int i = 0; i < 10'000'000; ++i) out << "train_images/img_" << i << ".jpg 1,2,3,4\n";
  }
  const int64_t size = static_cast<int64_t>(stdfs::file_size(index_));
  auto timed = [&](const char* what, IndexCursor& cursor) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = ReadNewSamples(index_, IndexFormat::kTxt, cursor, ReadOptions{},
                            [](std::string_view) { return Status::Ok(); });
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    ASSERT_TRUE(r.ok()) << r.message();
    std::printf("%s: %lld ms, %lld samples, %lld bytes read (%lld prefix checked), %s\n", what,
                static_cast<long long>(ms), static_cast<long long>(r->new_samples),
                static_cast<long long>(r->bytes_read),
                static_cast<long long>(r->prefix_bytes_checked), RewriteMessage(*r).c_str());
  };
  std::printf("index: %lld bytes\n", static_cast<long long>(size));
  IndexCursor cursor;
  timed("first read (warm cache)", cursor);
  {
    const std::string tmp = index_ + ".new";
    stdfs::copy_file(index_, tmp);
    std::ofstream(tmp, std::ios::app) << "one more\n";
    ASSERT_EQ(::rename(tmp.c_str(), index_.c_str()), 0);
  }
  IndexCursor sliced = cursor;
  timed("replacement with the same prefix", cursor);
  // The same check in the controller's 4 MiB slices: the longest call is what the loop waits.
  ReadOptions opt;
  opt.max_bytes = 4 << 20;
  double longest_ms = 0;
  int calls = 0;
  for (bool checking = true; checking; ++calls) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = ReadNewSamples(index_, IndexFormat::kTxt, sliced, opt,
                            [](std::string_view) { return Status::Ok(); });
    longest_ms = std::max(
        longest_ms,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(r.ok()) << r.message();
    checking = r->checking;
  }
  std::printf("sliced check (4 MiB): %d calls, longest %.1f ms\n", calls, longest_ms);
  Replace("rotated\n");
  timed("rotation to a new file", cursor);
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
