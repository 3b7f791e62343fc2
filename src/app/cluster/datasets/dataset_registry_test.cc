// The dataset registry (dataset_registry.h) over a real store, index files in a temporary host
// root and the real pool: a Dataset added, changed and deleted; a read that comes back after its
// Dataset moved; numberOfSamples coalesced on the context's (fake) clock, and sent before the jobs'
// spools are synced.
#include "app/cluster/datasets/dataset_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/outbox.h"
#include "app/cluster/jobs/il_record.h"
#include "app/cluster/part_test_env.h"

namespace sedna::app {
namespace {

using testing::ClusterTestEnv;

json::Decoded<core::Dataset> DatasetObject(const std::string& name, const std::string& url) {
  auto d = json::DecodeDataset(
      R"({"kind":"Dataset","apiVersion":"sedna.io/v1alpha1","metadata":{"name":")" + name +
      R"(","namespace":"default"},"spec":{"url":")" + url + R"(","format":"txt"}})");
  EXPECT_TRUE(d.ok()) << d.message();
  return d.ok() ? std::move(*d) : json::Decoded<core::Dataset>{};
}

std::string CountFrame(const std::string& name, int64_t n) {
  return json::EncodeFrame({"default", "Dataset", name, "status"}, json::EncodeDatasetStatus(n));
}

Config Interval(int64_t ms) {
  Config c;
  c.dataset_status_interval_ms = ms;
  return c;
}

const char* const kKey = "default/dataset/d1";

class DatasetRegistryTest : public ::testing::Test {
 protected:
  explicit DatasetRegistryTest(Config cfg = Interval(1000)) : env(cfg) {
    registry = std::make_unique<DatasetRegistry>(
        env.ctx(), outbox, inbound,
        DatasetRegistry::Hooks{
            [this](const std::string& ns, const std::string& name) {
              changed.push_back(ns + "/" + name);
            },
            // One job on every Dataset: its share of each pass records the index it read, back
            // on the loop after the count (as the job runner's step would). Its finish, on the
            // pool where the runner syncs its spools, waits for `finish_gate` when one is set.
            [this](const DatasetSource& src) {
              std::vector<IngestShare> shares(1);
              shares[0].member.cursor = job_cursor;
              shares[0].finish = [gate = finish_gate](dataset::PassMember&,
                                                      const std::vector<fs::SyncItem>&) {
                if (gate.valid()) gate.wait();
              };
              shares[0].add_syncs = add_syncs;
              shares[0].apply = [this, path = src.local_path](const dataset::PassMember& m, bool) {
                if (m.status.ok()) job_cursor = m.cursor;
                reads.push_back(path);
                count_at_apply.push_back(StoredSamples(kKey));
              };
              return shares;
            },
            [](const std::string&, const std::string&) { return int64_t{60}; }});
    registry->Start();
  }
  ~DatasetRegistryTest() override {
    registry->Stop();
    env.ctx().pool.join();  // no index read posts to the queue once it is gone
  }

  // Writes `lines` samples to the host file `host_path` (under the context's rootfs), appending.
  std::string Write(const std::string& host_path, int lines, int from = 0) {
    const std::string path = env.ctx().cfg.rootfs + host_path;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream f(path, std::ios::app);
    for (int i = from; i < from + lines; ++i) f << "images/" << i << ".jpg " << i % 2 << "\n";
    return path;
  }
  int64_t StoredSamples(const std::string& key) {
    auto v = env.store().GetState(kScopeDataset, key);
    if (!v.ok() || !v->has_value()) return -1;
    auto r = DecodeDatasetRecord(**v);
    return r.ok() ? r->cursor.samples : -1;
  }
  bool Frames(size_t n) { return env.OutboxFrames().size() >= n; }

  ClusterTestEnv env;
  Outbox outbox{env.ctx()};  // no sink: the frames stay in the store
  InboundQueue inbound{env.io, {[] { return true; }, [] { return size_t{0}; }}};
  std::unique_ptr<DatasetRegistry> registry;
  std::vector<std::string> changed;
  std::vector<std::string> reads;       // the index of each pass the job took part in
  std::vector<int64_t> count_at_apply;  // the stored count of kKey when the job's share applied
  // The job's spool syncs, as the job runner adds them on the pool (none when unset).
  std::function<void(const dataset::PassMember&, dataset::Spool::SyncList&)> add_syncs;
  dataset::IndexCursor job_cursor;
  std::shared_future<void> finish_gate;
};

TEST_F(DatasetRegistryTest, AnAddedDatasetIsStoredCountedAndReported) {
  const std::string a = Write("/data/a.txt", 3);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  EXPECT_EQ(changed, std::vector<std::string>{"default/d1"});
  const DatasetSource* src = registry->Source("default", "d1");
  ASSERT_NE(src, nullptr);
  EXPECT_EQ(src->local_path, a);
  ASSERT_TRUE(env.RunUntil([&] { return !reads.empty(); }));
  EXPECT_EQ(reads[0], a);
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{CountFrame("d1", 3)});
  EXPECT_EQ(StoredSamples(kKey), 3);
  auto rows = env.store().LoadResources();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name, kKey);
}

TEST_F(DatasetRegistryTest, AChangedUrlRestartsTheCountOnTheNewIndex) {
  Write("/data/a.txt", 3);
  const std::string b = Write("/data/b.txt", 5);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  ASSERT_TRUE(env.RunUntil([&] { return Frames(1); }));
  env.clock.Advance(std::chrono::seconds(1));  // past --dataset-status-interval-ms
  registry->Upsert(DatasetObject("d1", "/data/b.txt"), true);
  EXPECT_EQ(registry->Source("default", "d1")->local_path, b);
  ASSERT_TRUE(env.RunUntil([&] { return Frames(2); }));
  EXPECT_EQ(env.OutboxFrames(),
            (std::vector<std::string>{CountFrame("d1", 3), CountFrame("d1", 5)}));
  EXPECT_EQ(StoredSamples(kKey), 5);
  EXPECT_EQ(changed.size(), 2u);
}

TEST_F(DatasetRegistryTest, ADeletedDatasetIsForgottenAndUnstored) {
  Write("/data/a.txt", 3);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  ASSERT_TRUE(env.RunUntil([&] { return !reads.empty(); }));
  ASSERT_EQ(StoredSamples(kKey), 3);
  registry->Delete(kKey);
  EXPECT_EQ(registry->Source("default", "d1"), nullptr);
  EXPECT_EQ(StoredSamples(kKey), -1);
  auto rows = env.store().LoadResources();
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
  registry->ReadAll();  // reads nothing: it is gone
  env.RunReady();
  EXPECT_EQ(reads.size(), 1u);
}

// The count does not wait for the jobs' spools to be synced (an fdatasync each): it is committed
// and its frame queued while a job's finish is still held on the pool.
TEST_F(DatasetRegistryTest, TheCountIsReportedBeforeTheJobsFinishTheirPass) {
  struct Release {  // lets the held finish go on any exit, before the fixture joins the pool
    std::promise<void> p;
    bool done = false;
    void Go() {
      if (!done) p.set_value();
      done = true;
    }
    ~Release() { Go(); }
  } release;
  finish_gate = release.p.get_future().share();
  Write("/data/a.txt", 3);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  ASSERT_TRUE(env.RunUntil([&] { return Frames(1); }));
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{CountFrame("d1", 3)});
  EXPECT_EQ(StoredSamples(kKey), 3);
  EXPECT_TRUE(reads.empty());  // the job's share is still on the pool
  release.Go();
  ASSERT_TRUE(env.RunUntil([&] { return !reads.empty(); }));
}

// With the kernel making the spools' syncs (AIO), the pass writes the spools and starts their
// syncs before its count goes back (the count's commit then runs while the disk syncs); the count
// still steps before the jobs' shares, also when the batch is done before the count is posted: a
// sync the kernel refuses (a pipe has no fsync) is made on the pool thread at once.
TEST_F(DatasetRegistryTest, TheCountGoesBeforeThePassEvenWhenItsSyncsAreDoneAtOnce) {
  if (!env.ctx().syncs->async()) GTEST_SKIP() << "no AIO here: the count goes first anyway";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  add_syncs = [fd = pipe_fds[0]](const dataset::PassMember&, dataset::Spool::SyncList& syncs) {
    syncs.items.push_back({fd, true, 0});
  };
  Write("/data/a.txt", 3);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  ASSERT_TRUE(env.RunUntil([&] { return !reads.empty(); }));
  EXPECT_EQ(count_at_apply, std::vector<int64_t>{3});  // -1: the pass stepped before the count
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{CountFrame("d1", 3)});
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

// The read of the old index is on the pool when the Dataset moves to another: its count is
// dropped (it would be counted against the new index), and the new index is read.
TEST_F(DatasetRegistryTest, AReadThatComesBackAfterTheDatasetMovedIsDropped) {
  const std::string a = Write("/data/a.txt", 3);
  const std::string b = Write("/data/b.txt", 7);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  ASSERT_EQ(env.io.poll_one(), 1u);  // the deferred read: a.txt goes to the pool
  registry->Upsert(DatasetObject("d1", "/data/b.txt"), true);
  ASSERT_TRUE(env.RunUntil([&] { return Frames(1); }));
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{CountFrame("d1", 7)});
  EXPECT_EQ(StoredSamples(kKey), 7);
  // The job's share of the stale pass is still applied (its cursor names its own index: the job
  // runner follows the move); the pass after it reads the new index. The new pass's count comes
  // back ahead of its job's share, so the share is awaited.
  ASSERT_TRUE(env.RunUntil([&] { return reads.size() >= 2; }));
  EXPECT_EQ(reads, (std::vector<std::string>{a, b}));
}

class DatasetCoalescingTest : public DatasetRegistryTest {
 protected:
  DatasetCoalescingTest() : DatasetRegistryTest(Interval(60000)) {}
};

// At most one numberOfSamples per --dataset-status-interval-ms on the context's clock; the count
// that had to wait goes out with the first read after it.
TEST_F(DatasetCoalescingTest, NumberOfSamplesIsCoalescedOnTheContextsClock) {
  Write("/data/a.txt", 3);
  registry->Upsert(DatasetObject("d1", "/data/a.txt"), true);
  ASSERT_TRUE(env.RunUntil([&] { return Frames(1); }));
  Write("/data/a.txt", 2, 3);
  registry->ReadAll();
  ASSERT_TRUE(env.RunUntil([&] { return StoredSamples(kKey) == 5; }));
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{CountFrame("d1", 3)});
  env.clock.Advance(std::chrono::seconds(59));
  const size_t before = reads.size();
  registry->ReadAll();
  ASSERT_TRUE(env.RunUntil([&] { return reads.size() > before; }));
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{CountFrame("d1", 3)});
  env.clock.Advance(std::chrono::seconds(1));
  registry->ReadAll();
  ASSERT_TRUE(env.RunUntil([&] { return Frames(2); }));
  EXPECT_EQ(env.OutboxFrames(),
            (std::vector<std::string>{CountFrame("d1", 3), CountFrame("d1", 5)}));
}

}  // namespace
}  // namespace sedna::app
