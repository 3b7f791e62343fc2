#include "cluster_fixture.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>

namespace sedna::testing {

namespace stdfs = std::filesystem;

void ClusterFixture::MakeWorld(const std::string& tmp_prefix) {
  tmp = MakeTempDir(tmp_prefix);
  rootfs = tmp + "/rootfs";
  db = tmp + "/db/database.db";
  stdfs::create_directories(rootfs);
  gm = std::make_unique<GmEmulator>();
  port = FreePort();
}

void ClusterFixture::StartLc(uint16_t status_port, const std::vector<std::string>& extra_args) {
  std::vector<std::string> args{"--db",        db,     "--status-port", std::to_string(status_port),
                                "--log-level", "debug"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // The emulated G1 GM never sends (Deploy, Waiting): each IL deploy decision comes --deploy-wait
  // after the eval forward (docs/protocol.md §H3.2). Tests keep it short unless they set it.
  if (std::find(args.begin(), args.end(), "--deploy-wait") == args.end()) {
    args.insert(args.end(), {"--deploy-wait", "0.2"});
  }
  lc = std::make_unique<LcProcess>(
      lc_binary,
      std::map<std::string, std::string>{{"GM_ADDRESS", gm->address()},
                                         {"NODENAME", "edge-node"},
                                         {"BIND_PORT", std::to_string(port)},
                                         {"ROOTFS_MOUNT_DIR", rootfs}},
      args, tmp + "/lc.log");
  ASSERT_TRUE(gm->server().WaitForConnection(std::chrono::seconds(20))) << lc->Log();
}

void ClusterFixture::KillAndRestart(uint16_t status_port,
                                    const std::vector<std::string>& extra_args) {
  lc->Kill();
  AppendFile(tmp + "/lc.log", "---- SIGKILL; restarting ----\n");
  StartLc(status_port, extra_args);
}

ClusterFixture::NodeLc& ClusterFixture::StartNodeLc(const std::string& node, bool own_rootfs,
                                                    uint16_t status_port,
                                                    const std::vector<std::string>& extra_args) {
  auto n = std::make_unique<NodeLc>();
  n->node = node;
  n->rootfs = own_rootfs ? tmp + "/" + node + "/rootfs" : rootfs;
  n->db = tmp + "/" + node + "/database.db";
  n->log = tmp + "/lc-" + node + ".log";
  n->port = FreePort();
  stdfs::create_directories(n->rootfs);
  std::vector<std::string> args{"--db",        n->db,  "--status-port", std::to_string(status_port),
                                "--log-level", "debug"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  n->args = std::move(args);
  node_lcs.push_back(std::move(n));
  NodeLc& added = *node_lcs.back();
  SpawnNodeLc(added);
  return added;
}

void ClusterFixture::SpawnNodeLc(NodeLc& n) {
  n.lc = std::make_unique<LcProcess>(
      lc_binary,
      std::map<std::string, std::string>{{"GM_ADDRESS", gm->address()},
                                         {"NODENAME", n.node},
                                         {"BIND_PORT", std::to_string(n.port)},
                                         {"ROOTFS_MOUNT_DIR", n.rootfs}},
      n.args, n.log);
  EXPECT_TRUE(gm->WaitForNode(n.node, std::chrono::seconds(20))) << n.lc->Log();
}

void ClusterFixture::KillAndRestartNode(NodeLc& n) {
  n.lc->Kill();
  AppendFile(n.log, "---- SIGKILL; restarting ----\n");
  // The killed LC's connection closes when the kernel resets it; the new one is then the node's.
  EXPECT_TRUE(gm->server().WaitForNodeGone(n.node, std::chrono::seconds(10)));
  SpawnNodeLc(n);
}

std::string ClusterFixture::PostWorkerTo(const NodeLc& on, const std::string& name,
                                         const std::string& body) {
  HttpResult r = HttpRequest(on.port, "POST", "/sedna/workers/" + name + "/info", body);
  EXPECT_EQ(r.status, 200) << r.raw;
  return r.body;
}

void ClusterFixture::TearDown() {
  if (HasFailure() && lc) std::cerr << "---- sedna-lc log ----\n" << lc->Log();
  for (const auto& n : node_lcs) {
    if (HasFailure() && n->lc)
      std::cerr << "---- sedna-lc log (" << n->node << ") ----\n" << n->lc->Log();
  }
  node_lcs.clear();
  lc.reset();
  gm.reset();
  if (!tmp.empty()) stdfs::remove_all(tmp);
}

std::optional<UpstreamFrame> ClusterFixture::NextDataset(const std::string& name) {
  for (auto it = held.begin(); it != held.end(); ++it) {
    if (it->header.resource_name == name) {
      UpstreamFrame f = std::move(*it);
      held.erase(it);
      return f;
    }
  }
  for (;;) {
    auto f = gm->Next("Dataset");
    if (!f) return std::nullopt;
    if (f->header.resource_name == name) return f;
    held.push_back(std::move(*f));
  }
}

void ClusterFixture::WaitSampleCount(int64_t n, const std::string& dataset,
                                     const std::string& overshoot) {
  for (;;) {
    auto f = NextDataset(dataset);
    ASSERT_TRUE(f) << "numberOfSamples " << n << " never reported";
    const int64_t got = f->body.at("numberOfSamples").get<int64_t>();
    if (got >= n) {
      EXPECT_EQ(got, n) << overshoot;
      return;
    }
  }
}

std::optional<UpstreamFrame> ClusterFixture::BarrierAnswer() {
  const std::string name = "barrier-" + std::to_string(++barriers);
  gm->Send("insert", DatasetObject(name, kBarrierIndexUrl, "txt", barrier_uid));
  return NextDataset(name);
}

void ClusterFixture::Barrier() {
  ASSERT_TRUE(BarrierAnswer()) << "no answer to barrier-" << barriers;
}

std::string ClusterFixture::PostWorker(const std::string& name, const std::string& body) {
  HttpResult r = HttpRequest(port, "POST", "/sedna/workers/" + name + "/info", body);
  EXPECT_EQ(r.status, 200) << r.raw;
  return r.body;
}

void IlJobFixture::Sync() {
  for (const Json& obj : IlDownstream(*job)) gm->Send("insert", obj);
}

UpstreamFrame IlJobFixture::NextJob(std::chrono::milliseconds timeout) {
  auto f = gm->Next("IncrementalLearningJob", timeout);
  if (!f) throw std::runtime_error("no IncrementalLearningJob message from the LC");
  EXPECT_EQ(f->header.resource_name, kIlJobName);
  EXPECT_EQ(f->header.operation, "status");
  return *f;
}

}  // namespace sedna::testing
