// numberOfSamples is coalesced ([D:I15.8]): each frame is an API-server write in Sedna, and
// a fast writer used to cause hundreds a second. At most one per --dataset-status-interval-ms per
// Dataset, and the last value always goes out.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using namespace std::chrono_literals;

class DatasetStatusTest : public ClusterFixture {};

TEST_F(DatasetStatusTest, AFastWriterGetsOneCountPerIntervalAndTheLastOne) {
  MakeWorld("sedna-dsstatus-");
  std::filesystem::create_directories(rootfs + "/data");
  WriteFile(rootfs + kIlIndexUrl, "");
  StartLc(0, {"--dataset-status-interval-ms", "500"});
  gm->Send("insert", DatasetObject());
  // 200 appends, one every 10 ms (the pacing is the input under test, not a wait for an event).
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kAppends = 200;
  for (int i = 0; i < kAppends; ++i) {
    AppendFile(rootfs + kIlIndexUrl, IndexLine(i + 1) + "\n");
    std::this_thread::sleep_for(10ms);
  }
  const auto writing = std::chrono::steady_clock::now() - t0;
  int frames = 0;
  int64_t last = -1;
  while (last != kAppends) {
    auto f = NextDataset(kIlDatasetName);
    ASSERT_TRUE(f) << "the last count (" << kAppends << ") never came; last " << last << "\n"
                   << lc->Log();
    last = f->body.at("numberOfSamples").get<int64_t>();
    ++frames;
  }
  const auto done = std::chrono::steady_clock::now() - t0;
  // One at once, then at most one per 500 ms while counts change, plus the final one.
  const int allowed = 2 + static_cast<int>(done / 500ms);
  EXPECT_LE(frames, allowed)
      << frames << " frames in "
      << std::chrono::duration_cast<std::chrono::milliseconds>(done).count() << " ms (writing took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(writing).count() << " ms)";
  EXPECT_GE(frames, 2) << "counts were not sent while the writer ran";
  EXPECT_FALSE(gm->Next("Dataset", 800ms)) << "a count after the last value";
  EXPECT_EQ(lc->Stop(), 0);
}

// A FIFO at one Dataset's index ([D:I15.2]) is an error for that Dataset alone: the LC
// answers /healthz, counts another Dataset and reports the first one's problem by name.
TEST_F(DatasetStatusTest, AFifoAtAnIndexPathBlocksNothingElse) {
  MakeWorld("sedna-dsfifo-");
  std::filesystem::create_directories(rootfs + "/data");
  ASSERT_EQ(::mkfifo((rootfs + "/data/fifo.txt").c_str(), 0644), 0);
  WriteFile(rootfs + kIlIndexUrl, "");
  StartLc(0);
  gm->Send("insert", DatasetObject("fifo-dataset", "/data/fifo.txt"));
  gm->Send("insert", DatasetObject());
  AppendFile(rootfs + kIlIndexUrl, IndexLine(1) + "\n" + IndexLine(2) + "\n");
  auto f = NextDataset(kIlDatasetName);
  ASSERT_TRUE(f) << "the other Dataset was not counted\n" << lc->Log();
  EXPECT_EQ(f->body.at("numberOfSamples").get<int64_t>(), 2);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (lc->Log().find("fifo-dataset") == std::string::npos ||
         lc->Log().find("FIFO") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << lc->Log();
    std::this_thread::sleep_for(20ms);  // polling the log file
  }
  // Still serving: a third Dataset gets counted after the FIFO was tried.
  WriteFile(rootfs + "/data/third.txt", IndexLine(3) + "\n");
  gm->Send("insert", DatasetObject("third-dataset", "/data/third.txt"));
  auto g = NextDataset("third-dataset");
  ASSERT_TRUE(g) << lc->Log();
  EXPECT_EQ(g->body.at("numberOfSamples").get<int64_t>(), 1);
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
