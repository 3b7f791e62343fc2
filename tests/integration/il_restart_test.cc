// End to end, crash and restart: the real sedna-lc binary against the GM emulator, killed with
// SIGKILL at points of an IL round and restarted on the same database and rootfs. The restarted
// LC must carry on from SQLite ([P:B15]): no second Ready for a stage it already answered ([P:B4]),
// the workers' reports accepted and forwarded, the round numbering and eval models kept ([P:B7],
// [P:B8]), and samples appended while it was down counted exactly once.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "cluster_fixture.h"
#include "il_round_frames.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;

using namespace il_round;  // kIl1 ... kR2Il1, kTrainReport, kEvalReport, kOldModel

// Runs `command` through the shell; returns its exit code and stdout+stderr.
std::pair<int, std::string> RunCommand(const std::string& command) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("popen failed");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// The whitespace-separated fields of the output line that mentions `what`.
std::vector<std::string> RowOf(const std::string& table, const std::string& what) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    if (line.find(what) == std::string::npos) continue;
    std::istringstream f(line);
    std::vector<std::string> fields;
    for (std::string w; f >> w;) fields.push_back(w);
    return fields;
  }
  return {};
}

class IlRestartTest : public IlJobFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-restart-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + "/models/deploy_model/saved_model.pb", kOldModel);
    WriteFile(rootfs + "/data/train_data.txt", "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    StartLc();
  }

  // Round 1 up to IL-1 sent and the GM at (Train, Running), which it re-sends.
  void RunToTrainRunning() {
    gm->Send("insert", DatasetObject());
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    Barrier();  // the job and its initial model are loaded
    AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
    WaitSampleCount(1000);
    UpstreamFrame il1 = NextJob();
    ASSERT_EQ(il1.content, kIl1);
    ASSERT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(1, 1000, 0.8).first);
    job->Report(il1.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Running");
    Sync();
    stdfs::create_directories(rootfs + "/output/train/1");
    WriteFile(rootfs + "/output/train/1/model.pb", "NEW-MODEL-ROUND-1");
  }

  void TrainReportToEvalRunning() {
    EXPECT_EQ(PostWorker("train-worker-h4k9q", kTrainReport), kOk);
    UpstreamFrame il2 = NextJob();
    EXPECT_EQ(il2.content, kIl2) << "a second Train Ready for round 1?";
    job->Report(il2.content);
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame il3 = NextJob();
    EXPECT_EQ(il3.content, kIl3);
    // The eval set of round 1: samples 1..1000 only, whatever arrived since.
    EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.txt"), Split(1, 1000, 0.8).second);
    job->Report(il3.content);
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Eval/Running");
    Sync();
  }

  void FinishDeploy(const UpstreamFrame& il4, const UpstreamFrame& il5) {
    job->Report(il4.content);
    auto actions = job->Report(il5.content);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
    job->SetPod(Stage::kDeploy, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
  }
};

TEST_F(IlRestartTest, KillAfterTrainReadyThenGmResend) {
  RunToTrainRunning();
  Barrier();
  KillAndRestart();
  // Samples written while the LC was down.
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1700));
  // The GM re-sends the job as it is (Train, Running) (§P1.6 resync, §P4.3).
  Sync();
  // Counted once: the first count after the restart is the total.
  auto f = NextDataset("incremental-dataset");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->content, R"({"numberOfSamples":1700})");

  // The worker's report is accepted and forwarded; it is the next job message, so no second
  // Train Ready for round 1 was sent ([P:B4]/B15).
  TrainReportToEvalRunning();
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", kEvalReport), kOk);
  UpstreamFrame il4 = NextJob();
  EXPECT_EQ(il4.content, kIl4);
  UpstreamFrame il5 = NextJob();
  EXPECT_EQ(il5.content, kIl5);
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  FinishDeploy(il4, il5);

  // Round 2 trains on exactly the samples that arrived while the LC was down.
  UpstreamFrame r2 = NextJob();
  EXPECT_EQ(r2.content, kR2Il1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.txt"), Split(1001, 1700, 0.8).first);
  // Nothing else: every job message queued before the barrier's answer has arrived.
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(extra) << extra->content;
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlRestartTest, KillAfterEvalReadyKeepsEvalModels) {
  // [P:B7]/B8: the restarted LC first sees the job in (Eval, Running) and must still decide and
  // deploy from the eval it dispatched before the crash.
  RunToTrainRunning();
  TrainReportToEvalRunning();
  Barrier();
  KillAndRestart();
  Sync();
  Barrier();
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", kEvalReport), kOk);
  UpstreamFrame il4 = NextJob();
  EXPECT_EQ(il4.content, kIl4);
  UpstreamFrame il5 = NextJob();
  EXPECT_EQ(il5.content, kIl5);
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  FinishDeploy(il4, il5);

  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1700));
  WaitSampleCount(1700);
  EXPECT_EQ(NextJob().content, kR2Il1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.txt"), Split(1001, 1700, 0.8).first);
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlRestartTest, KillDuringDeployCopyDeploysOnce) {
  // A large model, so that the kill most likely lands while the copy runs: the restarted LC
  // re-issues the copy; the deploy target is never torn; Deploy Ready is sent once.
  RunToTrainRunning();
  std::string model(64 << 20, '\0');
  for (size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>('a' + i % 23);
  WriteFile(rootfs + "/output/train/1/model.pb", model);
  TrainReportToEvalRunning();
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", kEvalReport), kOk);
  UpstreamFrame il4 = NextJob();
  EXPECT_EQ(il4.content, kIl4);
  lc->Kill();
  const std::string target = ReadFile(rootfs + "/models/deploy_model/saved_model.pb");
  EXPECT_TRUE(target == kOldModel || target == model)
      << "torn deploy target, " << target.size() << " bytes";
  AppendFile(tmp + "/lc.log", "---- SIGKILL; restarting ----\n");
  StartLc();
  UpstreamFrame il5 = NextJob();
  // At-least-once (docs/durability.md): killed right after the GM got IL-4, the LC may not have
  // deleted it from its outbox yet, so the new connection may start with IL-4 once more.
  if (il5.content == kIl4) il5 = NextJob();
  EXPECT_EQ(il5.content, kIl5);
  EXPECT_TRUE(ReadFile(rootfs + "/models/deploy_model/saved_model.pb") == model);
  FinishDeploy(il4, il5);
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1700));
  WaitSampleCount(1700);
  // The next job message is round 2: no second Deploy Ready.
  EXPECT_EQ(NextJob().content, kR2Il1);
  EXPECT_EQ(lc->Stop(), 0);
}

// Worker reports are acknowledged from the intake journal and committed in batches
// (docs/durability.md, "Worker reports"). A window of 60 s keeps the train report uncommitted for
// the length of these tests unless something else commits it: nothing else happens to the job
// before its first trigger tick, 60 s after the (re)start.
constexpr const char* kLongBatch = "60000";

TEST_F(IlRestartTest, ReportAcknowledgedThenKilledIsCommittedOnceAfterRestart) {
  RunToTrainRunning();
  Barrier();
  KillAndRestart(0, {"--report-batch-ms", kLongBatch});
  EXPECT_EQ(PostWorker("train-worker-h4k9q", kTrainReport), kOk);
  lc->Kill();  // acknowledged, in the journal, not in SQLite
  AppendFile(tmp + "/lc.log", "---- SIGKILL; restarting ----\n");
  StartLc();
  EXPECT_NE(lc->Log().find("worker reports: committing 1 acknowledged before the last stop"),
            std::string::npos);
  // Forwarded once, and stepped: Eval Ready names the model the report carried.
  UpstreamFrame il2 = NextJob();
  EXPECT_EQ(il2.content, kIl2);
  job->Report(il2.content);
  job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  EXPECT_EQ(NextJob().content, kIl3);
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(extra) << "extra job frame: " << extra->content;
  // A third start finds nothing left to commit.
  KillAndRestart();
  EXPECT_EQ(lc->Log().find("acknowledged before the last stop"),
            lc->Log().rfind("acknowledged before the last stop"));
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlRestartTest, ReportAcknowledgedIsCommittedByTheNextEventAndAtStop) {
  RunToTrainRunning();
  Barrier();
  KillAndRestart(0, {"--report-batch-ms", kLongBatch});
  EXPECT_EQ(PostWorker("train-worker-h4k9q", kTrainReport), kOk);
  // The GM's next frame for the job commits the report before it is applied: forwarded long
  // before the 60 s window ends.
  Sync();
  EXPECT_EQ(NextJob(std::chrono::seconds(20)).content, kIl2);

  // At a graceful stop the pending batch is committed, not left to the journal.
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", kEvalReport), kOk);
  EXPECT_EQ(lc->Stop(), 0);
  StartLc();
  EXPECT_EQ(lc->Log().find("acknowledged before the last stop"), std::string::npos);
  // Forwarded only: no eval was dispatched (the job is still training).
  EXPECT_EQ(NextJob().content, kIl4);
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlRestartTest, RestartWithoutGmResendReloadsFromSqlite) {
  RunToTrainRunning();
  Barrier();
  lc->Kill();

  // No daemon: `status` reads the database.
  const std::string bin = std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
  auto [code, out] = RunCommand(bin + " status --db " + db + " --status-port 0");
  EXPECT_EQ(code, 0) << out;
  auto row = RowOf(out, "default/helmet-detection-demo");
  ASSERT_GE(row.size(), 5u) << out;
  EXPECT_EQ(row[0], "IL") << out;
  EXPECT_EQ(row[2], "Train/Running") << out;
  EXPECT_EQ(row[3], "2") << out;  // the next train round: round 1 was dispatched
  EXPECT_NE(out.find("1 job(s), from database"), std::string::npos) << out;

  // Restarted, and the GM sends nothing: the job is there (reloaded from SQLite).
  const uint16_t status_port = FreePort();
  AppendFile(tmp + "/lc.log", "---- SIGKILL; restarting ----\n");
  StartLc(status_port);
  EXPECT_EQ(PostWorker("train-worker-h4k9q", kTrainReport), kOk);
  EXPECT_EQ(NextJob().content, kIl2);
  auto [code2, live] =
      RunCommand(bin + " status --db " + db + " --status-port " + std::to_string(status_port));
  EXPECT_EQ(code2, 0) << live;
  row = RowOf(live, "default/helmet-detection-demo");
  ASSERT_GE(row.size(), 5u) << live;
  EXPECT_EQ(row[2], "Train/Running") << live;
  EXPECT_EQ(row[3], "2") << live;
  EXPECT_NE(live.find("1 job(s), from live daemon"), std::string::npos) << live;
  EXPECT_NE(lc->Log().find("resumed at round 2"), std::string::npos);
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
