// Reports for jobs this LC does not know yet ([D:I23.5]; docs/durability.md, "Reports before
// their job"), on the real sedna-lc binary against the GM emulator: kept up to the per-job and
// total bounds and answered 503 over them, kept across kill -9, applied in arrival order when
// the job arrives, and dropped with a warning naming the job, the worker and the report once they
// are older than --early-report-ttl (also when that falls after a restart).
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "cluster_fixture.h"
#include "objects.h"

namespace sedna::testing {
namespace {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;
constexpr auto npos = std::string::npos;

// A train worker's completed report for IL job `job` (lib/sedna's body); its loss is the number
// after "train-worker-", so that the forwarded copies can be told apart.
std::string TrainReport(const std::string& worker, const std::string& job) {
  const std::string n = worker.substr(worker.rfind('-') + 1);
  return R"({"name": ")" + worker + R"(", "namespace": "default", "ownerName": ")" + job +
         R"(", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": )" +
         n + "}}]}";
}

class EarlyReportsClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-early-");
    stdfs::create_directories(rootfs + "/data");
    WriteFile(rootfs + kIlIndexUrl, "");
    WriteFile(rootfs + kBarrierIndexUrl, "barrier_images/1.jpg 1,1,2,2,1\n");
  }
  void Start(std::vector<std::string> a) {
    args = std::move(a);
    StartLc(0, args);
    gm->Send("insert", DatasetObject());
  }
  HttpResult Post(const std::string& worker, const std::string& job) {
    return HttpRequest(port, "POST", "/sedna/workers/" + worker + "/info",
                       TrainReport(worker, job));
  }
  // The IL job `name` arrives from the GM; when the barrier is answered its arrival (and the
  // release of what was kept for it) has been handled.
  void JobArrives(const std::string& name) {
    IlJobSpec spec;
    spec.name = name;
    GmJob job(core::gm::JobKind::kIncremental, IlJobObject(spec));
    gm->Send("insert", job.Object());
    Barrier();
  }
  // Waits (bounded) for a line the LC logs on a timer of its own.
  bool WaitLog(const std::string& line, std::chrono::seconds timeout = 10s) {
    for (auto until = GmClock::now() + timeout; GmClock::now() < until;) {
      if (lc->Log().find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // In the log of the current run (after the last restart marker).
  size_t Find(const std::string& s) const {
    const std::string log = lc->Log();
    const size_t restart = log.rfind("---- SIGKILL; restarting ----");
    return log.find(s, restart == npos ? 0 : restart);
  }

  std::vector<std::string> args;
};

// With the default bounds: two reports for a job not known yet are answered 200, survive kill -9,
// and are applied in arrival order, once, when the job arrives (before: "message for unknown ...
// dropped").
TEST_F(EarlyReportsClusterTest, KeptAcrossKill9_AppliedInOrderWhenTheJobArrives) {
  Start({});
  EXPECT_EQ(Post("train-worker-1", "ghost-a").status, 200);
  EXPECT_EQ(Post("train-worker-2", "ghost-a").status, 200);
  KillAndRestart(0, args);
  JobArrives("ghost-a");
  const size_t first = Find("worker train-worker-1 reported train completed");
  const size_t second = Find("worker train-worker-2 reported train completed");
  ASSERT_NE(first, npos) << lc->Log();
  ASSERT_NE(second, npos);
  EXPECT_LT(first, second) << "applied in arrival order";
  // Forwarded upstream once each, in order.
  std::vector<std::string> losses;
  while (auto f = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(1000))) {
    if (f->content.find("\"loss\":1}") != npos) losses.push_back("1");
    if (f->content.find("\"loss\":2}") != npos) losses.push_back("2");
  }
  EXPECT_EQ(losses, (std::vector<std::string>{"1", "2"}));
}

// (c) Per job at most --early-reports-per-job, in total at most --early-reports-max: a report over
// either is answered 503 naming the flag (lib/sedna retries), and no kept one is evicted. The kept
// ones survive kill -9; when a job arrives its reports are applied in arrival order and their room
// is free again.
TEST_F(EarlyReportsClusterTest, BoundsPerJobAndInTotal_503OverThem_KeptAcrossKill9) {
  Start({"--early-reports-per-job", "2", "--early-reports-max", "3"});
  EXPECT_EQ(Post("train-worker-1", "ghost-a").status, 200);
  EXPECT_EQ(Post("train-worker-2", "ghost-a").status, 200);
  HttpResult r = Post("train-worker-3", "ghost-a");
  EXPECT_EQ(r.status, 503) << r.raw;
  EXPECT_NE(r.body.find("--early-reports-per-job"), npos) << r.body;
  EXPECT_EQ(Post("train-worker-4", "ghost-b").status, 200);
  r = Post("train-worker-5", "ghost-c");
  EXPECT_EQ(r.status, 503) << r.raw;
  EXPECT_NE(r.body.find("--early-reports-max"), npos) << r.body;
  EXPECT_NE(Find("worker train-worker-5: train completed report for "
                 "default/incrementallearningjob/ghost-c, a job this LC does not know yet, "
                 "refused with 503"),
            npos);

  KillAndRestart(0, args);
  EXPECT_NE(Find("3 worker report(s) kept before their job arrived, for 2 job(s), from the last "
                 "run"),
            npos);
  EXPECT_EQ(Post("train-worker-6", "ghost-c").status, 503) << "the bound counts the kept ones";

  JobArrives("ghost-a");
  const size_t first = Find("worker train-worker-1 reported train completed");
  const size_t second = Find("worker train-worker-2 reported train completed");
  ASSERT_NE(first, npos);
  ASSERT_NE(second, npos);
  EXPECT_LT(first, second) << "applied in arrival order";
  EXPECT_EQ(Find("worker train-worker-3 reported"), npos) << "the refused one was not kept";
  EXPECT_NE(Find("default/incrementallearningjob/ghost-a: 2 worker report(s) kept before the "
                 "job arrived applied"),
            npos);
  EXPECT_EQ(Post("train-worker-7", "ghost-c").status, 200) << "ghost-a's room is free again";
  // Applied once: a restart applies nothing again.
  KillAndRestart(0, args);
  EXPECT_NE(Find("2 worker report(s) kept before their job arrived, for 2 job(s), from the last "
                 "run"),
            npos);
  Barrier();
  EXPECT_EQ(Find("worker train-worker-1 reported"), npos);
}

// (d) A report kept longer than --early-report-ttl is dropped with a warning naming the job, the
// worker, the report and why; the ttl counts from its arrival, also across kill -9; a job arriving
// later gets nothing.
TEST_F(EarlyReportsClusterTest, ExpiredReportsAreLoggedAndNeverApplied_AlsoAcrossKill9) {
  Start({"--early-report-ttl", "1"});
  EXPECT_EQ(Post("train-worker-1", "ghost-a").status, 200);
  EXPECT_NE(Find("worker train-worker-1: train completed report for "
                 "unknown incrementallearningjob default/ghost-a kept until this LC has the job"),
            npos);
  KillAndRestart(0, args);  // expires in the new process, a second after it arrived
  ASSERT_TRUE(
      WaitLog("default/incrementallearningjob/ghost-a: the train completed report of "
              "worker train-worker-1 expired after "))
      << lc->Log();
  EXPECT_NE(Find("this LC never received the job (--early-report-ttl 1 s); dropped"), npos);
  // And one kept in this run expires too.
  EXPECT_EQ(Post("train-worker-2", "ghost-b").status, 200);
  ASSERT_TRUE(
      WaitLog("default/incrementallearningjob/ghost-b: the train completed report of "
              "worker train-worker-2 expired after "));
  JobArrives("ghost-a");
  JobArrives("ghost-b");
  EXPECT_EQ(Find("reported train completed"), npos) << "an expired report was applied";
  EXPECT_EQ(Find("kept before the job arrived applied"), npos);
}

}  // namespace
}  // namespace sedna::testing
