// IO faults end to end ([D:I4.5]): the real sedna-lc binary against the GM emulator, with a
// small tmpfs mounted where the LC writes, filled until it has (almost) no space left:
//   - the job's output directory while a round's train data.txt is written;
//   - the deploy target's directory while the trained model is copied over the deployed one;
//   - the sample spool directory (--spool-dir) while new index lines are ingested.
// Each write must fail with an error that names the file, leave the job's state and offsets where
// they were, leave nothing half-written under a name a worker or the GM reads, and be retried (or,
// for the deploy copy, reported as Deploy Failed) so that the job carries on once space is freed.
//
// Needs root (mount(2) of tmpfs); skipped with a reason when mounting is not permitted.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kJobName = "helmet-detection-demo";
constexpr const char* kIl1 =
    R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/models/base_model"}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"},"output":null})";
constexpr const char* kR2Il1 =
    R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/output/train/1"}],"dataURL":"/output/data/train/2/data.txt","outputDir":"/output/train/2"},"output":null})";
// Round 1's reports; ReportFor(round) rewrites the trained model's URLs for later rounds.
constexpr const char* kTrainReport =
    R"({"name": "train-worker-h4k9q", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": 0.8113}}, {"format": "ckpt", "url": "/output/train/1", "metrics": {"loss": 0.8113}}]})";
constexpr const char* kEvalReport =
    R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"recall": [0.77, 0.70], "precision": [0.81, 0.74]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"recall": [0.62, 0.66], "precision": [0.66, 0.71]}}]})";
constexpr const char* kOldModel = "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES";
constexpr const char* kNoSpace = "No space left on device";
constexpr const char* kJobSpoolBase = "default_incrementallearningjob_helmet-detection-demo";

std::string ReportFor(const char* report, int round) {
  std::string s = report;
  const std::string from = "/output/train/1", to = "/output/train/" + std::to_string(round);
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::string Pattern(size_t size, char first, int period) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(first + static_cast<int>(i % period));
  return s;
}

// Names in `dir` (not . and ..), sorted.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

// Hidden ".<name>.tmp-..." files of the atomic writer in `dir`.
std::vector<std::string> TempFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& n : Entries(dir)) {
    if (n.find(".tmp-") != std::string::npos) out.push_back(n);
  }
  return out;
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

int64_t FreeBytes(const std::string& dir) {
  struct statvfs v;
  if (::statvfs(dir.c_str(), &v) != 0) return -1;
  return static_cast<int64_t>(v.f_bavail) * static_cast<int64_t>(v.f_frsize);
}

// A tmpfs mounted on `dir` for the lifetime of the object.
class Tmpfs {
 public:
  // errno of mount(2), 0 on success.
  int Mount(const std::string& dir, const std::string& size) {
    stdfs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0755").c_str()) != 0) {
      return errno;
    }
    dir_ = dir;
    return 0;
  }
  // Writes `dir`/filler until the filesystem is full, then gives back `leave` bytes (whole pages),
  // so that the next writer gets that far and then ENOSPC. Returns the filler's path.
  std::string Fill(int64_t leave) {
    const std::string path = dir_ + "/filler";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
    const std::string chunk(64 << 10, 'F');
    int64_t size = 0;
    for (;;) {
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n > 0) {
        size += n;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != ENOSPC) {
        ::close(fd);
        throw std::runtime_error("write " + path + ": " + std::strerror(errno));
      }
      break;
    }
    if (::ftruncate(fd, std::max<int64_t>(0, size - leave)) != 0) {
      ::close(fd);
      throw std::runtime_error("ftruncate " + path + ": " + std::strerror(errno));
    }
    ::close(fd);
    filler_ = path;
    return path;
  }
  void FreeSpace() {
    if (!filler_.empty()) ::unlink(filler_.c_str());
    filler_.clear();
  }
  void Unmount() {
    if (!dir_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
    dir_.clear();
  }
  ~Tmpfs() { Unmount(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, filler_;
};

class IoFaultsTest : public IlJobFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-iofault-");
    lc_binary = LcBinary();
    spool = tmp + "/spool";
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    stdfs::create_directories(spool);
    WriteFile(rootfs + "/data/train_data.txt", "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
    status_port = FreePort();
  }

  // Mounts a tmpfs of `size` on `dir`; false (and the test is skipped) when not permitted.
  bool MountOrSkip(Tmpfs& fs, const std::string& dir, const std::string& size) {
    const int e = fs.Mount(dir, size);
    if (e == EPERM || e == EACCES) {
      skip_reason = "mounting a tmpfs on " + dir + " is not permitted (" + std::strerror(e) +
                    "); these tests need root (CAP_SYS_ADMIN)";
      return false;
    }
    if (e != 0) {
      ADD_FAILURE() << "mount tmpfs on " << dir << ": " << std::strerror(e);
      return false;
    }
    return true;
  }

  // $SEDNA_LC when set (e.g. a patched build), else the sedna-lc of this build.
  static std::string LcBinary() {
    const char* e = std::getenv("SEDNA_LC");
    return e && *e ? e : std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
  }

  void StartLc() { ClusterFixture::StartLc(status_port, {"--spool-dir", spool}); }

  void TearDown() override {
    if (HasFailure() && lc) std::cerr << "---- sedna-lc log ----\n" << lc->Log();
    lc.reset();  // SIGKILL: nothing holds files on the mounts any more
    gm.reset();
    for (Tmpfs* m : {&out_fs, &deploy_fs, &spool_fs}) m->Unmount();
    ClusterFixture::TearDown();  // removes tmp
  }

  // Polls the LC's log until it contains `text` (the log is the LC's only output for an error
  // that sends nothing upstream); false after `timeout`.
  bool WaitLog(const std::string& text, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (lc->Log().find(text) != std::string::npos) return true;
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // The job's entry in GET /status.
  Json StatusOfJob() {
    HttpResult r = HttpRequest(status_port, "GET", "/status", "", {});
    EXPECT_EQ(r.status, 200) << r.raw;
    Json j = Json::parse(r.body, nullptr, false);
    if (!j.is_object()) return Json::object();
    for (const auto& e : j.value("jobs", Json::array())) {
      if (e.value("name", "") == kJobName) return e;
    }
    return Json::object();
  }

  // Polls /status until pred(job) holds; false after `timeout`.
  bool WaitStatus(const std::function<bool(const Json&)>& pred, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (pred(StatusOfJob())) return true;
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Dataset, initial model and job (at Train/Waiting) loaded by the LC.
  void LoadJob(int check_period_seconds = 60) {
    gm->Send("insert", DatasetObject());
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental,
                                  IlJobObject({.check_period_seconds = check_period_seconds}));
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    Barrier();
  }

  // The GM's side of a Train Ready: the train pod runs.
  void AcceptTrainReady(const UpstreamFrame& ready) {
    job->Report(ready.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Running");
    Sync();
  }

  // From (Train, Running) of `round` to (Eval, Running): the train report, the GM's eval stage,
  // Eval Ready.
  void TrainReportToEvalRunning(int round) {
    EXPECT_EQ(PostWorker("train-worker-h4k9q", ReportFor(kTrainReport, round)), kOk);
    UpstreamFrame fwd = NextJob();
    EXPECT_EQ(fwd.body.value("phase", ""), "train") << fwd.content;
    EXPECT_EQ(fwd.body.value("status", ""), "completed") << fwd.content;
    job->Report(fwd.content);
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame ready = NextJob();
    EXPECT_EQ(ready.body.value("phase", ""), "Eval") << ready.content;
    EXPECT_EQ(ready.body.value("status", ""), "Ready") << ready.content;
    job->Report(ready.content);
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Eval/Running");
    Sync();
  }

  std::string spool;
  uint16_t status_port = 0;
  std::string skip_reason;
  Tmpfs out_fs, deploy_fs, spool_fs;
};

// (a) The job's output directory is full when round 1's train data.txt is written.
TEST_F(IoFaultsTest, OutputDirFullWhileWritingTrainData) {
  if (!MountOrSkip(out_fs, rootfs + "/output", "1m")) GTEST_SKIP() << skip_reason;
  StartLc();
  LoadJob();
  const std::string round_dir = rootfs + "/output/data/train/1";
  const std::string data = round_dir + "/data.txt";
  const auto [train, eval] = Split(1, 1000, 0.8);
  // 8 KiB free: the writer gets part of the ~30 KB file out, then ENOSPC.
  out_fs.Fill(8 << 10);
  ASSERT_LT(FreeBytes(out_fs.dir()), static_cast<int64_t>(train.size()));

  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  WaitSampleCount(1000);
  // A clear error naming the file, and a retry announced.
  const std::string error = "writing train samples for round 1 failed: writing " + data + ": " +
                            kNoSpace + "; retrying in 10 s";
  ASSERT_TRUE(WaitLog(error)) << "expected in the log: " << error;
  Barrier();
  // Nothing reached the GM, nothing half-written is visible, the state did not advance.
  auto early = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(early) << "sent before its file was written: " << early->content;
  EXPECT_FALSE(stdfs::exists(data)) << "partial data.txt, " << FileSize(data) << " bytes";
  EXPECT_EQ(TempFiles(round_dir), std::vector<std::string>{}) << "temp file left behind";
  Json st = StatusOfJob();
  EXPECT_EQ(st.value("round", -1), 1) << st.dump();
  EXPECT_EQ(st.value("samplesSeen", -1), 1000) << st.dump();
  EXPECT_EQ(st.value("samplesWaiting", -1),
            static_cast<int64_t>(std::count(train.begin(), train.end(), '\n')))
      << st.dump();
  EXPECT_EQ(st.value("work", ""), "none") << st.dump();
  EXPECT_NE(st.value("lastError", "").find(kNoSpace), std::string::npos) << st.dump();

  // Space comes back: the retry (no new samples, no GM message) writes the whole file, then
  // Train Ready is sent once.
  out_fs.FreeSpace();
  UpstreamFrame il1 = NextJob(std::chrono::seconds(30));
  EXPECT_EQ(il1.content, kIl1);
  EXPECT_EQ(ReadFile(data), train);
  EXPECT_EQ(TempFiles(round_dir), std::vector<std::string>{});
  AcceptTrainReady(il1);
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(extra) << "a second message: " << extra->content;
  EXPECT_EQ(StatusOfJob().value("round", -1), 2);
  EXPECT_EQ(lc->Stop(), 0);
}

// (b) The deploy target's directory is full when the trained model is copied over the deployed
// one. The core answers a failed copy with Deploy Failed (src/core/il_job.cc OnCopied); the GM
// then starts a new round, whose deploy succeeds once there is space. The target is only ever the
// old bytes or the complete new ones.
TEST_F(IoFaultsTest, DeployTargetFullDuringDeployCopy) {
  if (!MountOrSkip(deploy_fs, rootfs + "/models/deploy_model", "8m")) GTEST_SKIP() << skip_reason;
  const std::string target = rootfs + "/models/deploy_model/saved_model.pb";
  WriteFile(target, kOldModel);
  const std::string model1 = Pattern(3 << 20, 'a', 23), model2 = Pattern(3 << 20, 'A', 19);
  // A reader that checks the target all along, as the inference worker would read it.
  std::atomic<bool> stop_reader{false};
  std::atomic<int> reads{0}, torn{0};
  std::string torn_example;
  std::thread reader([&] {
    while (!stop_reader.load()) {
      const std::string t = ReadFile(target);
      if (t != kOldModel && t != model1 && t != model2) {
        if (torn.fetch_add(1) == 0) torn_example = std::to_string(t.size()) + " bytes";
      }
      reads++;
    }
  });
  struct Join {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{stop_reader, reader};

  StartLc();
  LoadJob();
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  ASSERT_EQ(il1.content, kIl1);
  AcceptTrainReady(il1);
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/model.pb", model1);
  TrainReportToEvalRunning(1);

  // 1 MiB free for a 3 MiB model: the copy writes part of its temp file, then ENOSPC.
  deploy_fs.Fill(1 << 20);
  ASSERT_LT(FreeBytes(deploy_fs.dir()), static_cast<int64_t>(model1.size()));
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", kEvalReport), kOk);
  UpstreamFrame il4 = NextJob();
  EXPECT_EQ(il4.body.value("phase", ""), "eval") << il4.content;
  UpstreamFrame failed = NextJob();
  EXPECT_EQ(failed.body.value("phase", ""), "Deploy") << failed.content;
  EXPECT_EQ(failed.body.value("status", ""), "Failed") << failed.content;
  const std::string error =
      "deploy copy /output/train/1/model.pb -> "
      "/models/deploy_model/saved_model.pb failed: writing " +
      target + ": " + kNoSpace;
  EXPECT_NE(lc->Log().find(error), std::string::npos) << "expected in the log: " << error;
  EXPECT_EQ(ReadFile(target), kOldModel);
  EXPECT_EQ(TempFiles(deploy_fs.dir()), std::vector<std::string>{}) << "temp file left behind";
  EXPECT_NE(StatusOfJob().value("lastError", "").find(kNoSpace), std::string::npos);

  // The GM records the failure and goes back to (Train, Waiting) for round 2.
  job->Report(il4.content);
  job->Report(failed.content);
  ASSERT_EQ(job->LastCondition(), "Train/Waiting");
  Sync();
  deploy_fs.FreeSpace();
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1700));
  WaitSampleCount(1700);
  UpstreamFrame r2 = NextJob();
  EXPECT_EQ(r2.content, kR2Il1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.txt"), Split(1001, 1700, 0.8).first);
  AcceptTrainReady(r2);
  stdfs::create_directories(rootfs + "/output/train/2");
  WriteFile(rootfs + "/output/train/2/model.pb", model2);
  TrainReportToEvalRunning(2);
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", ReportFor(kEvalReport, 2)), kOk);
  EXPECT_EQ(NextJob().body.value("phase", ""), "eval");
  UpstreamFrame deployed = NextJob();
  EXPECT_EQ(deployed.body.value("phase", ""), "Deploy") << deployed.content;
  EXPECT_EQ(deployed.body.value("status", ""), "Ready") << deployed.content;
  EXPECT_TRUE(ReadFile(target) == model2) << "deploy target is not round 2's model";
  EXPECT_EQ(TempFiles(deploy_fs.dir()), std::vector<std::string>{});
  stop_reader = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(torn.load(), 0) << "torn deploy target seen by a reader: " << torn_example;
  EXPECT_EQ(lc->Stop(), 0);
}

// (c) The spool directory is full while new index lines are ingested: the spool append fails,
// the job's cursor and counts stay where they were, the spools are cut back to their committed
// length, and the next ingest after space is freed (here: the index grows again) takes every
// sample exactly once.
TEST_F(IoFaultsTest, SpoolDirFullDuringIngest) {
  if (!MountOrSkip(spool_fs, spool, "256k")) GTEST_SKIP() << skip_reason;
  StartLc();
  // checkPeriodSeconds 60: no periodic re-read runs during the checks below (the test does them
  // within a few seconds of loading the job), so the spool sizes seen are the settled ones.
  LoadJob(60);
  const std::string train_spool = spool + "/" + kJobSpoolBase + ".train";
  const std::string eval_spool = spool + "/" + kJobSpoolBase + ".eval";
  ASSERT_EQ(FileSize(train_spool), 0);
  ASSERT_EQ(FileSize(eval_spool), 0);
  spool_fs.Fill(8 << 10);
  ASSERT_LT(FreeBytes(spool_fs.dir()), static_cast<int64_t>(Split(1, 1000, 0.8).first.size()));

  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  // The Dataset's numberOfSamples is the index's line count (§P3.1), reported whatever the jobs
  // do with the lines; the job's own counts are what must not move.
  WaitSampleCount(1000);
  const std::string error = "IncrementalLearningJob default/helmet-detection-demo: ingesting " +
                            rootfs + "/data/train_data.txt: writing " + train_spool + ": " +
                            kNoSpace;
  ASSERT_TRUE(WaitLog(error)) << "expected in the log: " << error;
  Barrier();
  Json st = StatusOfJob();
  EXPECT_EQ(st.value("samplesSeen", -1), 0) << st.dump();
  EXPECT_EQ(st.value("samplesWaiting", -1), 0) << st.dump();
  EXPECT_EQ(st.value("round", -1), 1) << st.dump();
  // What the failed append wrote (up to 8 KiB of the train spool) was cut back.
  EXPECT_EQ(FileSize(train_spool), 0);
  EXPECT_EQ(FileSize(eval_spool), 0);
  auto early = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(early) << early->content;

  spool_fs.FreeSpace();
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1100));
  WaitSampleCount(1100);
  ASSERT_TRUE(WaitStatus([](const Json& j) { return j.value("samplesSeen", -1) >= 1100; },
                         std::chrono::seconds(30)))
      << StatusOfJob().dump();
  EXPECT_EQ(StatusOfJob().value("samplesSeen", -1), 1100);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(il1.content, kIl1);
  // Every sample exactly once: the round file and both spools hold exactly the split of 1..1100.
  const auto [train, eval] = Split(1, 1100, 0.8);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), train);
  EXPECT_EQ(ReadFile(train_spool), train);
  EXPECT_EQ(ReadFile(eval_spool), eval);
  AcceptTrainReady(il1);
  Barrier();
  auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(extra) << "a second message: " << extra->content;
  EXPECT_EQ(lc->Stop(), 0);
}

// (c) again, when the index does not change after the failure: the job's periodic check
// (checkPeriodSeconds, 2 s here) retries the ingest once space is back.
TEST_F(IoFaultsTest, SpoolFullRetriedByThePeriodicCheck) {
  if (!MountOrSkip(spool_fs, spool, "256k")) GTEST_SKIP() << skip_reason;
  StartLc();
  LoadJob(2);
  spool_fs.Fill(8 << 10);
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  WaitSampleCount(1000);
  ASSERT_TRUE(WaitLog("ingesting " + rootfs + "/data/train_data.txt: writing " + spool + "/" +
                      kJobSpoolBase + ".train: " + kNoSpace));
  Barrier();
  EXPECT_EQ(StatusOfJob().value("samplesSeen", -1), 0);
  auto early = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(early) << early->content;
  spool_fs.FreeSpace();
  ASSERT_TRUE(WaitStatus([](const Json& j) { return j.value("samplesSeen", -1) >= 1000; },
                         std::chrono::seconds(30)))
      << "the samples were not ingested after space was freed: " << StatusOfJob().dump();
  EXPECT_EQ(StatusOfJob().value("samplesSeen", -1), 1000);
  EXPECT_EQ(NextJob().content, kIl1);
  const auto [train, eval] = Split(1, 1000, 0.8);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), train);
  EXPECT_EQ(ReadFile(spool + "/" + kJobSpoolBase + ".train"), train);
  EXPECT_EQ(ReadFile(spool + "/" + kJobSpoolBase + ".eval"), eval);
  EXPECT_EQ(lc->Stop(), 0);
}

// The same with Sedna's usual checkPeriodSeconds (60): once space is back, a failed ingest should
// be retried within seconds, like a failed sample-file write (10 s), not only at the next index
// change or the job's next periodic check.
TEST_F(IoFaultsTest, SpoolFullRetriedBeforeTheNextCheckPeriod) {
  if (!MountOrSkip(spool_fs, spool, "256k")) GTEST_SKIP() << skip_reason;
  StartLc();
  LoadJob(60);
  spool_fs.Fill(8 << 10);
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  WaitSampleCount(1000);
  ASSERT_TRUE(WaitLog("ingesting " + rootfs + "/data/train_data.txt: writing " + spool + "/" +
                      kJobSpoolBase + ".train: " + kNoSpace));
  Barrier();
  const auto freed = Clock::now();
  spool_fs.FreeSpace();
  const bool ingested = WaitStatus([](const Json& j) { return j.value("samplesSeen", -1) >= 1000; },
                                   std::chrono::seconds(20));
  // A failed ingest is retried after 10 s on its own timer, not only at the next index change
  // or the job's checkPeriodSeconds tick (here 60 s).
  EXPECT_TRUE(ingested) << "a failed ingest was not retried within 20 s of space coming back; "
                        << StatusOfJob().dump();
  if (ingested) {
    std::cerr << "ingested " << std::chrono::duration<double>(Clock::now() - freed).count()
              << " s after space was freed\n";
    EXPECT_EQ(StatusOfJob().value("samplesSeen", -1), 1000);
    EXPECT_EQ(NextJob().content, kIl1);
    EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(1, 1000, 0.8).first);
  }
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
