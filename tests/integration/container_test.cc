// The image under a container runtime, the way deploy/lc-daemonset.yaml runs it ([D:I23]):
// podman with runc builds containers from the OCI layout packaging/image/build_image.py writes
// (from this tree's sedna-lc), with host networking, a temp directory playing the host's / at
// /rootfs (ROOTFS_MOUNT_DIR), the database on its hostPath (SEDNA_DB_PATH), a read-only root
// filesystem with a tmpfs at /tmp (the manifest's readOnlyRootFilesystem and /tmp emptyDir), the
// probes asked from the host, and the GM emulator and the workers on the host. Every case SKIPS,
// with its reason, when podman cannot run containers here (not installed, no runc, not root, no
// container).
//
// SEDNA_IMAGE_OCI=<dir> runs an OCI layout built elsewhere (tools/build_image.sh) instead.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "cluster_fixture.h"
#include "il_round_frames.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---- the IL round (il_round_frames.h)
using namespace il_round;  // kIl1 ... kR2Il1, kTrainReport, kEvalReport, kOldModel
constexpr const char* kNewModel = "NEW-MODEL-ROUND-1";

// ---- the LL round of ll_cluster_test (§H3.4)
constexpr const char* kLlJob = "atcii-classifier-demo";
constexpr const char* kLlDataset = "lifelong-dataset";
constexpr const char* kLlCsv = "/data/lifelong_learning/trainData.csv";
constexpr const char* kLlUid = "7b3c2f0e-1111-4c3a-9c1e-000000000004";
constexpr const char* kLl1 =
    R"({"phase":"train","status":"ready","input":{"dataURL":"/output/data/train/1/data.csv","outputDir":"/output/train/1"},"output":null})";
constexpr const char* kLlTrainReport =
    R"({"name": "train-worker-5xq2m", "namespace": "default", "ownerName": "atcii-classifier-demo", "ownerKind": "lifelonglearningjob", "kind": "train", "status": "completed", "results": [{"format": "pkl", "url": "/output/train/1/index.pkl", "metrics": {"summer_2": {"mlogloss": 0.91}}}]})";
constexpr const char* kLl2 =
    R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","metrics":{"summer_2":{"mlogloss":0.91}},"url":"/output/train/1/index.pkl"}],"ownerInfo":null}})";
constexpr const char* kLl3 =
    R"({"phase":"eval","status":"ready","input":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl"}],"dataURL":"/output/data/eval/1/data.csv","outputDir":"/output/eval/1"},"output":null})";
constexpr const char* kLlEvalReport =
    R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "atcii-classifier-demo", "ownerKind": "lifelonglearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pkl", "url": "/output/eval/1/index.pkl", "metrics": {"precision_score": 0.62}}]})";
constexpr const char* kLl4 =
    R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","metrics":{"precision_score":0.62},"url":"/output/eval/1/index.pkl"}],"ownerInfo":null}})";
constexpr const char* kLl5 =
    R"({"phase":"deploy","status":"ready","input":{"models":[{"format":"pkl","url":"/output/eval/1/index.pkl"}]},"output":null})";

constexpr const char* kNobody = "65534:65534";
constexpr uid_t kNobodyId = 65534;

// `command` through the shell: its exit code and stdout+stderr.
std::pair<int, std::string> Shell(const std::string& command) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What the whole suite shares: podman on a private storage root, the image loaded there once.
struct Runtime {
  std::string skip;   // why the cases skip; empty when podman runs containers here
  std::string error;  // why the cases fail (the image could not be built or loaded)
  std::string dir;    // storage, runroot and the OCI layout
  std::string image = "localhost/sedna-lc:container-test";
  std::string ulimits;  // --ulimit flags within this process's limits (the VM refuses raising)
  int grace_s = 0;      // deploy/lc-daemonset.yaml terminationGracePeriodSeconds

  // podman as this VM needs it: runc, cgroupfs, file events, the suite's own storage.
  std::string Podman(const std::string& args) const {
    return "podman --root " + Quote(dir + "/storage") + " --runroot " + Quote(dir + "/run") +
           " --runtime runc --cgroup-manager cgroupfs --events-backend file " + args;
  }
  std::pair<int, std::string> Run(const std::string& args) const { return Shell(Podman(args)); }
};

Runtime& Rt() {
  static Runtime rt;
  return rt;
}

// An --ulimit flag at the current soft limit, capped: runc sets it in the container and this VM
// refuses any raise.
std::string Ulimit(const char* name, int resource, rlim_t cap) {
  struct rlimit rl {};
  ::getrlimit(resource, &rl);
  const rlim_t v = std::min(rl.rlim_cur, cap);
  return std::string(" --ulimit ") + name + "=" + std::to_string(v) + ":" + std::to_string(v);
}

int GraceFromManifest() {
  const std::string y = ReadFile(std::string(SEDNA_SOURCE_DIR) + "/deploy/lc-daemonset.yaml");
  std::smatch m;
  if (!std::regex_search(y, m, std::regex(R"(terminationGracePeriodSeconds:\s*(\d+))"))) return 0;
  return std::stoi(m[1]);
}

class ContainerTest : public IlJobFixture {
 protected:
  static void SetUpTestSuite() {
    Runtime& rt = Rt();
    if (::geteuid() != 0) {
      rt.skip = "needs root (rootful podman; the mounts are chowned to uid 65534)";
      return;
    }
    if (Shell("command -v podman").first != 0) {
      rt.skip = "podman is not installed (apt-get install podman runc)";
      return;
    }
    if (Shell("command -v runc").first != 0) {
      rt.skip = "runc is not installed (apt-get install runc)";
      return;
    }
    // Lower case: podman names an image pulled from oci:<dir> after the directory.
    rt.dir = "/tmp/sedna-podman-" + std::to_string(::getpid()) + "-" +
             std::to_string(Clock::now().time_since_epoch().count());
    stdfs::create_directories(rt.dir);
    rt.ulimits = Ulimit("nofile", RLIMIT_NOFILE, 4096) + Ulimit("nproc", RLIMIT_NPROC, 4096);
    rt.grace_s = GraceFromManifest();
    if (auto [rc, out] = rt.Run("info --format '{{.Host.OCIRuntime.Name}}'"); rc != 0) {
      rt.skip = "podman cannot run here: podman info: " + Trim(out);
      return;
    }
    const std::string layout = rt.dir + "/oci";
    if (const char* given = std::getenv("SEDNA_IMAGE_OCI"); given && *given) {
      stdfs::create_directory_symlink(stdfs::absolute(given), layout);
    } else {
      const auto t0 = Clock::now();
      auto [rc, out] =
          Shell("/usr/bin/python3 " +
                Quote(std::string(SEDNA_SOURCE_DIR) + "/packaging/image/build_image.py") +
                " oci --binary " + Quote(std::string(SEDNA_BINARY_DIR) + "/sedna-lc") + " --out " +
                Quote(layout));
      if (rc != 0) {
        rt.error = "build_image.py oci failed: " + out;
        return;
      }
      std::printf("image: %s built in %.1f s\n", Trim(out).c_str(), Seconds(Clock::now() - t0));
    }
    const auto t0 = Clock::now();
    const std::string version =
        Trim(Shell(Quote(std::string(SEDNA_SOURCE_DIR) + "/packaging/version.sh")).second);
    auto [rc, out] = rt.Run("pull -q " + Quote("oci:" + layout + ":" + version));
    if (rc != 0) {
      rt.error = "podman pull oci:" + layout + ":" + version + ": " + out;
      return;
    }
    const std::string id = Trim(out).substr(Trim(out).rfind('\n') + 1);
    if (auto [trc, tout] = rt.Run("tag " + id + " " + rt.image); trc != 0) {
      rt.error = "podman tag: " + tout;
      return;
    }
    std::printf("image: loaded into podman in %.1f s\n", Seconds(Clock::now() - t0));
    // Whether a container can be created and started here: podman's own failures (125: podman,
    // 126: the runtime could not start the process) skip; sedna-lc's answer must be its version.
    // An image whose binary cannot be executed also exits 126 here: packaging_image (the same
    // layout in a chroot) fails for it.
    auto [vrc, vout] =
        rt.Run("run --rm --pull never --network host" + rt.ulimits + " " + rt.image + " --version");
    if (vrc == 125 || vrc == 126) {
      rt.skip =
          "podman cannot start a container here (exit " + std::to_string(vrc) + "): " + Trim(vout);
      return;
    }
    if (vrc != 0 || vout.find("sedna-lc") == std::string::npos) {
      rt.error = "sedna-lc --version in the container: exit " + std::to_string(vrc) + ": " + vout;
    }
  }

  static void TearDownTestSuite() {
    Runtime& rt = Rt();
    if (rt.dir.empty()) return;
    rt.Run("rm -a -f -t 0");
    rt.Run("system reset -f");  // the image and its layers, unmounted
    stdfs::remove_all(rt.dir);
  }

  void SetUp() override {
    if (!Rt().skip.empty()) GTEST_SKIP() << "container tests skipped: " << Rt().skip;
    ASSERT_TRUE(Rt().error.empty()) << Rt().error;
    MakeWorld("sedna-container-");
    db_dir = tmp + "/db";  // the hostPath of /var/lib/sedna-lc
    stdfs::create_directories(db_dir);
    status_port = FreePort();
  }

  void TearDown() override {
    for (const std::string& c : containers) {
      if (HasFailure())
        std::fprintf(stderr, "---- podman logs %s ----\n%s", c.c_str(), Logs(c).c_str());
      Rt().Run("rm -f -t 0 " + c);
    }
    ClusterFixture::TearDown();
  }

  // A container of the DaemonSet's pod (deploy/lc-daemonset.yaml): host network, the rootfs and
  // database mounts, Sedna's env, the manifest's args, read-only root with a /tmp tmpfs; as `user`
  // when set. With `connect`, fails the test unless it connects to the GM within 20 s.
  void StartContainer(const std::string& user = "", bool connect = true) {
    const std::string name =
        "sedna-lc-test-" + std::to_string(::getpid()) + "-" + std::to_string(containers.size() + 1);
    std::string args = "run -d --name " + name + " --pull never --network host" +
                       " --read-only --read-only-tmpfs=false --tmpfs /tmp:rw,mode=1777,size=64m" +
                       Rt().ulimits + " -v " + Quote(rootfs + ":/rootfs") + " -v " +
                       Quote(db_dir + ":/var/lib/sedna-lc") + " -e GM_ADDRESS=" + gm->address() +
                       " -e BIND_PORT=" + std::to_string(port) +
                       " -e NODENAME=edge-node -e ROOTFS_MOUNT_DIR=/rootfs" +
                       " -e SEDNA_DB_PATH=/var/lib/sedna-lc/database.db";
    if (!user.empty()) args += " --user " + user;
    // The manifest's args, then the test's: debug logs, and the emulated G1 GM's deploy wait
    // short (cluster_fixture.cc says why).
    args += " " + Rt().image + " --status-address 127.0.0.1 --status-port " +
            std::to_string(status_port) + " --log-level debug --deploy-wait 0.2";
    auto [rc, out] = Rt().Run(args);
    ASSERT_EQ(rc, 0) << "podman " << args << "\n" << out;
    containers.push_back(name);
    if (connect) {
      ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(20))) << Logs(name);
    }
  }
  const std::string& Current() const { return containers.back(); }

  std::string Logs(const std::string& name) const { return Rt().Run("logs " + name).second; }
  std::string Inspect(const std::string& format) const {
    return Trim(Rt().Run("inspect --format " + Quote(format) + " " + Current()).second);
  }
  // The container's exit code, once it has exited (podman wait), within `timeout_s`.
  int WaitExit(int timeout_s = 30) const {
    auto [rc, out] =
        Shell("timeout " + std::to_string(timeout_s) + " " + Rt().Podman("wait " + Current()));
    if (rc != 0) return -1000 - rc;
    return std::stoi(Trim(out));
  }

  // podman kill --signal KILL mid-round: the exit code is 128 + 9.
  void KillContainer() {
    auto [rc, out] = Rt().Run("kill --signal KILL " + Current());
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(WaitExit(), 137);
  }

  struct Stopped {
    int exit_code;
    double seconds;
  };
  // podman stop: SIGTERM, then SIGKILL after the DaemonSet's grace period.
  Stopped StopContainer() {
    const auto t0 = Clock::now();
    auto [rc, out] = Rt().Run("stop -t " + std::to_string(Rt().grace_s) + " " + Current());
    const double s = Seconds(Clock::now() - t0);
    EXPECT_EQ(rc, 0) << out;
    std::printf("podman stop: %.2f s (grace period %d s)\n", s, Rt().grace_s);
    return {WaitExit(), s};
  }

  void ExpectCleanStop() {
    ASSERT_GT(Rt().grace_s, 0) << "terminationGracePeriodSeconds not found in deploy/";
    const Stopped st = StopContainer();
    EXPECT_EQ(st.exit_code, 0);
    EXPECT_LT(st.seconds, Rt().grace_s) << "not ended by SIGTERM within the grace period";
    EXPECT_NE(Logs(Current()).find("signal SIGTERM (15): shutting down"), std::string::npos);
  }

  // The probes, from the host (the kubelet's side of hostNetwork).
  void ExpectProbesAnswer() {
    HttpResult h = HttpRequest(status_port, "GET", "/healthz", "", {});
    EXPECT_EQ(h.status, 200) << h.raw;
    EXPECT_EQ(h.body, "ok\n");
    HttpResult r = HttpRequest(status_port, "GET", "/readyz", "", {});
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, "ready\n");
  }

  // Every IncrementalLearningJob frame, recorded to count what was sent.
  UpstreamFrame Next() {
    UpstreamFrame f = NextJob();
    frames.push_back(f.content);
    return f;
  }
  long Sent(const std::string& content) const {
    return std::count(frames.begin(), frames.end(), content);
  }

  void ChownTree(const std::string& path, uid_t uid) {
    ASSERT_EQ(::chown(path.c_str(), uid, uid), 0) << path;
    for (const auto& e : stdfs::recursive_directory_iterator(path)) {
      ASSERT_EQ(::lchown(e.path().c_str(), uid, uid), 0) << e.path();
    }
  }

  // ---- one IL round (il_restart_test's steps)
  void IlWorld() {
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + "/models/deploy_model/saved_model.pb", kOldModel);
    WriteFile(rootfs + "/data/train_data.txt", "");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");
  }

  void RunToTrainRunning() {
    gm->Send("insert", DatasetObject());
    job = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    Sync();
    Barrier();
    AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
    WaitSampleCount(1000);
    UpstreamFrame il1 = Next();
    ASSERT_EQ(il1.content, kIl1);
    ASSERT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), Split(1, 1000, 0.8).first);
    job->Report(il1.content);
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Running");
    Sync();
    stdfs::create_directories(rootfs + "/output/train/1");
    WriteFile(rootfs + "/output/train/1/model.pb", kNewModel);
  }

  void TrainReportToEvalRunning() {
    EXPECT_EQ(PostWorker("train-worker-h4k9q", kTrainReport), kOk);
    UpstreamFrame il2 = Next();
    EXPECT_EQ(il2.content, kIl2) << "a second Train Ready for round 1?";
    job->Report(il2.content);
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    UpstreamFrame il3 = Next();
    EXPECT_EQ(il3.content, kIl3);
    EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.txt"), Split(1, 1000, 0.8).second);
    job->Report(il3.content);
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Eval/Running");
    Sync();
  }

  void EvalReportToDeployed() {
    EXPECT_EQ(PostWorker("eval-worker-2bq7d", kEvalReport), kOk);
    UpstreamFrame il4 = Next();
    EXPECT_EQ(il4.content, kIl4);
    UpstreamFrame il5 = Next();
    EXPECT_EQ(il5.content, kIl5) << "Deploy Ready";
    EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"), kNewModel);
    job->Report(il4.content);
    auto actions = job->Report(il5.content);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
    job->SetPod(Stage::kDeploy, PodPhase::kRunning);
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
  }

  // No job frame beyond those counted: everything queued before a barrier's answer has arrived.
  void ExpectNoMoreJobFrames() {
    Barrier();
    auto extra = gm->Next("IncrementalLearningJob", std::chrono::milliseconds(300));
    EXPECT_FALSE(extra) << extra->content;
  }

  std::string db_dir;
  uint16_t status_port = 0;
  std::vector<std::string> containers;
  std::vector<std::string> frames;
};

// A full IL round through the container as root (the image's default, as Sedna's), the probes
// from the host, then podman stop within the grace period.
TEST_F(ContainerTest, IlRoundAsRootThenStopWithinGracePeriod) {
  IlWorld();
  StartContainer();
  EXPECT_EQ(Inspect("{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.NetworkMode}}"), "true host");
  ExpectProbesAnswer();
  RunToTrainRunning();
  TrainReportToEvalRunning();
  EvalReportToDeployed();
  ExpectNoMoreJobFrames();
  EXPECT_EQ(Sent(kIl1), 1);
  EXPECT_EQ(Sent(kIl5), 1);
  // The database on its hostPath, not in the container.
  EXPECT_TRUE(stdfs::is_regular_file(db_dir + "/database.db"));
  EXPECT_NE(Logs(Current()).find("database /var/lib/sedna-lc/database.db"), std::string::npos);
  ExpectProbesAnswer();
  ExpectCleanStop();
}

// A full LL round as uid 65534, the mounts owned by it.
TEST_F(ContainerTest, LlRoundAsUid65534) {
  stdfs::create_directories(rootfs + "/data/lifelong_learning");
  WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1\n");
  WriteFile(rootfs + kLlCsv, Csv(600));
  ChownTree(rootfs, kNobodyId);
  ChownTree(db_dir, kNobodyId);
  barrier_uid = kLlUid;
  StartContainer(kNobody);
  EXPECT_EQ(Inspect("{{.Config.User}}"), kNobody);
  ExpectProbesAnswer();

  gm->Send("insert", DatasetObject(kLlDataset, kLlCsv, "CSV", kLlUid));
  job = std::make_unique<GmJob>(core::gm::JobKind::kLifelong,
                                LlJobObject({.uid = kLlUid, .train_prob = 0.8}));
  auto sync = [&] { gm->Send("insert", job->Object()); };
  auto next = [&] {
    auto f = gm->Next("LifelongLearningJob");
    if (!f) throw std::runtime_error("no LifelongLearningJob message from the LC");
    EXPECT_EQ(f->header.resource_name, kLlJob);
    return *f;
  };
  sync();
  ClusterFixture::WaitSampleCount(600, kLlDataset);

  UpstreamFrame ll1 = next();
  ASSERT_EQ(ll1.content, kLl1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.csv"),
            std::string(kCsvHeader) + "\n" + CsvSplitRows(1, 600, 0.8, true));
  job->Report(ll1.content);
  sync();
  job->SetPod(Stage::kTrain, PodPhase::kRunning);
  sync();
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  EXPECT_EQ(PostWorker("train-worker-5xq2m", kLlTrainReport), kOk);
  UpstreamFrame ll2 = next();
  EXPECT_EQ(ll2.content, kLl2);
  job->Report(ll2.content);
  EXPECT_EQ(job->LastCondition(), "Eval/Waiting");
  sync();
  job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
  sync();
  UpstreamFrame ll3 = next();
  EXPECT_EQ(ll3.content, kLl3);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.csv"),
            std::string(kCsvHeader) + "\n" + CsvSplitRows(1, 600, 0.8, false));
  job->Report(ll3.content);
  sync();
  job->SetPod(Stage::kEval, PodPhase::kRunning);
  sync();
  const std::string model("EVAL-INDEX-V1\0\x01\x02-pickle-bytes-of-version-one", 45);
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", model);
  EXPECT_EQ(PostWorker("eval-worker-2bq7d", kLlEvalReport), kOk);
  UpstreamFrame ll4 = next();
  EXPECT_EQ(ll4.content, kLl4);
  job->Report(ll4.content);
  EXPECT_EQ(job->LastCondition(), "Deploy/Waiting");
  sync();
  job->SetPod(Stage::kEval, PodPhase::kSucceeded);
  sync();
  UpstreamFrame ll5 = next();
  EXPECT_EQ(ll5.content, kLl5) << "Deploy Ready";
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), model);
  auto actions = job->Report(ll5.content);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
  sync();
  job->SetPod(Stage::kDeploy, PodPhase::kRunning);
  EXPECT_EQ(job->LastCondition(), "Train/Waiting");
  sync();
  Barrier();
  auto extra = gm->Next("LifelongLearningJob", std::chrono::milliseconds(300));
  EXPECT_FALSE(extra) << extra->content;

  // What the LC wrote, it wrote as 65534: the database and the deployed model on the host.
  struct stat st {};
  ASSERT_EQ(::stat((db_dir + "/database.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobodyId);
  ASSERT_EQ(::stat((rootfs + "/output/deploy/index.pkl").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobodyId);
  ExpectCleanStop();
}

// podman kill --signal KILL twice in one IL round (after Train Ready, after Eval Ready), each time
// a new container on the same mounts: the round resumes and completes, nothing lost (the samples
// appended while it was down, the train and eval reports) and nothing done twice (one Train
// Ready, one Eval Ready, one Deploy Ready for round 1). As uid 65534, the mounts owned by it.
TEST_F(ContainerTest, KilledMidRoundANewContainerResumesTheRound) {
  IlWorld();
  ChownTree(rootfs, kNobodyId);
  ChownTree(db_dir, kNobodyId);
  StartContainer(kNobody);
  RunToTrainRunning();
  Barrier();

  KillContainer();
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1700));  // while it is down
  StartContainer(kNobody);
  ExpectProbesAnswer();
  Sync();  // the GM's resync: the job as it is, (Train, Running)
  auto f = NextDataset(kIlDatasetName);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->content, R"({"numberOfSamples":1700})") << "samples lost or counted twice";
  TrainReportToEvalRunning();  // its first job frame is the forwarded report: no second Ready
  Barrier();

  KillContainer();
  StartContainer(kNobody);
  Sync();
  Barrier();
  EvalReportToDeployed();

  // Round 2 trains on exactly the samples that arrived while the LC was down.
  UpstreamFrame r2 = Next();
  EXPECT_EQ(r2.content, kR2Il1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.txt"), Split(1001, 1700, 0.8).first);
  ExpectNoMoreJobFrames();
  EXPECT_EQ(Sent(kIl1), 1) << "round 1's train request sent twice";
  EXPECT_EQ(Sent(kIl2), 1);
  EXPECT_EQ(Sent(kIl3), 1) << "round 1's eval request sent twice";
  EXPECT_EQ(Sent(kIl5), 1) << "round 1 deployed twice";
  const std::vector<std::string> conditions = job->Conditions();
  EXPECT_EQ(std::count(conditions.begin(), conditions.end(), "Deploy/Ready"), 1);
  EXPECT_EQ(containers.size(), 3u);
  ExpectCleanStop();
}

// As uid 65534 on mounts it may not use: the container exits 2 at once, the log naming the path
// and the uid, and never connects.
TEST_F(ContainerTest, Uid65534WithoutAccessToAMountStopsNamingPathAndUid) {
  struct Case {
    const char* name;
    bool db_writable, rootfs_searchable;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"database hostPath root's 0755", false, true,
       "database directory /var/lib/sedna-lc: cannot create /var/lib/sedna-lc/database.db.lock as "
       "uid 65534: Permission denied"},
      {"rootfs root's 0700", true, false,
       "rootfs /rootfs (ROOTFS_MOUNT_DIR): cannot be searched as uid 65534 gid 65534: Permission "
       "denied"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(::chown(db_dir.c_str(), c.db_writable ? kNobodyId : 0, 0), 0);
    ASSERT_EQ(::chmod(db_dir.c_str(), 0755), 0);
    ASSERT_EQ(::chown(rootfs.c_str(), 0, 0), 0);
    ASSERT_EQ(::chmod(rootfs.c_str(), c.rootfs_searchable ? 0755 : 0700), 0);
    StartContainer(kNobody, /*connect=*/false);
    EXPECT_EQ(WaitExit(), 2);
    const std::string log = Logs(Current());
    EXPECT_NE(log.find("cannot start: " + c.message), std::string::npos) << log;
    EXPECT_FALSE(stdfs::exists(db_dir + "/database.db"));
  }
  EXPECT_FALSE(gm->server().WaitForConnection(std::chrono::milliseconds(0)));
}

}  // namespace
}  // namespace sedna::testing
