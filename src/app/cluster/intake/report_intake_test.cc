// The report intake (report_intake.h) over a real store and journal: a report is in the journal
// before Accept returns (a restart replays it), batches commit before any other event with the
// journal's applied mark, a failed batch holds the events back, and the journal-full paths.
#include "app/cluster/intake/report_intake.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "app/cluster/inbound_queue.h"
#include "app/cluster/part_test_env.h"

namespace sedna::app {
namespace {

using testing::ClusterTestEnv;

PendingReport Report(const std::string& body) {
  PendingReport p;
  p.job_key = "default/incrementallearningjob/j";
  p.incarnation = 1;
  p.message.report.kind = "train";
  p.message.report.status = "completed";
  p.message.report.worker_name = body;  // names the report in the log below
  return p;
}

Config Batched(int64_t batch_ms = 60000) {
  Config c;
  c.report_batch_ms = batch_ms;  // the batch timer never fires within a test
  return c;
}

class ReportIntakeTest : public ::testing::Test {
 protected:
  explicit ReportIntakeTest(Config cfg = Batched()) : env(cfg) { Make(); }

  // The inbound queue and the intake as the composition root wires them; the job runner's part
  // (CommitBatch, StepAlone) is the log below.
  void Make() {
    inbound = std::make_unique<InboundQueue>(
        env.io, InboundQueue::Reports{[this] { return intake->Commit(); },
                                      [this] { return intake->pending(); }});
    intake = std::make_unique<ReportIntake>(
        env.ctx(), *inbound,
        [this](
            std::vector<PendingReport>& reports,
            const std::function<Status(store::Store::Tx&)>& also) -> Result<std::function<void()>> {
          ++attempts;
          if (fail) return Status::Error("database is locked");
          std::string batch = "batch:";
          for (const auto& r : reports)
            batch += (r.job_key.empty() ? "-" : r.message.report.worker_name) + ",";
          Status s = env.store().Transact([&](store::Store::Tx& tx) { return also(tx); });
          if (!s.ok()) return s;
          log.push_back(batch);
          return std::function<void()>([this] { log.push_back("actions"); });
        },
        [this](PendingReport r) {
          log.push_back("alone:" + r.message.report.worker_name);
          return true;
        });
  }
  // A restart: the parts dropped without Stop (as kill -9 leaves them), the store reopened.
  void Kill() {
    intake.reset();
    inbound.reset();
    env.Reopen();
    Make();
  }
  Status Open() {
    return intake->Open(
        [this](const std::string& worker, const std::string& body, std::string* why) {
          recovered.push_back(worker + ":" + body);
          if (body == "gone") {
            *why = "its job was deleted";
            return PendingReport{};
          }
          return Report(body);
        });
  }
  bool Accept(const std::string& body) { return intake->Accept(Report(body), "w", body); }
  std::string Applied() {
    auto v = env.store().GetState(kScopeIntake, "applied");
    EXPECT_TRUE(v.ok()) << v.message();
    return v.ok() && v->has_value() ? **v : "";
  }
  InboundQueue::Event Ev(const std::string& name) {
    return {"", name, [this, name] {
              log.push_back(name + " (pending " + std::to_string(intake->pending()) + ")");
            }};
  }

  ClusterTestEnv env;
  std::unique_ptr<InboundQueue> inbound;
  std::unique_ptr<ReportIntake> intake;
  std::vector<std::string> log;
  std::vector<std::string> recovered;
  int attempts = 0;
  bool fail = false;
};

TEST_F(ReportIntakeTest, AnAcceptedReportIsDurableBeforeItIsCommittedAndARestartReplaysIt) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("r1"));
  ASSERT_TRUE(Accept("r2"));
  EXPECT_EQ(intake->pending(), 2u);
  EXPECT_EQ(attempts, 0);  // acknowledged, not committed
  Kill();
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(recovered, (std::vector<std::string>{"w:r1", "w:r2"}));
  EXPECT_EQ(log, (std::vector<std::string>{"batch:r1,r2,", "actions"}));
  EXPECT_EQ(Applied(), "2");
  EXPECT_TRUE(intake->settled());
  // Committed: the next start replays nothing.
  recovered.clear();
  Kill();
  ASSERT_TRUE(Open().ok());
  EXPECT_TRUE(recovered.empty());
  EXPECT_EQ(attempts, 1);  // the replay's commit only
}

TEST_F(ReportIntakeTest, ARecoveredReportWhoseJobIsGoneIsCommittedAsApplied) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("gone"));
  ASSERT_TRUE(Accept("r2"));
  Kill();
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(log, (std::vector<std::string>{"batch:-,r2,", "actions"}));
  EXPECT_EQ(Applied(), "2");
}

TEST_F(ReportIntakeTest, TheBatchCommitsBeforeTheNextEventWithTheAppliedMark) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("r1"));
  ASSERT_TRUE(Accept("r2"));
  inbound->Add(Ev("frame"));
  EXPECT_EQ(log, (std::vector<std::string>{"batch:r1,r2,", "actions", "frame (pending 0)"}));
  EXPECT_EQ(Applied(), "2");
  ASSERT_TRUE(Accept("r3"));
  inbound->Kick();
  EXPECT_EQ(log.back(), "actions");
  EXPECT_EQ(log[log.size() - 2], "batch:r3,");
  EXPECT_EQ(Applied(), "3");
}

// A batch that cannot commit holds every event back, in order; a new report is refused meanwhile
// (it would be committed ahead of them); only the retry tries again, and then hands them out.
TEST_F(ReportIntakeTest, AFailedBatchHoldsTheEventsBackUntilItsRetryCommits) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("r1"));
  fail = true;
  inbound->Add(Ev("e1"));
  inbound->Add(Ev("e2"));
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(inbound->waiting(), 2u);
  EXPECT_EQ(intake->pending(), 1u);
  EXPECT_FALSE(Accept("r2"));
  EXPECT_FALSE(intake->Commit());  // not due yet: no attempt
  EXPECT_EQ(attempts, 1);
  fail = false;
  // The retry timer (kReportRetry, an asio timer on the system clock) is the awaited event.
  ASSERT_TRUE(env.RunUntil([&] { return inbound->waiting() == 0; }));
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(log,
            (std::vector<std::string>{"batch:r1,", "actions", "e1 (pending 0)", "e2 (pending 0)"}));
  EXPECT_EQ(Applied(), "1");
}

TEST_F(ReportIntakeTest, StopCommitsWhatIsPending) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("r1"));
  intake->Stop();
  EXPECT_EQ(log, (std::vector<std::string>{"batch:r1,", "actions"}));
  Kill();
  ASSERT_TRUE(Open().ok());
  EXPECT_TRUE(recovered.empty());
}

// The journal (2 MiB) full: the batch it holds is committed at once and the report appended to
// the emptied journal.
TEST_F(ReportIntakeTest, AFullJournalCommitsItsBatchAndTakesTheReport) {
  ASSERT_TRUE(Open().ok());
  const std::string big(800 << 10, 'x');
  ASSERT_TRUE(intake->Accept(Report("b1"), "w", big));
  ASSERT_TRUE(intake->Accept(Report("b2"), "w", big));
  EXPECT_TRUE(log.empty());
  ASSERT_TRUE(intake->Accept(Report("b3"), "w", big));
  EXPECT_EQ(log, (std::vector<std::string>{"batch:b1,b2,", "actions"}));
  EXPECT_EQ(intake->pending(), 1u);
  EXPECT_EQ(Applied(), "2");
  EXPECT_EQ(env.ctx().health.journal_error, "");
  // And b3 is in the journal.
  Kill();
  ASSERT_TRUE(Open().ok());
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0].size(), big.size() + 2);
}

// A full journal whose batch cannot commit: the report is refused (the worker retries), not lost.
TEST_F(ReportIntakeTest, AFullJournalWhoseBatchCannotCommitRefusesTheReport) {
  ASSERT_TRUE(Open().ok());
  const std::string big(800 << 10, 'x');
  ASSERT_TRUE(intake->Accept(Report("b1"), "w", big));
  ASSERT_TRUE(intake->Accept(Report("b2"), "w", big));
  fail = true;
  EXPECT_FALSE(intake->Accept(Report("b3"), "w", big));
  EXPECT_EQ(intake->pending(), 2u);
  EXPECT_TRUE(log.empty());
}

// A body larger than the whole journal is stepped alone, after the batch ahead of it.
TEST_F(ReportIntakeTest, ABodyLargerThanTheJournalIsSteppedAloneInOrder) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("r1"));
  ASSERT_TRUE(intake->Accept(Report("huge"), "w", std::string(3 << 20, 'x')));
  EXPECT_EQ(log, (std::vector<std::string>{"batch:r1,", "actions", "alone:huge"}));
  EXPECT_TRUE(intake->settled());
  EXPECT_EQ(env.ctx().health.journal_error, "");  // full is no fault of the volume
}

class ReportIntakeUnbatchedTest : public ReportIntakeTest {
 protected:
  ReportIntakeUnbatchedTest() : ReportIntakeTest(Batched(0)) {}
};

TEST_F(ReportIntakeUnbatchedTest, EachReportIsSteppedAloneBeforeAcceptReturns) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Accept("r1"));
  EXPECT_EQ(log, std::vector<std::string>{"alone:r1"});
  EXPECT_TRUE(intake->settled());
  EXPECT_EQ(attempts, 0);
}

}  // namespace
}  // namespace sedna::app
