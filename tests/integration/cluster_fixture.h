// The world of one cluster-mode integration test: a temp directory holding the rootfs and the
// database, the GM emulator, and the real sedna-lc binary connected to it; plus the round trips
// the tests wait on (a Dataset's count, a barrier) and the worker POST.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gm_emulator.h"
#include "lc_process.h"
#include "objects.h"

namespace sedna::testing {

class ClusterFixture : public ::testing::Test {
 protected:
  // tmp: a fresh directory named after `tmp_prefix`; rootfs: tmp/rootfs (created); db:
  // tmp/db/database.db; gm: listening; port: a free port for the worker API. Starts nothing.
  void MakeWorld(const std::string& tmp_prefix);

  // Starts `lc_binary` with GM_ADDRESS, NODENAME=edge-node, BIND_PORT=port and
  // ROOTFS_MOUNT_DIR=rootfs, and "--db db --status-port <status_port> --log-level debug" then
  // `extra_args`, logging to tmp/lc.log. Fails the test unless it connects to the GM in 20 s.
  void StartLc(uint16_t status_port = 0, const std::vector<std::string>& extra_args = {});
  // SIGKILL, a marker line in the log, then StartLc again on the same database, rootfs and ports.
  void KillAndRestart(uint16_t status_port = 0, const std::vector<std::string>& extra_args = {});

  // Multi-node: one more sedna-lc with NODENAME=`node` against the same emulator, which must be
  // in multi-node mode (gm->SetMultiNode(true) before the first StartLc). It has its own
  // database (tmp/<node>/database.db), worker API port and log (tmp/lc-<node>.log), and the same
  // rootfs as the first LC (storage shared between nodes, as NFS or S3 would be) unless
  // own_rootfs (tmp/<node>/rootfs). Fails the test unless `node` connects within 20 s.
  struct NodeLc {
    std::string node, rootfs, db, log;
    uint16_t port = 0;
    std::vector<std::string> args;  // the command line it was started with
    std::unique_ptr<LcProcess> lc;
  };
  NodeLc& StartNodeLc(const std::string& node, bool own_rootfs = false, uint16_t status_port = 0,
                      const std::vector<std::string>& extra_args = {});
  // SIGKILL, a marker line in its log, then the same LC again (database, rootfs, port, args);
  // fails the test unless its node reconnects within 20 s.
  void KillAndRestartNode(NodeLc& n);
  // POSTs `body` to that LC's /sedna/workers/<name>/info; expects 200 and returns the reply body.
  std::string PostWorkerTo(const NodeLc& on, const std::string& name, const std::string& body);

  void SpawnNodeLc(NodeLc& n);

  // On failure prints the LCs' logs; stops the LCs (SIGKILL) and the GM; removes tmp.
  void TearDown() override;

  // The next status of Dataset `name`; other Datasets' statuses are held for their own calls.
  std::optional<UpstreamFrame> NextDataset(const std::string& name);
  // Waits for Dataset `dataset` to report numberOfSamples n; a count above n fails the test with
  // `overshoot` as the message.
  void WaitSampleCount(int64_t n, const std::string& dataset = kIlDatasetName,
                       const std::string& overshoot = "samples counted more than once");

  // A round trip through the websocket: sends a fresh Dataset "barrier-<k>" (index
  // kBarrierIndexUrl, metadata.uid `barrier_uid`) and returns its first status, nullopt when none
  // came. The LC handles GM frames in order on one thread, so when the answer arrives every frame
  // sent before it was handled and every upstream frame queued before it was delivered.
  std::optional<UpstreamFrame> BarrierAnswer();
  // BarrierAnswer, failing the test when no answer came.
  void Barrier();

  // POSTs `body` to /sedna/workers/<name>/info; expects 200 and returns the reply body.
  std::string PostWorker(const std::string& name, const std::string& body);

  std::string tmp, rootfs, db;
  std::string lc_binary = std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
  std::string barrier_uid = kUid;  // metadata.uid of the barrier Datasets
  uint16_t port = 0;
  int barriers = 0;
  std::vector<UpstreamFrame> held;  // Dataset statuses kept by NextDataset
  std::unique_ptr<GmEmulator> gm;
  std::unique_ptr<LcProcess> lc;
  std::vector<std::unique_ptr<NodeLc>> node_lcs;  // StartNodeLc's, in start order
};

// A ClusterFixture whose test plays the GM for one IL job (`job`, created by the test).
class IlJobFixture : public ClusterFixture {
 protected:
  // Sends the job (and the model §P4.3 says goes with it) when the GM would.
  void Sync();
  // The next upstream IncrementalLearningJob frame; expects it to be a status of kIlJobName and
  // throws std::runtime_error when none comes within `timeout`.
  UpstreamFrame NextJob(std::chrono::milliseconds timeout = std::chrono::seconds(20));

  std::unique_ptr<GmJob> job;
};

}  // namespace sedna::testing
