// End to end, [D:I21]: what a worker can do to the LC with one request or with write access to
// its own output directory. The real sedna-lc binary against the GM emulator, one IL job:
//   * a train report whose model URL has ~1,900 components is a 400 naming the field, and the LC
//     keeps running (it recursed once per component on the loop thread and died of SIGSEGV);
//   * data/train/N or data/eval/N replaced by a link to a foreign directory before the LC writes
//     the round's samples: nothing is written through it, the write fails naming the path;
//   * train/N/model.pb swapped with a link to a file outside the rootfs (RENAME_EXCHANGE, in a
//     loop) while the LC deploys it: the deployed model is never the outside file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cluster_fixture.h"
#include "core/split.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kOldModel = "OLD-DEPLOYED-MODEL";
constexpr const char* kOutside = "OUTSIDE-THE-ROOTFS-SECRET";

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string Report(const std::string& worker, const std::string& kind, const std::string& results) {
  return R"({"name": ")" + worker + R"(", "namespace": "default", "ownerName": ")" + kIlJobName +
         R"(", "ownerKind": "incrementallearningjob", "kind": ")" + kind +
         R"(", "status": "completed", "results": )" + results + "}";
}

std::string TrainResults(const std::string& model_url) {
  return R"([{"format": "pb", "url": ")" + model_url + R"(", "metrics": {"loss": 0.5}}])";
}

// The eval report that makes the LC deploy `trained` (precision_delta[0] > 0.1).
std::string EvalResults(const std::string& trained) {
  return R"([{"format": "pb", "url": ")" + trained +
         R"(", "metrics": {"recall": [0.77, 0.70], "precision": [0.81, 0.74]}}, {"format": "pb", "url": ")" +
         kDeployModelUrl + R"(", "metrics": {"recall": [0.62, 0.66], "precision": [0.66, 0.71]}}])";
}

class IlConfinedTest : public IlJobFixture {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    MakeWorld("sedna-confined-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + kDeployModelUrl, kOldModel);
    WriteFile(rootfs + "/data/train_data.txt", "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    // Outside the rootfs: what a link planted by a worker points at.
    outside = tmp + "/outside";
    stdfs::create_directories(outside);
    WriteFile(outside + "/data.txt", "FOREIGN");
    WriteFile(outside + "/secret.pb", kOutside);
    status_port = FreePort();
    StartLc(status_port, {"--deploy-wait", "0.02"});  // the decision soon after the eval report
    gm->Send("insert", DatasetObject());
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    Barrier();
  }

  UpstreamFrame Next() {
    auto f = gm->Next("IncrementalLearningJob");
    if (!f) throw std::runtime_error("no IncrementalLearningJob message from the LC");
    return *f;
  }

  HttpResult Post(const std::string& name, const std::string& body) {
    return HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", body);
  }

  // /healthz answers 200; if it does not, the LC's exit (awaited: it is dead or dying) is the
  // failure, with its signal (SIGSEGV was [D:I21]'s deep model URL).
  void ExpectAlive() {
    HttpResult h = HttpRequest(status_port, "GET", "/healthz", "", {}, 0);
    if (h.status == 200) return;
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(lc->pid()), &info, WEXITED | WNOWAIT), 0);
    ADD_FAILURE() << "sedna-lc is gone: "
                  << (info.si_code == CLD_EXITED ? "exit code " : "killed by signal ")
                  << info.si_status << " (" << ::strsignal(info.si_status) << ")";
  }

  // The job's lastError in /status once it contains `needle` (the write fails on the pool, after
  // the trigger; /status is the LC's own view). Fails the test after 10 s.
  std::string AwaitLastError(const std::string& needle) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
      HttpResult r = HttpRequest(status_port, "GET", "/status", "", {}, 0);
      auto s = Json::parse(r.body, nullptr, false);
      if (s.is_object() && s["jobs"].is_array() && !s["jobs"].empty()) {
        last = s["jobs"][0].value("lastError", "");
        if (last.find(needle) != std::string::npos) return last;
      }
      std::this_thread::sleep_for(20ms);  // nothing to wait on from outside: the LC's own view
    }
    ADD_FAILURE() << "no lastError with \"" << needle << "\"; last: " << last;
    return last;
  }

  // Appends `n` index lines from line `next_line` (enough for the train trigger when n >= 700).
  void AddSamples(int n) {
    AppendFile(rootfs + "/data/train_data.txt", Join(IndexLineList(next_line, next_line + n - 1)));
    next_line += n;
  }

  // Round `round`: Train Ready -> the train report of `model_url` (accepted) -> Train pod done
  // -> Eval Ready. Leaves the job at (Eval, Waiting) with the eval pod running.
  void TrainRound(int round, const std::string& model_url, bool eval = true) {
    UpstreamFrame ready = Next();
    ASSERT_NE(ready.content.find("\"outputDir\":\"/output/train/" + std::to_string(round) + "\""),
              std::string::npos)
        << ready.content;
    job->Report(ready.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    Sync();
    ASSERT_EQ(
        Post("train-worker-h4k9q", Report("train-worker-h4k9q", "train", TrainResults(model_url)))
            .body,
        kOk);
    job->Report(Next().content);  // the forwarded train report
    if (!eval) return;
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame eval_ready = Next();
    ASSERT_NE(eval_ready.content.find(R"("phase":"Eval","status":"Ready")"), std::string::npos)
        << eval_ready.content;
    job->Report(eval_ready.content);
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    Sync();
  }

  std::string outside;
  uint16_t status_port = 0;
  int64_t next_line = 1;
};

TEST_F(IlConfinedTest, AModelUrlOfTwoThousandComponentsIs400AndTheLcKeepsRunning) {
  AddSamples(1000);
  WaitSampleCount(1000);
  UpstreamFrame ready = Next();
  job->Report(ready.content);
  job->SetPod(Stage::kTrain, PodPhase::kRunning);
  Sync();
  std::string deep = "/output/train/1";
  for (int i = 0; i < 2200; ++i) deep += "/a";
  deep += "/model.pb";
  const std::string body = Report("train-worker-h4k9q", "train", TrainResults(deep));
  ASSERT_GT(body.size(), 4500u);
  HttpResult r = Post("train-worker-h4k9q", body);
  EXPECT_EQ(r.status, 400) << r.raw.substr(0, 300);
  EXPECT_NE(r.body.find("results[0].url"), std::string::npos) << r.body.substr(0, 300);
  ExpectAlive();
  // The job is unchanged: nothing was forwarded, and a good report still is.
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", 0ms);
  EXPECT_FALSE(extra) << "a refused report was forwarded: " << extra->content.substr(0, 200);
  WriteFile(rootfs + "/output/train/1/model.pb", "MODEL-1");
  EXPECT_EQ(Post("train-worker-h4k9q",
                 Report("train-worker-h4k9q", "train", TrainResults("/output/train/1/model.pb")))
                .body,
            kOk);
  EXPECT_NE(Next().content.find(R"("phase":"train","status":"completed")"), std::string::npos);
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlConfinedTest, ATrainSampleDirReplacedByALinkIsNotWrittenThrough) {
  stdfs::create_directories(rootfs + "/output/data/train");
  stdfs::create_symlink(outside, rootfs + "/output/data/train/1");
  AddSamples(1000);
  WaitSampleCount(1000);
  const std::string err = AwaitLastError("/output/data/train/1");
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  const std::string foreign = ReadFile(outside + "/data.txt");
  EXPECT_TRUE(foreign == "FOREIGN") << "overwritten: " << foreign.substr(0, 120);
  EXPECT_FALSE(stdfs::exists(outside + "/dataIndex.txt"));
  EXPECT_FALSE(gm->Next("IncrementalLearningJob", 0ms)) << "round 1 was dispatched anyway";
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(IlConfinedTest, AnEvalSampleDirReplacedByALinkIsNotWrittenThrough) {
  AddSamples(1000);
  WaitSampleCount(1000);
  WriteFile(rootfs + "/output/train/1/model.pb", "MODEL-1");
  TrainRound(1, "/output/train/1/model.pb", /*eval=*/false);
  stdfs::create_directories(rootfs + "/output/data/eval");
  stdfs::create_symlink(outside, rootfs + "/output/data/eval/1");
  job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  const std::string err = AwaitLastError("/output/data/eval/1");
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  const std::string foreign = ReadFile(outside + "/data.txt");
  EXPECT_TRUE(foreign == "FOREIGN") << "overwritten: " << foreign.substr(0, 120);
  EXPECT_FALSE(gm->Next("IncrementalLearningJob", 0ms)) << "the eval was dispatched anyway";
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

// The race of [D:I21] (4 of 16 rounds deployed the outside file): between the LC's check and its
// open, train/N/model.pb is a link. Now the source is opened once, confined, and copied from its
// fd: each deploy is the round's model, or fails.
TEST_F(IlConfinedTest, SwappingTheTrainedModelWithALinkNeverDeploysTheOutsideFile) {
  constexpr int kRounds = 16;
  int deployed = 0, failed = 0;
  AddSamples(1000);
  WaitSampleCount(1000);
  std::string expected = kOldModel;
  for (int round = 1; round <= kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string dir = rootfs + "/output/train/" + std::to_string(round);
    const std::string model = dir + "/model.pb", alt = dir + "/alt";
    const std::string mine = "MODEL-" + std::to_string(round);
    stdfs::create_directories(dir);
    WriteFile(model, mine);
    stdfs::create_symlink(outside + "/secret.pb", alt);
    TrainRound(round, "/output/train/" + std::to_string(round) + "/model.pb");
    if (HasFatalFailure()) return;
    std::atomic<bool> stop{false};
    std::thread swapper([&] {
      while (!stop) {
        ::syscall(SYS_renameat2, AT_FDCWD, model.c_str(), AT_FDCWD, alt.c_str(), RENAME_EXCHANGE);
      }
    });
    const std::string trained = "/output/train/" + std::to_string(round) + "/model.pb";
    HttpResult r =
        Post("eval-worker-2bq7d", Report("eval-worker-2bq7d", "eval", EvalResults(trained)));
    UpstreamFrame forwarded = Next(), decision = Next();
    stop = true;
    swapper.join();
    ASSERT_EQ(r.body, kOk) << r.raw;
    const std::string now = ReadFile(rootfs + kDeployModelUrl);
    ASSERT_NE(now, kOutside) << "round " << round << " deployed the file outside the rootfs";
    if (decision.content.find(R"("phase":"Deploy","status":"Ready")") != std::string::npos) {
      ++deployed;
      expected = mine;
    } else {
      ASSERT_NE(decision.content.find(R"("phase":"Deploy","status":"Failed")"), std::string::npos)
          << decision.content;
      ++failed;
    }
    EXPECT_EQ(now, expected);
    job->Report(forwarded.content);
    job->Report(decision.content);
    if (expected == mine) {
      job->SetPod(Stage::kDeploy, PodPhase::kRunning);
    } else {
      job->SetPod(Stage::kEval, PodPhase::kSucceeded);
    }
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    if (round < kRounds) AddSamples(700);
  }
  std::printf("swap race: %d deployed, %d failed (the source was the link), of %d rounds\n",
              deployed, failed, kRounds);
  ExpectAlive();
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
