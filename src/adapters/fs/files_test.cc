#include "adapters/fs/files.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sedna::fs {
namespace {

using ::testing::HasSubstr;
namespace stdfs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "files_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }
  void TearDown() override {
    SetWriteFaultForTest(nullptr);
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  static void Write(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    ASSERT_TRUE(out.good()) << path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Names in `dir` (temp files are dot files, so they show up here).
  static std::vector<std::string> List(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : stdfs::directory_iterator(dir)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

TEST_F(FilesTest, MakeDirsCreatesNestedAndAcceptsExisting) {
  ASSERT_TRUE(MakeDirs(Path("a/b//c/")).ok());
  EXPECT_TRUE(stdfs::is_directory(Path("a/b/c")));
  EXPECT_TRUE(MakeDirs(Path("a/b/c")).ok());
  EXPECT_TRUE(MakeDirs(Path("a")).ok());
}

TEST_F(FilesTest, MakeDirsErrorsNameThePath) {
  Write(Path("file"), "x");
  Status s = MakeDirs(Path("file/sub"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(Path("file")));
  s = MakeDirs(Path("file"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "mkdir " + Path("file") + ": exists and is not a directory");
  EXPECT_FALSE(MakeDirs("").ok());
}

TEST_F(FilesTest, AtomicWriteFileCreatesAndReplaces) {
  const std::string target = Path("out.txt");
  ASSERT_TRUE(AtomicWriteFile(target, "first version, long\n").ok());
  EXPECT_EQ(Read(target), "first version, long\n");
  ASSERT_TRUE(AtomicWriteFile(target, "short\n").ok());
  EXPECT_EQ(Read(target), "short\n");
  ASSERT_TRUE(AtomicWriteFile(target, "").ok());
  EXPECT_EQ(Read(target), "");
  EXPECT_EQ(List(dir_), std::vector<std::string>{"out.txt"});
}

TEST_F(FilesTest, WriteFileFromRangesConcatenatesPrefixAndRanges) {
  const std::string a = Pattern(300 * 1024 + 17, 1);  // spans several copy chunks
  const std::string b = Pattern(1000, 2);
  Write(Path("a"), a);
  Write(Path("b"), b);
  const std::vector<FileRange> ranges = {
      {Path("a"), 0, 5},
      {Path("b"), 10, 10},  // empty
      {Path("b"), 100, 1000},
      {Path("a"), 1, static_cast<int64_t>(a.size())},
  };
  ASSERT_TRUE(WriteFileFromRanges(Path("out"), "header\n", ranges).ok());
  EXPECT_EQ(Read(Path("out")), "header\n" + a.substr(0, 5) + b.substr(100) + a.substr(1));
}

TEST_F(FilesTest, WriteFileFromRangesBadRangeLeavesTargetUntouched) {
  Write(Path("src"), "0123456789");
  Write(Path("out"), "old content\n");
  struct Case {
    FileRange range;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{Path("src"), 5, 11}, "reading " + Path("src") + ": range [5, 11) extends past the end"},
      {{Path("src"), 6, 5}, "reading " + Path("src") + ": invalid range [6, 5)"},
      {{Path("src"), -1, 5}, "reading " + Path("src") + ": invalid range [-1, 5)"},
      {{Path("missing"), 0, 1}, "reading " + Path("missing") + ": No such file or directory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    Status s = WriteFileFromRanges(Path("out"), "prefix", {c.range});
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr(c.want));
    EXPECT_EQ(Read(Path("out")), "old content\n");
    EXPECT_EQ(List(dir_), (std::vector<std::string>{"out", "src"}));
  }
}

TEST_F(FilesTest, WriteFileFromRangesMissingDirectoryIsAnError) {
  Status s = AtomicWriteFile(Path("nodir/out"), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(Path("nodir/out")));
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
}

TEST_F(FilesTest, B13_CopyTruncatesTarget) {
  // The Go LC opened the target without O_TRUNC: a shorter model kept the old model's tail.
  Write(Path("model_v1.pb"), std::string(10000, 'O'));
  Write(Path("model_v2.pb"), "new model");
  ASSERT_TRUE(AtomicCopyFile(Path("model_v1.pb"), Path("deploy/model.pb")).ok());
  EXPECT_EQ(Read(Path("deploy/model.pb")), std::string(10000, 'O'));
  ASSERT_TRUE(AtomicCopyFile(Path("model_v2.pb"), Path("deploy/model.pb")).ok());
  EXPECT_EQ(Read(Path("deploy/model.pb")), "new model");
  EXPECT_EQ(stdfs::file_size(Path("deploy/model.pb")), 9u);
  EXPECT_EQ(List(Path("deploy")), std::vector<std::string>{"model.pb"});
}

TEST_F(FilesTest, AtomicCopyFileCreatesParentsAndKeepsMode) {
  const std::string big = Pattern(1024 * 1024 + 3, 5);
  Write(Path("src.bin"), big);
  ASSERT_EQ(::chmod(Path("src.bin").c_str(), 0600), 0);
  ASSERT_TRUE(AtomicCopyFile(Path("src.bin"), Path("x/y/z/dst.bin")).ok());
  EXPECT_EQ(Read(Path("x/y/z/dst.bin")), big);
  struct stat st;
  ASSERT_EQ(::stat(Path("x/y/z/dst.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(FilesTest, AtomicCopyFileRejectsDirectoryAndMissingSource) {
  ASSERT_TRUE(MakeDirs(Path("model_dir")).ok());
  Write(Path("dst"), "keep");
  Status s = AtomicCopyFile(Path("model_dir"), Path("dst"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "copying " + Path("model_dir") + ": is a directory");
  s = AtomicCopyFile(Path("nope"), Path("dst"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "copying " + Path("nope") + ": No such file or directory");
  EXPECT_EQ(Read(Path("dst")), "keep");
}

TEST_F(FilesTest, WriteFaultHookFailsWriteAndKeepsOldTarget) {
  const std::string target = Path("data.txt");
  Write(Path("spool"), "s1\ns2\n");
  Write(target, "old data\n");
  std::vector<std::string> seen;
  SetWriteFaultForTest([&](const std::string& path) {
    seen.push_back(path);
    return path == target ? ENOSPC : 0;
  });
  Status s = WriteFileFromRanges(target, "", {{Path("spool"), 0, 6}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "writing " + target + ": No space left on device");
  EXPECT_EQ(seen, std::vector<std::string>{target});  // the hook sees the target, not the temp
  EXPECT_EQ(Read(target), "old data\n");
  EXPECT_EQ(List(dir_), (std::vector<std::string>{"data.txt", "spool"}));

  s = AtomicCopyFile(Path("spool"), target);
  EXPECT_EQ(s.message(), "writing " + target + ": No space left on device");
  EXPECT_EQ(Read(target), "old data\n");

  SetWriteFaultForTest(nullptr);
  ASSERT_TRUE(WriteFileFromRanges(target, "", {{Path("spool"), 0, 6}}).ok());
  EXPECT_EQ(Read(target), "s1\ns2\n");
}

TEST_F(FilesTest, RealEnospcOnTinyTmpfs) {
  const std::string mnt = Path("tmpfs");
  ASSERT_TRUE(MakeDirs(mnt).ok());
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "); the fault hook test covers the error path";
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string target = mnt + "/data.txt";
  ASSERT_TRUE(AtomicWriteFile(target, "old data\n").ok());
  Write(Path("big"), Pattern(1024 * 1024, 3));

  Status s = WriteFileFromRanges(target, "", {{Path("big"), 0, 1024 * 1024}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "writing " + target + ": No space left on device");
  EXPECT_EQ(Read(target), "old data\n");
  EXPECT_EQ(List(mnt), std::vector<std::string>{"data.txt"});

  s = AtomicCopyFile(Path("big"), mnt + "/model.bin");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "writing " + mnt + "/model.bin: No space left on device");
  EXPECT_EQ(List(mnt), std::vector<std::string>{"data.txt"});
}

TEST(PathTest, CleanPathMatchesGo) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "."},
      {"abc", "abc"},
      {"abc/def", "abc/def"},
      {"a/b/c", "a/b/c"},
      {".", "."},
      {"..", ".."},
      {"../..", "../.."},
      {"../../abc", "../../abc"},
      {"/abc", "/abc"},
      {"/", "/"},
      {"abc/", "abc"},
      {"/abc/", "/abc"},
      {"//abc", "/abc"},
      {"abc//def", "abc/def"},
      {"./abc", "abc"},
      {"/./abc/def/", "/abc/def"},
      {"abc/.", "abc"},
      {"abc/def/..", "abc"},
      {"abc/../..", ".."},
      {"/abc/../..", "/"},
      {"abc/./../def", "def"},
      {"/../abc", "/abc"},
      {"a/../../b", "../b"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(CleanPath(in), want) << in;
}

TEST(PathTest, JoinRootfs) {
  struct Case {
    std::string rootfs, host, want;
  };
  const std::vector<Case> cases = {
      {"/rootfs", "/data/helmet/train_data.txt", "/rootfs/data/helmet/train_data.txt"},
      {"/rootfs/", "/data/x", "/rootfs/data/x"},
      {"/rootfs", "data/x", "/rootfs/data/x"},
      {"/rootfs", "/data//x/./y/", "/rootfs/data/x/y"},
      {"/rootfs", "", "/rootfs"},
      {"/rootfs", "/", "/rootfs"},
      {"/rootfs", "/../etc/passwd", "/rootfs/etc/passwd"},  // cannot climb out of the mount
      {"/rootfs", "/a/../../b", "/rootfs/b"},
      {"", "/data//x/", "/data/x"},
      {"", "data/../x", "x"},
      {"", "", ""},
      {"/", "/data/x", "/data/x"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(JoinRootfs(c.rootfs, c.host), c.want) << c.rootfs << " + " << c.host;
  }
}

TEST(PathTest, B25_RootfsTrailingSlash) {
  // Go's plain TrimPrefix with ROOTFS_MOUNT_DIR=/rootfs/ sent relative "output/..." upstream.
  struct Case {
    std::string rootfs, path, want;
  };
  const std::vector<Case> cases = {
      {"/rootfs", "/rootfs/output/data/train/1/data.txt", "/output/data/train/1/data.txt"},
      {"/rootfs/", "/rootfs/output/data/train/1/data.txt", "/output/data/train/1/data.txt"},
      {"/rootfs//", "/rootfs/output/model", "/output/model"},
      {"/rootfs", "/rootfs", "/"},
      {"/rootfs/", "/rootfs/", "/"},
      {"/rootfs", "/rootfs//output/", "/output/"},
      {"/rootfs", "/rootfsx/a", "/rootfsx/a"},  // a sibling, not under /rootfs
      {"/rootfs/", "/rootfsx/a", "/rootfsx/a"},
      {"/rootfs", "/other/a", "/other/a"},
      {"/rootfs", "/rootfs/../etc", "/rootfs/../etc"},  // not under /rootfs once cleaned
      {"/rootfs", "s3://bucket/rootfs/a", "s3://bucket/rootfs/a"},
      {"", "/rootfs/a", "/rootfs/a"},
      {"/", "/rootfs/a", "/rootfs/a"},
      {"/host/root", "/host/root/a/b", "/a/b"},
  };
  for (const Case& c : cases) {
    const std::string got = StripRootfs(c.rootfs, c.path);
    EXPECT_EQ(got, c.want) << c.rootfs << " - " << c.path;
    if (!c.path.empty() && c.path[0] == '/') {
      EXPECT_EQ(got[0], '/') << got;
    }
  }
  // Round trip for both spellings of the mount.
  for (const std::string rootfs : {"/rootfs", "/rootfs/"}) {
    for (const std::string host : {"/data/a.txt", "/", "/x/y/"}) {
      EXPECT_EQ(StripRootfs(rootfs, JoinRootfs(rootfs, host)), CleanPath(host)) << rootfs << host;
    }
  }
}

TEST(PathTest, IsS3Url) {
  EXPECT_TRUE(IsS3Url("s3://kubeedge/data/train.txt"));
  EXPECT_TRUE(IsS3Url("S3://kubeedge/x"));
  EXPECT_TRUE(IsS3Url("s3://"));
  EXPECT_FALSE(IsS3Url("s3:/kubeedge/x"));
  EXPECT_FALSE(IsS3Url("/data/s3://x"));
  EXPECT_FALSE(IsS3Url("file:///x"));
  EXPECT_FALSE(IsS3Url(""));
}

}  // namespace
}  // namespace sedna::fs

namespace sedna::fs {
namespace {

// A writer killed mid-write leaves ".<name>.tmp-<pid>-..." beside the target; the next atomic
// write removes those of dead processes (and never those of live ones).
TEST(StaleTempTest, DeadWritersTempsAreRemovedLiveOnesKept) {
  char tmpl[] = "/tmp/sedna-stale-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  int st = 0;
  ::waitpid(dead, &st, 0);
  const std::string stale = dir + "/.model.pkl.tmp-" + std::to_string(dead) + "-0-1";
  const std::string live = dir + "/.model.pkl.tmp-" + std::to_string(::getppid()) + "-0-2";
  const std::string other = dir + "/.other.tmp-" + std::to_string(dead) + "-0-3";
  for (const auto& p : {stale, live, other}) {
    ASSERT_TRUE(AtomicWriteFile(p + ".seed", "x").ok());
    ASSERT_EQ(::rename((p + ".seed").c_str(), p.c_str()), 0);
  }
  ASSERT_TRUE(AtomicWriteFile(dir + "/model.pkl", "new").ok());
  EXPECT_NE(::access(stale.c_str(), F_OK), 0) << "a dead writer's temp file is removed";
  EXPECT_EQ(::access(live.c_str(), F_OK), 0) << "a live process's temp file is kept";
  EXPECT_EQ(::access(other.c_str(), F_OK), 0) << "other targets' temp files are not touched";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sedna::fs

namespace sedna::fs {
namespace {

TEST(DirnameTest, DirectoryPartOfAPath) {
  EXPECT_EQ(Dirname("/a/b/data.txt"), "/a/b");
  EXPECT_EQ(Dirname("/a//data.txt"), "/a");
  EXPECT_EQ(Dirname("/data.txt"), "/");
  EXPECT_EQ(Dirname("data.txt"), ".");
  EXPECT_EQ(Dirname("a/b"), "a");
}

}  // namespace
}  // namespace sedna::fs
