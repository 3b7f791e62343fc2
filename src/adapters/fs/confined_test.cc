#include "adapters/fs/confined.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "adapters/fs/files.h"

namespace sedna::fs {
namespace {

namespace sfs = std::filesystem;

std::string Slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Put(const std::string& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

std::string ReadAll(const OpenedFile& f) {
  std::string out(static_cast<size_t>(f.st.st_size), '\0');
  const ssize_t n = ::pread(f.fd.get(), out.data(), out.size(), 0);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

// Every test runs with both resolvers: openat2 (when this kernel has it) and the walk.
class ConfinedTest : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    if (GetParam() == Resolver::kOpenat2 && !KernelHasOpenat2()) {
      GTEST_SKIP() << "this kernel has no openat2(2)";
    }
    SetResolver(GetParam());
    char tmpl[] = "/tmp/confined-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    rootfs_ = base_ + "/rootfs";
    outside_ = base_ + "/outside";
    sfs::create_directories(rootfs_ + "/out/train/1");
    sfs::create_directories(outside_);
    Put(outside_ + "/secret", "host secret");
    Put(rootfs_ + "/out/train/1/model.pb", "model");
  }
  void TearDown() override {
    SetResolver(Resolver::kAuto);
    if (!base_.empty()) sfs::remove_all(base_);
  }
  Dir Out() {
    auto d = Dir::OpenHost(rootfs_, "/out", false);
    EXPECT_TRUE(d.ok()) << d.message();
    return d.ok() ? std::move(*d) : Dir();
  }

  std::string base_, rootfs_, outside_;
};

INSTANTIATE_TEST_SUITE_P(Resolvers, ConfinedTest,
                         ::testing::Values(Resolver::kOpenat2, Resolver::kWalk),
                         [](const auto& info) {
                           return info.param == Resolver::kOpenat2 ? "Openat2" : "Walk";
                         });

TEST_P(ConfinedTest, ResolverInUseIsTheOneAskedFor) { EXPECT_EQ(ActiveResolver(), GetParam()); }

TEST_P(ConfinedTest, OpensARegularFileBeneathAndReadsItFromTheFd) {
  Dir out = Out();
  auto f = out.OpenFile("train/1/model.pb");
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(ReadAll(*f), "model");
  EXPECT_EQ(f->path, rootfs_ + "/out/train/1/model.pb");
}

TEST_P(ConfinedTest, ASymlinkedFileIsRefusedWhereverItPoints) {
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (rootfs_ + "/out/train/1/link").c_str()), 0);
  ASSERT_EQ(::symlink("model.pb", (rootfs_ + "/out/train/1/inside-link").c_str()), 0);
  Dir out = Out();
  for (const char* rel : {"train/1/link", "train/1/inside-link"}) {
    auto f = out.OpenFile(rel);
    ASSERT_FALSE(f.ok()) << rel;
    EXPECT_NE(f.message().find("symbolic link"), std::string::npos) << f.message();
  }
}

TEST_P(ConfinedTest, ASymlinkedDirectoryOnTheWayIsRefused) {
  sfs::create_directories(outside_ + "/train/2");
  Put(outside_ + "/train/2/model.pb", "foreign");
  ASSERT_EQ(::symlink((outside_ + "/train/2").c_str(), (rootfs_ + "/out/train/2").c_str()), 0);
  Dir out = Out();
  EXPECT_FALSE(out.OpenFile("train/2/model.pb").ok());
  EXPECT_FALSE(out.Sub("train/2", false).ok());
  // create=true neither follows it nor replaces it.
  auto made = out.Sub("train/2", true);
  EXPECT_FALSE(made.ok());
  EXPECT_EQ(Slurp(outside_ + "/train/2/model.pb"), "foreign");
}

TEST_P(ConfinedTest, DotDotAndAbsolutePathsAreRefusedBeneathARoot) {
  Dir out = Out();
  EXPECT_FALSE(out.OpenFile("../out/train/1/model.pb").ok());
  EXPECT_FALSE(out.OpenFile("train/../../outside/secret").ok());
  EXPECT_FALSE(out.OpenFile("/etc/passwd").ok());
  EXPECT_FALSE(out.Sub("..", false).ok());
}

TEST_P(ConfinedTest, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((rootfs_ + "/out/fifo").c_str(), 0600), 0);
  auto f = Out().OpenFile("fifo");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.message().find("not a regular file"), std::string::npos) << f.message();
}

TEST_P(ConfinedTest, ADirectoryIsNotAFile) {
  auto f = Out().OpenFile("train");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.message().find("is a directory"), std::string::npos) << f.message();
}

// A missing file or directory is named whole, whichever resolver found it missing (qemu-user
// and some seccomp profiles have no openat2: the walk must say the same).
TEST_P(ConfinedTest, AMissingPathIsNamedWholeByEitherResolver) {
  const Dir out = Out();
  for (const char* rel : {"train/2/model.pb", "train/1/nothing.pb", "eval/3/x/y"}) {
    auto f = out.OpenFile(rel);
    ASSERT_FALSE(f.ok()) << rel;
    EXPECT_NE(f.message().find(out.path() + "/" + rel + ": No such file"), std::string::npos)
        << f.message();
  }
  auto d = out.Sub("train/9/deeper", false);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find(out.path() + "/train/9/deeper: No such file"), std::string::npos)
      << d.message();
  // Callers (model versions, hot-update removal) take a missing directory from the errno.
  EXPECT_EQ(d.status().errno_value(), ENOENT);
  EXPECT_EQ(d.code(), ErrorCode::kNotFound);
  auto host = Dir::OpenHost(rootfs_, "/no/such/dir", false);
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().errno_value(), ENOENT) << host.message();
}

TEST_P(ConfinedTest, SubCreatesMissingDirectoriesBeneath) {
  Dir out = Out();
  auto d = out.Sub("data/train/7", true);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(sfs::is_directory(rootfs_ + "/out/data/train/7"));
  EXPECT_EQ(d->path(), rootfs_ + "/out/data/train/7");
}

// Both orders (Dir::Order: a round's sample file renames before it syncs) keep these promises.
constexpr Dir::Order kOrders[] = {Dir::Order::kSyncThenRename, Dir::Order::kRenameThenSync};

TEST_P(ConfinedTest, ReplaceWritesAtomicallyAndReplacesALinkInsteadOfFollowingIt) {
  for (const Dir::Order order : kOrders) {
    SCOPED_TRACE(order == Dir::Order::kSyncThenRename ? "sync, then rename" : "rename, then sync");
    sfs::remove(rootfs_ + "/out/data.txt");
    ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (rootfs_ + "/out/data.txt").c_str()), 0);
    Dir out = Out();
    auto id = out.Replace(
        "data.txt", 0640,
        [](int fd, const std::string& path) { return WriteAllAt(fd, 0, "samples\n", path); },
        order);
    ASSERT_TRUE(id.ok()) << id.message();
    EXPECT_EQ(Slurp(outside_ + "/secret"), "host secret");
    auto st = out.Lstat("data.txt");
    ASSERT_TRUE(st.ok() && *st) << st.message();
    EXPECT_TRUE(S_ISREG((*st)->st_mode));
    EXPECT_EQ((*st)->st_mode & 0777, 0640u);
    EXPECT_EQ(IdOf(**st), *id);
    EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "samples\n");
    // No temp file is left beside it.
    size_t entries = 0;
    for (const auto& e : sfs::directory_iterator(rootfs_ + "/out")) entries += e.path() != "";
    EXPECT_EQ(entries, 2u);  // train/, data.txt
  }
}

TEST_P(ConfinedTest, AFailedFillLeavesTheTargetAndNoTemp) {
  Put(rootfs_ + "/out/data.txt", "old");
  Dir out = Out();
  for (const Dir::Order order : kOrders) {
    auto id = out.Replace(
        "data.txt", -1, [](int, const std::string&) { return Status::Error("disk on fire"); },
        order);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.message(), "disk on fire");
    EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "old");
    EXPECT_EQ(std::distance(sfs::directory_iterator(rootfs_ + "/out"), sfs::directory_iterator()),
              2);
  }
}

// Two files put in place by ReplaceUnsynced are there, whole, before either is finished; each
// FinishReplace returns the identity of the file that was put in place.
TEST_P(ConfinedTest, ReplaceUnsyncedPutsFilesInPlaceAndFinishReplaceSyncsThem) {
  Put(rootfs_ + "/out/data.txt", "old");
  Dir out = Out();
  auto put = [&](const char* name, std::string content) {
    return out.ReplaceUnsynced(name, -1, [content](int fd, const std::string& path) {
      return WriteAllAt(fd, 0, content, path);
    });
  };
  auto index = put("dataIndex.txt", "prefix/\na.jpg\n");
  ASSERT_TRUE(index.ok()) << index.message();
  auto data = put("data.txt", "a.jpg 1\n");
  ASSERT_TRUE(data.ok()) << data.message();
  EXPECT_TRUE(index->file.valid());
  EXPECT_EQ(index->target, rootfs_ + "/out/dataIndex.txt");
  EXPECT_EQ(Slurp(rootfs_ + "/out/dataIndex.txt"), "prefix/\na.jpg\n");
  EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "a.jpg 1\n");
  const FileId index_id = index->id, data_id = data->id;
  auto a = out.FinishReplace(std::move(*index));
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(*a, index_id);
  auto b = out.FinishReplace(std::move(*data));
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(*b, data_id);
  auto st = out.Lstat("data.txt");
  ASSERT_TRUE(st.ok() && *st);
  EXPECT_EQ(IdOf(**st), data_id);
  EXPECT_EQ(std::distance(sfs::directory_iterator(rootfs_ + "/out"), sfs::directory_iterator()),
            3);  // train/, data.txt, dataIndex.txt: no temp file

  // A directory in the way: the entry is left alone, and so is no temp file.
  ASSERT_TRUE(sfs::create_directory(rootfs_ + "/out/taken"));
  auto refused = put("taken", "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "replacing " + rootfs_ + "/out/taken: is a directory");
  EXPECT_TRUE(sfs::is_directory(rootfs_ + "/out/taken"));
  EXPECT_EQ(std::distance(sfs::directory_iterator(rootfs_ + "/out"), sfs::directory_iterator()), 4);
}

// A spare (an unnamed file made ahead) is written and linked in place: under the name when there
// is none, renamed over what is there otherwise; a directory in the way is an error; a spare that
// cannot be linked here (another filesystem) leaves the write to a temp file as without it.
// ReplaceUnsynced removes the temp files of `name` that a killed writer left (as every write
// here does) unless the caller says it made the directory just now (Sweep::kNewDirectory), with
// or without a spare.
TEST_P(ConfinedTest, ReplaceUnsyncedSweepsStaleTempsUnlessTheDirectoryIsNew) {
  Dir out = Out();
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  int status = 0;
  ::waitpid(dead, &status, 0);
  const std::string stale = rootfs_ + "/out/.data.txt.tmp-" + std::to_string(dead) + "-0-1";
  auto fill = [](int fd, const std::string& path) { return WriteAllAt(fd, 0, "x\n", path); };
  auto spare = [&] {
    return UniqueFd(::open((rootfs_ + "/out").c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644));
  };
  for (const bool with_spare : {false, true}) {
    SCOPED_TRACE(with_spare ? "with a spare" : "with a temp file");
    ASSERT_TRUE(AtomicWriteFile(stale, "left by a killed writer").ok());
    auto kept = out.ReplaceUnsynced("data.txt", -1, fill, with_spare ? spare() : UniqueFd(),
                                    Dir::Sweep::kNewDirectory);
    ASSERT_TRUE(kept.ok()) << kept.message();
    ASSERT_TRUE(out.FinishReplace(std::move(*kept)).ok());
    EXPECT_EQ(::access(stale.c_str(), F_OK), 0) << "not swept in a directory said to be new";
    auto swept = out.ReplaceUnsynced("data.txt", -1, fill, with_spare ? spare() : UniqueFd());
    ASSERT_TRUE(swept.ok()) << swept.message();
    ASSERT_TRUE(out.FinishReplace(std::move(*swept)).ok());
    EXPECT_NE(::access(stale.c_str(), F_OK), 0) << "a dead writer's temp file is swept";
    EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "x\n");
  }
}

TEST_P(ConfinedTest, ReplaceUnsyncedLinksASpareInPlace) {
  Dir out = Out();
  auto spare = [&](const std::string& in) {
    const int fd = ::open(in.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0) << in << ": " << std::strerror(errno);
    return UniqueFd(fd);
  };
  auto fill = [](const std::string& content) {
    return [content](int fd, const std::string& path) { return WriteAllAt(fd, 0, content, path); };
  };
  auto ino_of = [](const UniqueFd& fd) {
    struct stat st {};
    ::fstat(fd.get(), &st);
    return st.st_ino;
  };
  auto entries = [&] {
    return std::distance(sfs::directory_iterator(rootfs_ + "/out"), sfs::directory_iterator());
  };

  // No entry yet: linked straight under the name.
  UniqueFd s1 = spare(rootfs_ + "/out");
  const ino_t ino1 = ino_of(s1);
  auto a = out.ReplaceUnsynced("data.txt", -1, fill("a.jpg 1\n"), std::move(s1));
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->id.ino, ino1);
  EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "a.jpg 1\n");
  auto done = out.FinishReplace(std::move(*a));
  ASSERT_TRUE(done.ok()) << done.message();
  EXPECT_EQ(done->ino, ino1);
  EXPECT_EQ(entries(), 2);  // train/, data.txt

  // An entry there (the file of an earlier try, or a link): replaced, never followed.
  sfs::remove(rootfs_ + "/out/data.txt");
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (rootfs_ + "/out/data.txt").c_str()), 0);
  UniqueFd s2 = spare(rootfs_ + "/out/train");  // any directory of the mount
  const ino_t ino2 = ino_of(s2);
  auto b = out.ReplaceUnsynced("data.txt", 0640, fill("b.jpg 2\n"), std::move(s2));
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->id.ino, ino2);
  ASSERT_TRUE(out.FinishReplace(std::move(*b)).ok());
  EXPECT_EQ(Slurp(outside_ + "/secret"), "host secret");
  auto st = out.Lstat("data.txt");
  ASSERT_TRUE(st.ok() && *st);
  EXPECT_TRUE(S_ISREG((*st)->st_mode));
  EXPECT_EQ((*st)->st_mode & 0777, 0640u);
  EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "b.jpg 2\n");
  EXPECT_EQ(entries(), 2);  // no temp name left

  // A directory in the way: an error, the directory and nothing else left.
  ASSERT_TRUE(sfs::create_directory(rootfs_ + "/out/taken"));
  auto c = out.ReplaceUnsynced("taken", -1, fill("x"), spare(rootfs_ + "/out"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.message(), "replacing " + rootfs_ + "/out/taken: is a directory");
  EXPECT_TRUE(sfs::is_directory(rootfs_ + "/out/taken"));
  EXPECT_EQ(entries(), 3);

  // A spare on another filesystem cannot be linked here: a temp file is written instead.
  struct stat shm {
  }, here{};
  if (::stat("/dev/shm", &shm) == 0 && ::stat(rootfs_.c_str(), &here) == 0 &&
      shm.st_dev != here.st_dev) {
    UniqueFd s3 = spare("/dev/shm");
    if (s3.valid()) {
      const ino_t ino3 = ino_of(s3);
      auto d = out.ReplaceUnsynced("data.txt", -1, fill("d.jpg 4\n"), std::move(s3));
      ASSERT_TRUE(d.ok()) << d.message();
      EXPECT_NE(d->id.ino, ino3);
      ASSERT_TRUE(out.FinishReplace(std::move(*d)).ok());
      EXPECT_EQ(Slurp(rootfs_ + "/out/data.txt"), "d.jpg 4\n");
      EXPECT_EQ(entries(), 3);
    }
  }
}

// A directory made ahead is moved where a new one is wanted, never over an entry that is there;
// one swapped for a link before the move is refused after it (and not followed).
TEST_P(ConfinedTest, MoveDirHereMovesOnlyTheDirectoryItWasGiven) {
  Dir out = Out();
  auto train = out.Sub("train", false);
  ASSERT_TRUE(train.ok()) << train.message();
  auto made = [&](const std::string& name) {
    EXPECT_EQ(::mkdirat(out.fd(), name.c_str(), 0755), 0);
    auto st = out.Lstat(name);
    EXPECT_TRUE(st.ok() && *st);
    return IdOf(**st);
  };
  const FileId id = made(".spare-1");
  auto moved = train->MoveDirHere(out, ".spare-1", id, "2");
  ASSERT_TRUE(moved.ok()) << moved.message();
  EXPECT_TRUE(*moved);
  EXPECT_TRUE(sfs::is_directory(rootfs_ + "/out/train/2"));
  EXPECT_FALSE(sfs::exists(rootfs_ + "/out/.spare-1"));

  // `1` exists (with a model in it): nothing moved, nothing replaced.
  const FileId id2 = made(".spare-2");
  moved = train->MoveDirHere(out, ".spare-2", id2, "1");
  ASSERT_TRUE(moved.ok()) << moved.message();
  EXPECT_FALSE(*moved);
  EXPECT_EQ(Slurp(rootfs_ + "/out/train/1/model.pb"), "model");
  EXPECT_TRUE(sfs::is_directory(rootfs_ + "/out/.spare-2"));
  // Gone from where it was: nothing moved either.
  moved = train->MoveDirHere(out, ".no-such-spare", id2, "3");
  ASSERT_TRUE(moved.ok());
  EXPECT_FALSE(*moved);

  // Swapped for a link to a host directory: moved (a rename moves the link itself), refused, and
  // the link is never followed.
  ASSERT_EQ(::rmdir((rootfs_ + "/out/.spare-2").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.c_str(), (rootfs_ + "/out/.spare-2").c_str()), 0);
  moved = train->MoveDirHere(out, ".spare-2", id2, "4");
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.message(),
            rootfs_ + "/out/train/4: the directory moved here was replaced " + "before the move");
  EXPECT_FALSE(train->Sub("4", false).ok());
  EXPECT_EQ(Slurp(outside_ + "/secret"), "host secret");
}

TEST_P(ConfinedTest, ReplaceRefusesNamesThatAreNotOneComponent) {
  Dir out = Out();
  auto noop = [](int, const std::string&) { return Status::Ok(); };
  for (const char* n : {"", ".", "..", "a/b", "../x"}) {
    EXPECT_FALSE(out.Replace(n, -1, noop).ok()) << n;
  }
}

TEST_P(ConfinedTest, CopyIntoCopiesFromTheOpenedFd) {
  Dir out = Out();
  auto src = out.OpenFile("train/1/model.pb");
  ASSERT_TRUE(src.ok());
  // The name now points elsewhere: the copy still reads what was opened.
  ASSERT_EQ(::rename((rootfs_ + "/out/train/1/model.pb").c_str(),
                     (rootfs_ + "/out/train/1/moved").c_str()),
            0);
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (rootfs_ + "/out/train/1/model.pb").c_str()),
            0);
  auto dst = Dir::OpenHost(rootfs_, "/deploy", true);
  ASSERT_TRUE(dst.ok()) << dst.message();
  auto id = CopyInto(*src, *dst, "model.pb");
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_EQ(Slurp(rootfs_ + "/deploy/model.pb"), "model");
}

TEST_P(ConfinedTest, RemoveFileIfRemovesOnlyTheFileItNames) {
  Dir out = Out();
  auto id =
      out.Replace("a", -1, [](int fd, const std::string& p) { return WriteAllAt(fd, 0, "x", p); });
  ASSERT_TRUE(id.ok());
  Put(rootfs_ + "/out/b", "someone else's");
  EXPECT_FALSE(out.RemoveFileIf("b", *id).ok());
  EXPECT_TRUE(sfs::exists(rootfs_ + "/out/b"));
  // A link planted under the recorded name is not followed, and not removed.
  ASSERT_EQ(::rename((rootfs_ + "/out/a").c_str(), (rootfs_ + "/out/a2").c_str()), 0);
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (rootfs_ + "/out/a").c_str()), 0);
  EXPECT_FALSE(out.RemoveFileIf("a", *id).ok());
  EXPECT_TRUE(sfs::exists(outside_ + "/secret"));
  ASSERT_EQ(::unlink((rootfs_ + "/out/a").c_str()), 0);
  ASSERT_EQ(::rename((rootfs_ + "/out/a2").c_str(), (rootfs_ + "/out/a").c_str()), 0);
  EXPECT_TRUE(out.RemoveFileIf("a", *id).ok());
  EXPECT_FALSE(sfs::exists(rootfs_ + "/out/a"));
  EXPECT_TRUE(out.RemoveFileIf("a", *id).ok());  // gone already: ok
}

// A file deleted and another made may be given the freed inode number (a fresh ext4 does): the
// birth time recorded with the first tells the later file, which is not removed as the LC's own.
// A record without a birth time (written by an older LC) is told by dev/ino alone.
TEST_P(ConfinedTest, RemoveFileIfTellsALaterFileByItsBirthTime) {
  Dir out = Out();
  auto id =
      out.Replace("a", -1, [](int fd, const std::string& p) { return WriteAllAt(fd, 0, "x", p); });
  ASSERT_TRUE(id.ok()) << id.message();
  auto st = out.Lstat("a");
  ASSERT_TRUE(st.ok() && *st) << st.message();
  if ((*st)->birth_ns == 0) GTEST_SKIP() << "this filesystem keeps no birth times";
  EXPECT_EQ(id->birth_ns, (*st)->birth_ns) << "Replace returns the file's birth time";
  FileId later = *id;
  later.birth_ns += 1;
  EXPECT_FALSE(out.RemoveFileIf("a", later).ok());
  EXPECT_TRUE(sfs::exists(rootfs_ + "/out/a"));
  EXPECT_TRUE(out.RemoveFileIf("a", FileId{.dev = id->dev, .ino = id->ino}).ok());
  EXPECT_FALSE(sfs::exists(rootfs_ + "/out/a"));
}

TEST_P(ConfinedTest, OpenHostResolvesHostLinksAgainstTheRootfs) {
  // On the host, /data -> /mnt/data (absolute): under the rootfs that is <rootfs>/mnt/data, not
  // this machine's /mnt/data.
  sfs::create_directories(rootfs_ + "/mnt/data");
  Put(rootfs_ + "/mnt/data/index.txt", "host index");
  ASSERT_EQ(::symlink("/mnt/data", (rootfs_ + "/data").c_str()), 0);
  auto d = Dir::OpenHost(rootfs_, "/data", false);
  ASSERT_TRUE(d.ok()) << d.message();
  auto f = d->OpenFile("index.txt");
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(ReadAll(*f), "host index");
}

TEST_P(ConfinedTest, OpenHostNeverClimbsAboveTheRootfs) {
  // A link to "../../outside" from the rootfs's top stays at the rootfs's "/".
  ASSERT_EQ(::symlink("../../../outside", (rootfs_ + "/up").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.c_str(), (rootfs_ + "/abs").c_str()), 0);
  auto up = Dir::OpenHost(rootfs_, "/up", false);
  EXPECT_FALSE(up.ok());  // <rootfs>/outside does not exist
  auto abs = Dir::OpenHost(rootfs_, "/abs", false);
  EXPECT_FALSE(abs.ok());  // <rootfs>/tmp/confined-.../outside does not exist
  EXPECT_FALSE(Dir::OpenHost(rootfs_, "/../../outside", false).ok());
}

// Links with ".." on the way end where the host's would, the rootfs's "/" never climbed above,
// whichever resolver takes the path (openat2's RESOLVE_IN_ROOT or the walk).
TEST_P(ConfinedTest, OpenHostTakesDotDotInLinksAsTheHostDoes) {
  sfs::create_directories(rootfs_ + "/mnt/real/out");
  sfs::create_directories(rootfs_ + "/deep/er");
  Put(rootfs_ + "/mnt/real/out/mark", "real");
  ASSERT_EQ(::symlink("mnt/./real/../real/out", (rootfs_ + "/lnk").c_str()), 0);
  ASSERT_EQ(::symlink("../../../../mnt/real/out", (rootfs_ + "/deep/er/up").c_str()), 0);
  ASSERT_EQ(::symlink("/deep/er/up", (rootfs_ + "/chain").c_str()), 0);
  // The same absolute name on this machine (outside the rootfs) and under the rootfs.
  sfs::create_directories(outside_ + "/x");
  Put(outside_ + "/x/mark", "outside");
  sfs::create_directories(rootfs_ + outside_);
  ASSERT_EQ(::symlink("/mnt/real/out", (rootfs_ + outside_ + "/x").c_str()), 0);
  ASSERT_EQ(::symlink((outside_ + "/x").c_str(), (rootfs_ + "/abs").c_str()), 0);
  for (const char* host : {"/lnk", "/deep/er/up", "/chain", "/deep/../lnk", "/abs"}) {
    auto d = Dir::OpenHost(rootfs_, host, false);
    ASSERT_TRUE(d.ok()) << host << ": " << d.message();
    auto f = d->OpenFile("mark");
    ASSERT_TRUE(f.ok()) << host << ": " << f.message();
    EXPECT_EQ(ReadAll(*f), "real") << host;
  }
}

TEST_P(ConfinedTest, OpenHostStopsOnALinkLoop) {
  ASSERT_EQ(::symlink("/b", (rootfs_ + "/a").c_str()), 0);
  ASSERT_EQ(::symlink("/a", (rootfs_ + "/b").c_str()), 0);
  auto d = Dir::OpenHost(rootfs_, "/a", false);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find("symbolic links"), std::string::npos) << d.message();
}

TEST_P(ConfinedTest, OpenHostCreatesWhatIsMissing) {
  auto d = Dir::OpenHost(rootfs_, "/new/out/dir", true);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(sfs::is_directory(rootfs_ + "/new/out/dir"));
}

// A Dataset's index ([D:I21]): the operator's host path, its own name a link as hosts often
// have it, taken as the host takes it and never above the rootfs; only a regular file is opened.
TEST_P(ConfinedTest, OpenHostFileTakesHostLinksAndNeverLeavesTheRootfs) {
  sfs::create_directories(rootfs_ + "/mnt/data");
  Put(rootfs_ + "/mnt/data/index-v2.txt", "host index");
  ASSERT_EQ(::symlink("/mnt/data", (rootfs_ + "/data").c_str()), 0);
  ASSERT_EQ(::symlink("index-v2.txt", (rootfs_ + "/mnt/data/index.txt").c_str()), 0);
  auto f = OpenHostFile(rootfs_, "/data/index.txt");
  ASSERT_TRUE(f.ok()) << f.message();
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ(ReadAll(**f), "host index");
  EXPECT_EQ((*f)->path, rootfs_ + "/data/index.txt");

  // A link at the index's name that climbs, or points at an absolute path: from the rootfs, never
  // this machine's file (<rootfs>/... does not exist: missing, as an index not yet written).
  ASSERT_EQ(::symlink(("../../../../../../.." + outside_ + "/secret").c_str(),
                      (rootfs_ + "/mnt/data/up.txt").c_str()),
            0);
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (rootfs_ + "/mnt/data/abs.txt").c_str()), 0);
  for (const char* name : {"/data/up.txt", "/data/abs.txt"}) {
    auto r = OpenHostFile(rootfs_, name);
    ASSERT_TRUE(r.ok()) << name << ": " << r.message();
    EXPECT_FALSE(r->has_value()) << name << " opened " << (*r)->path;
  }
  // The same link target present under the rootfs is what is read.
  sfs::create_directories(rootfs_ + outside_);
  Put(rootfs_ + outside_ + "/secret", "rootfs copy");
  auto abs = OpenHostFile(rootfs_, "/data/abs.txt");
  ASSERT_TRUE(abs.ok() && abs->has_value()) << abs.message();
  EXPECT_EQ(ReadAll(**abs), "rootfs copy");

  EXPECT_FALSE(OpenHostFile(rootfs_, "/data/none.txt").value().has_value());
  EXPECT_FALSE(OpenHostFile(rootfs_, "/nodir/index.txt").value().has_value());
  EXPECT_FALSE(OpenHostFile(rootfs_, "/data/index-v2.txt/x").value().has_value());
}

TEST_P(ConfinedTest, OpenHostFileOpensNothingButARegularFile) {
  ASSERT_EQ(::mkfifo((rootfs_ + "/out/fifo").c_str(), 0644), 0);
  auto fifo = OpenHostFile(rootfs_, "/out/fifo");  // never blocks: it is not opened
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.message().find(rootfs_ + "/out/fifo: is a FIFO, not a regular file"),
            std::string::npos)
      << fifo.message();
  auto dir = OpenHostFile(rootfs_, "/out/train");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.message().find("is a directory"), std::string::npos) << dir.message();
  EXPECT_FALSE(OpenHostFile(rootfs_, "/").ok());
  EXPECT_FALSE(OpenHostFile(rootfs_, "relative/index.txt").ok());
  ASSERT_EQ(::symlink("/b", (rootfs_ + "/a").c_str()), 0);
  ASSERT_EQ(::symlink("/a", (rootfs_ + "/b").c_str()), 0);
  auto loop = OpenHostFile(rootfs_, "/a");
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.message().find("symbolic links"), std::string::npos) << loop.message();
}

TEST_P(ConfinedTest, APathOfManyComponentsIsRefusedNotRecursedOn) {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "/a";
  EXPECT_FALSE(Out().OpenFile(deep.substr(1)).ok());
  EXPECT_FALSE(Dir::OpenHost(rootfs_, deep, false).ok());
  EXPECT_FALSE(CheckPathBounds(deep, "model url").ok());
}

TEST_P(ConfinedTest, ASwapRaceNeverYieldsTheOutsideFile) {
  // A writer swaps train/1/model.pb between the regular file and a link to the host secret
  // (renameat2 RENAME_EXCHANGE) as fast as it can; every open either fails or reads the model.
  const std::string dir = rootfs_ + "/out/train/1";
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (dir + "/swap").c_str()), 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop.load()) {
      ::renameat2(AT_FDCWD, (dir + "/model.pb").c_str(), AT_FDCWD, (dir + "/swap").c_str(),
                  RENAME_EXCHANGE);
    }
  });
  Dir out = Out();
  int opened = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    auto f = out.OpenFile("train/1/model.pb");
    if (!f.ok()) {
      ++refused;
      continue;
    }
    ++opened;
    ASSERT_EQ(ReadAll(*f), "model");
  }
  stop = true;
  swapper.join();
  EXPECT_GT(opened + refused, 0);
}

TEST(ConfinedPaths, RelativeBeneathIsLexical) {
  EXPECT_EQ(RelativeBeneath("/out", "/out/train/1/m.pb"), "train/1/m.pb");
  EXPECT_EQ(RelativeBeneath("/out/", "/out//train/./1/m.pb"), "train/1/m.pb");
  EXPECT_EQ(RelativeBeneath("/out", "/out"), "");
  EXPECT_EQ(RelativeBeneath("/", "/a/b"), "a/b");
  EXPECT_EQ(RelativeBeneath("/out", "/outside/m.pb"), std::nullopt);
  EXPECT_EQ(RelativeBeneath("/out", "/out/../etc/passwd"), std::nullopt);
  EXPECT_EQ(RelativeBeneath("/out", "out/m.pb"), std::nullopt);
  EXPECT_EQ(RelativeBeneath("out", "/out/m.pb"), std::nullopt);
}

TEST(ConfinedPaths, SplitDirName) {
  EXPECT_EQ(SplitDirName("/a/b/c").dir, "/a/b");
  EXPECT_EQ(SplitDirName("/a/b/c").name, "c");
  EXPECT_EQ(SplitDirName("/c").dir, "/");
  EXPECT_EQ(SplitDirName("/c").name, "c");
  EXPECT_EQ(SplitDirName("/a/").name, "");
  EXPECT_EQ(SplitDirName("/").name, "");
}

TEST(ConfinedPaths, CheckPathBounds) {
  EXPECT_TRUE(CheckPathBounds("/out/train/1/model.pb", "url").ok());
  const Status longer = CheckPathBounds(std::string(4097, 'a'), "models[0].url");
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.message().find("models[0].url"), std::string::npos);
  std::string many;
  for (int i = 0; i < 300; ++i) many += "/x";
  EXPECT_FALSE(CheckPathBounds(many, "url").ok());
  EXPECT_FALSE(CheckPathBounds(std::string("/a\0b", 4), "url").ok());
}

}  // namespace
}  // namespace sedna::fs
