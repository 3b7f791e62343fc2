#include "adapters/store/intake_journal.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "adapters/store/crc32.h"

namespace sedna::store {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kDb = 0x1234;

class IntakeJournalTest : public ::testing::Test {
 protected:
  IntakeJournalTest() {
    std::string tmpl = (fs::temp_directory_path() / "intake_test.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    path_ = (dir_ / "db-intake").string();
  }
  ~IntakeJournalTest() override { fs::remove_all(dir_); }

  std::unique_ptr<IntakeJournal> Open(uint64_t identity = kDb, size_t capacity = 4096) {
    auto j = IntakeJournal::Open(path_, identity, capacity);
    EXPECT_TRUE(j.ok()) << j.message();
    return j.ok() ? std::move(*j) : nullptr;
  }
  // Overwrites one byte of the file, as a torn or corrupted page would.
  void PokeByte(size_t offset, char value) {
    int fd = ::open(path_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &value, 1, static_cast<off_t>(offset)), 1);
    ::close(fd);
  }

  fs::path dir_;
  std::string path_;
};

IntakeEntry E(uint64_t seq, std::string worker, std::string body) {
  return {seq, std::move(worker), std::move(body)};
}

TEST_F(IntakeJournalTest, EntriesSurviveReopenInAppendOrder) {
  {
    auto j = Open();
    EXPECT_THAT(j->Recover(0), IsEmpty());
    EXPECT_EQ(*j->Append("w1", R"({"a":1})"), 1u);
    EXPECT_EQ(*j->Append("w2", ""), 2u);
    EXPECT_EQ(*j->Append("", "body"), 3u);
    EXPECT_EQ(j->used(), 32u + 24u + 24u);  // 16-byte entry header, 4-byte name length, 8-aligned
  }
  auto j = Open();
  EXPECT_THAT(j->Recover(0),
              ElementsAre(E(1, "w1", R"({"a":1})"), E(2, "w2", ""), E(3, "", "body")));
  // Appends go on after the recovered entries, with the next number.
  EXPECT_EQ(*j->Append("w4", "x"), 4u);
  j.reset();
  EXPECT_EQ(Open()->Recover(2), std::vector<IntakeEntry>({E(3, "", "body"), E(4, "w4", "x")}));
}

// The format before CRC-32C (SEDNAIJ1, entries checked with CRC-32), as a previous version left
// it after a kill: its entries are recovered, appended to in its format while it holds entries,
// and the file starts over in the new format.
TEST_F(IntakeJournalTest, AJournalOfTheFormatBeforeCrc32cIsRecoveredThenRewritten) {
  std::string file(4096, '\0');
  std::memcpy(file.data(), "SEDNAIJ1", 8);
  const uint64_t db = kDb;
  std::memcpy(file.data() + 8, &db, 8);
  size_t pos = 64;
  for (uint64_t seq : {7, 8}) {
    const std::string worker = "w" + std::to_string(seq),
                      body = R"({"n":)" + std::to_string(seq) + "}";
    std::string payload(4, '\0');
    const auto wlen = static_cast<uint32_t>(worker.size());
    std::memcpy(payload.data(), &wlen, 4);
    payload += worker + body;
    char s[8];
    std::memcpy(s, &seq, 8);
    const uint32_t crc = Crc32(Crc32(0, s, 8), payload.data(), payload.size());
    const auto len = static_cast<uint32_t>(payload.size());
    std::memcpy(file.data() + pos, &len, 4);
    std::memcpy(file.data() + pos + 4, &crc, 4);
    std::memcpy(file.data() + pos + 8, &seq, 8);
    std::memcpy(file.data() + pos + 16, payload.data(), payload.size());
    pos += (16 + payload.size() + 7) / 8 * 8;
  }
  {
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));
    ::close(fd);
  }
  auto header = [&] {
    std::string h(8, '\0');
    int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_EQ(::pread(fd, h.data(), 8, 0), 8);
    ::close(fd);
    return h;
  };
  {
    auto j = Open();
    EXPECT_THAT(j->Recover(6), ElementsAre(E(7, "w7", R"({"n":7})"), E(8, "w8", R"({"n":8})")));
    EXPECT_EQ(*j->Append("w9", "x"), 9u);  // still in the old format: it holds entries
  }
  EXPECT_EQ(header(), "SEDNAIJ1");
  {
    auto j = Open();
    EXPECT_THAT(j->Recover(7), ElementsAre(E(8, "w8", R"({"n":8})"), E(9, "w9", "x")));
    j->Reset();  // all committed: the file starts over, in the new format
    EXPECT_EQ(header(), "SEDNAIJ2");
    EXPECT_EQ(*j->Append("w10", "y"), 10u);
  }
  EXPECT_THAT(Open()->Recover(9), ElementsAre(E(10, "w10", "y")));
}

TEST_F(IntakeJournalTest, EntriesSurviveKill9) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto j = IntakeJournal::Open(path_, kDb, 4096);
    if (!j.ok()) ::_exit(2);
    (*j)->Recover(0);
    if (!(*j)->Append("w", "one").ok() || !(*j)->Append("w", "two").ok()) ::_exit(3);
    ::raise(SIGKILL);  // no munmap, no close
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_THAT(Open()->Recover(0), ElementsAre(E(1, "w", "one"), E(2, "w", "two")));
}

TEST_F(IntakeJournalTest, RecoverReturnsOnlyEntriesAfterApplied) {
  auto j = Open();
  j->Recover(0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(j->Append("w", std::to_string(i)).ok());
  j.reset();
  j = Open();
  EXPECT_THAT(j->Recover(4), IsEmpty());
  EXPECT_EQ(j->used(), 0u);  // all applied: appends start over
  EXPECT_EQ(j->next_seq(), 5u);
}

TEST_F(IntakeJournalTest, NumbersKeepGrowingAcrossResetAndReopen) {
  auto j = Open();
  j->Recover(0);
  ASSERT_TRUE(j->Append("w", "a").ok());
  ASSERT_TRUE(j->Append("w", "b").ok());
  j->Reset();
  EXPECT_EQ(j->used(), 0u);
  EXPECT_EQ(*j->Append("w", "c"), 3u);
  j.reset();
  // The committed entries 1 and 2 were overwritten or cut off; 3 is the only one left.
  j = Open();
  EXPECT_THAT(j->Recover(2), ElementsAre(E(3, "w", "c")));
  // The database applied more than the journal holds (it was reset after a commit): numbering
  // continues above what was applied.
  j.reset();
  j = Open();
  EXPECT_THAT(j->Recover(10), IsEmpty());
  EXPECT_EQ(*j->Append("w", "d"), 11u);
}

TEST_F(IntakeJournalTest, StaleEntriesAfterResetAreNotReturned) {
  auto j = Open();
  j->Recover(0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(j->Append("w", "short").ok());
  j->Reset();
  // One longer entry covers the first old one and part of the second.
  ASSERT_TRUE(j->Append("w", std::string(40, 'L')).ok());
  j.reset();
  EXPECT_THAT(Open()->Recover(3), ElementsAre(E(4, "w", std::string(40, 'L'))));
}

TEST_F(IntakeJournalTest, ACorruptEntryEndsRecovery) {
  auto j = Open();
  j->Recover(0);
  ASSERT_TRUE(j->Append("w", "first").ok());
  ASSERT_TRUE(j->Append("w", "second").ok());
  ASSERT_TRUE(j->Append("w", "third").ok());
  j.reset();
  // Entry 2 starts at 64 + 32; its payload starts 16 bytes later. Flip a byte of its body.
  PokeByte(64 + 32 + 16 + 4 + 1 + 2, 'X');
  EXPECT_THAT(Open()->Recover(0), ElementsAre(E(1, "w", "first")));
}

TEST_F(IntakeJournalTest, AnEntryWithoutItsLengthIsIncomplete) {
  auto j = Open();
  j->Recover(0);
  ASSERT_TRUE(j->Append("w", "first").ok());
  ASSERT_TRUE(j->Append("w", "second").ok());
  j.reset();
  // A kill before Append's write leaves the slot's length 0 (the Append before zeroed it).
  for (int i = 0; i < 4; ++i) PokeByte(64 + 32 + i, 0);
  auto k = Open();
  EXPECT_THAT(k->Recover(0), ElementsAre(E(1, "w", "first")));
  EXPECT_EQ(*k->Append("w", "again"), 2u);  // the unfinished number is handed out again
}

TEST_F(IntakeJournalTest, AnEntryAKillCutShortFailsItsCrc) {
  // One write per entry: a kill between two of its pages leaves the length and the first page in
  // place and the rest as it was (here the zeros of a fresh file).
  auto j = Open(kDb, 16384);
  j->Recover(0);
  ASSERT_TRUE(j->Append("w", "first").ok());
  const std::string body(6000, 'b');
  ASSERT_TRUE(j->Append("w", body).ok());
  j.reset();
  const size_t second = 64 + 32;  // its header; the body from second + 16 + 4 + 1
  for (size_t at = 4096; at < second + 16 + 4 + 1 + body.size(); ++at) PokeByte(at, 0);
  auto k = Open(kDb, 16384);
  EXPECT_THAT(k->Recover(0), ElementsAre(E(1, "w", "first")));
  EXPECT_EQ(*k->Append("w", "again"), 2u);
}

TEST_F(IntakeJournalTest, AJournalOfAnotherDatabaseReadsEmpty) {
  {
    auto j = Open(kDb);
    j->Recover(0);
    ASSERT_TRUE(j->Append("w", "old").ok());
  }
  auto j = Open(kDb + 1);
  EXPECT_THAT(j->Recover(0), IsEmpty());
  ASSERT_TRUE(j->Append("w", "new").ok());
  j.reset();
  EXPECT_THAT(Open(kDb + 1)->Recover(0), ElementsAre(E(1, "w", "new")));
  EXPECT_THAT(Open(kDb)->Recover(0), IsEmpty());  // and back: the other identity claimed it
}

TEST_F(IntakeJournalTest, AFullJournalRefusesAndKeepsWhatItHas) {
  auto j = Open(kDb, 256);  // 192 bytes for entries
  j->Recover(0);
  ASSERT_TRUE(j->Append("w", std::string(100, 'a')).ok());  // 16 + 4 + 1 + 100 -> 128
  auto full = j->Append("w", std::string(50, 'b'));         // 71 -> 72: 200 > 192
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.message(), HasSubstr("intake journal full"));
  // The code says so (ReportIntake branches on it), with no errno: not the volume's fault.
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(full.status().errno_value(), 0);
  EXPECT_TRUE(IntakeJournal::IsFull(full.status()));
  EXPECT_EQ(j->next_seq(), 2u);
  j->Reset();
  EXPECT_EQ(*j->Append("w", std::string(50, 'b')), 2u);
  auto never = j->Append("w", std::string(300, 'c'));  // never fits
  ASSERT_FALSE(never.ok());
  EXPECT_TRUE(IntakeJournal::IsFull(never.status()));
  j.reset();
  EXPECT_THAT(Open(kDb, 256)->Recover(1), ElementsAre(E(2, "w", std::string(50, 'b'))));
}

TEST_F(IntakeJournalTest, OpenNamesThePathOnFailure) {
  auto j = IntakeJournal::Open((dir_ / "missing" / "db-intake").string(), kDb, 4096);
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.message(), HasSubstr("intake journal "));
  EXPECT_THAT(j.message(), HasSubstr("missing/db-intake: cannot open"));
}

TEST_F(IntakeJournalTest, OpenRefusesWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo(path_.c_str(), 0644), 0);
  auto j = IntakeJournal::Open(path_, kDb, 4096);  // a FIFO: the open must not block either
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.message(), "intake journal " + path_ + ": not a regular file");
}

// [D:I15.6]: the journal wrote through mapped pages, so a file cut short under it (or a
// failing volume) killed the LC with SIGBUS on the next Append. Run in a child: the old code dies.
// Returns the child's exit code (0: as expected).
int CutUnderTheJournal(const std::string& path) {
  auto j = IntakeJournal::Open(path, kDb, 4096);
  if (!j.ok()) return 2;
  (*j)->Recover(0);
  if (!(*j)->Append("w", "one").ok()) return 3;
  if (::truncate(path.c_str(), 0) != 0) return 4;
  auto r = (*j)->Append("w", "two");  // SIGBUS through a mapping
  // Entry "one" may be gone: the caller must commit it before the journal goes on.
  if (r.ok() || r.message().find("was cut to 0 bytes") == std::string::npos) return 5;
  (*j)->Reset();  // after the commit
  auto again = (*j)->Append("w", "three");
  if (!again.ok() || *again != 2) return 6;
  j->reset();
  auto k = IntakeJournal::Open(path, kDb, 4096);
  if (!k.ok()) return 7;
  return (*k)->Recover(1) == std::vector<IntakeEntry>{E(2, "w", "three")} ? 0 : 8;
}

TEST_F(IntakeJournalTest, AFileCutUnderTheJournalIsAnErrorNotASigbus) {
  EXPECT_EXIT(std::_Exit(CutUnderTheJournal(path_)), ::testing::ExitedWithCode(0), "");
}

// A write that fails (here: beyond RLIMIT_FSIZE with SIGXFSZ ignored, as EIO or EROFS from a
// failing volume would) is an error from Append that changes nothing, and appends work again
// once writes do.
int FailingWrite(const std::string& path) {
  ::signal(SIGXFSZ, SIG_IGN);
  auto j = IntakeJournal::Open(path, kDb, 4096);
  if (!j.ok()) return 2;
  (*j)->Recover(0);
  if (!(*j)->Append("w", "one").ok()) return 3;
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit small{100, old.rlim_max};
  if (::setrlimit(RLIMIT_FSIZE, &small) != 0) return 4;
  auto r = (*j)->Append("w", "two");
  if (r.ok() || r.message() != "intake journal " + path + ": writing: File too large") return 5;
  if ((*j)->next_seq() != 2 || (*j)->used() != 24) return 6;
  if (::setrlimit(RLIMIT_FSIZE, &old) != 0) return 7;
  auto again = (*j)->Append("w", "two");
  if (!again.ok() || *again != 2) return 8;
  j->reset();
  auto k = IntakeJournal::Open(path, kDb, 4096);
  if (!k.ok()) return 9;
  const std::vector<IntakeEntry> want = {E(1, "w", "one"), E(2, "w", "two")};
  return (*k)->Recover(0) == want ? 0 : 10;
}

TEST_F(IntakeJournalTest, AFailingWriteIsAnErrorAndAppendsResumeAfterIt) {
  EXPECT_EXIT(std::_Exit(FailingWrite(path_)), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sedna::store
