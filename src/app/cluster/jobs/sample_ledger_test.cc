// The sample ledger (sample_ledger.h): a pass share splits the new samples into the spools by
// running totals and flushes them; a new index is read from its start; one ingest is in flight at
// a time; bytes not committed are dropped by ResetSpools.
#include "app/cluster/jobs/sample_ledger.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cluster/part_test_env.h"
#include "core/split.h"

namespace sedna::app {
namespace {

using testing::TempDir;

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class SampleLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ledger.Open(dir.path() + "/j.train", dir.path() + "/j.eval", 0, 0).ok());
    ds.ns = "default";
    ds.name = "d1";
    ds.local_path = "/data/index.txt";
  }
  // Runs one share as the dataset pass does: the samples, then its syncs made and finish (on the
  // pool), then apply.
  SampleLedger::IngestDone Pass(const std::vector<std::string>& samples, int64_t seen,
                                double train_prob) {
    SampleLedger::IngestDone out;
    bool applied = false;
    IngestShare share = ledger.Share(ds, "IncrementalLearningJob default/j", seen, train_prob,
                                     [&](const SampleLedger::IngestDone& d, bool) {
                                       out = d;
                                       applied = true;
                                     });
    EXPECT_TRUE(ledger.in_flight());
    for (const auto& s : samples) EXPECT_TRUE(share.member.on_sample(s).ok());
    dataset::Spool::SyncList syncs;
    share.add_syncs(share.member, syncs);
    fs::SyncAll(syncs.items);
    share.finish(share.member, syncs.items);
    share.apply(share.member, false);
    EXPECT_TRUE(applied);
    return out;
  }

  TempDir dir;
  SampleLedger ledger;
  DatasetSource ds;
};

TEST_F(SampleLedgerTest, APassSplitsByRunningTotalsAndFlushes) {
  const SampleLedger::IngestDone d = Pass({"a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg"}, 0, 0.6);
  EXPECT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.seen, 5);
  EXPECT_EQ(d.train_added, core::TrainCountUpTo(0.6, 5));
  EXPECT_EQ(d.train_added + d.eval_added, 5);
  // Every sample is in exactly one spool, durable (flushed) when the share finishes.
  const std::string train = Read(ledger.spool_path(core::il::SpoolKind::kTrain));
  const std::string eval = Read(ledger.spool_path(core::il::SpoolKind::kEval));
  EXPECT_EQ(static_cast<int64_t>(train.size()), d.train_end);
  EXPECT_EQ(static_cast<int64_t>(eval.size()), d.eval_end);
  EXPECT_EQ(train.size() + eval.size(), 5 * std::string("a.jpg\n").size());
}

TEST_F(SampleLedgerTest, TheSplitContinuesFromTheJobsRunningTotal) {
  const SampleLedger::IngestDone d = Pass({"x", "y", "z"}, 7, 0.5);
  EXPECT_EQ(d.seen, 10);
  EXPECT_EQ(d.train_added, core::TrainCountUpTo(0.5, 10) - core::TrainCountUpTo(0.5, 7));
}

TEST_F(SampleLedgerTest, ANewIndexIsReadFromItsStartKeepingTheHeader) {
  ledger.cursor.path = "/data/old.txt";
  ledger.cursor.offset = 1234;
  ledger.cursor.header = "url,label";
  IngestShare share = ledger.Share(ds, "j", 0, 0.5, [](const SampleLedger::IngestDone&, bool) {});
  EXPECT_EQ(share.member.cursor.path, ds.local_path);
  EXPECT_EQ(share.member.cursor.offset, 0);
  EXPECT_EQ(share.member.cursor.header, "url,label");
  ledger.cursor.path = ds.local_path;
  IngestShare same = ledger.Share(ds, "j", 0, 0.5, [](const SampleLedger::IngestDone&, bool) {});
  EXPECT_EQ(same.member.cursor.offset, 1234);
}

TEST_F(SampleLedgerTest, OneIngestInFlightTheOthersAskedForAreHandedBackOnce) {
  EXPECT_FALSE(ledger.in_flight());
  IngestShare share = ledger.Share(ds, "j", 0, 0.5, [](const SampleLedger::IngestDone&, bool) {});
  EXPECT_TRUE(ledger.in_flight());
  ledger.Defer(false);
  ledger.Defer(true);
  const SampleLedger::Again a = ledger.Landed();
  EXPECT_FALSE(ledger.in_flight());
  EXPECT_TRUE(a.again);
  EXPECT_TRUE(a.take_unterminated);
  const SampleLedger::Again none = ledger.Landed();
  EXPECT_FALSE(none.again);
  EXPECT_FALSE(none.take_unterminated);
}

TEST_F(SampleLedgerTest, ResetSpoolsDropsWhatWasNotCommitted) {
  const SampleLedger::IngestDone first = Pass({"a", "b", "c", "d"}, 0, 0.5);
  ledger.Landed();
  // The step that would have committed `first` failed: back to nothing committed.
  ledger.ResetSpools(0, 0);
  const SampleLedger::IngestDone next = Pass({}, first.seen, 0.5);
  EXPECT_EQ(next.train_end, 0);
  EXPECT_EQ(next.eval_end, 0);
  EXPECT_EQ(Read(ledger.spool_path(core::il::SpoolKind::kTrain)), "");
}

// A new job's spool files are created with their entries not yet durable: both are offered to be
// synced ahead; the first pass makes each spool it appended to durable with its data.
TEST_F(SampleLedgerTest, ANewJobsSpoolEntriesAreUnsyncedUntilSyncedAheadOrByItsFirstPass) {
  EXPECT_EQ(ledger.SpoolsWithEntriesUnsynced().size(), 2u);
  const SampleLedger::IngestDone d = Pass({"a", "b", "c", "d"}, 0, 1.0);  // all to train
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ledger.Landed();
  const auto left = ledger.SpoolsWithEntriesUnsynced();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]->path(), ledger.spool_path(core::il::SpoolKind::kEval));
  // Synced ahead (as JobRunner::SyncSpoolEntries does through the kernel's workers).
  auto dir = left[0]->OpenDir();
  ASSERT_TRUE(dir.ok()) << dir.message();
  ASSERT_EQ(::fsync(dir->get()), 0);
  EXPECT_TRUE(left[0]->EntrySynced(0).ok());
  EXPECT_TRUE(ledger.SpoolsWithEntriesUnsynced().empty());
}

}  // namespace
}  // namespace sedna::app
