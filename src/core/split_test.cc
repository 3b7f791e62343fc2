#include "core/split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace sedna::core {
namespace {

using ::testing::HasSubstr;

template <class Row>
std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  return info.param.name;
}

struct ValidateRow {
  std::string name;
  double p;
  bool ok;
};

class ValidateTrainProbTest : public ::testing::TestWithParam<ValidateRow> {};

TEST_P(ValidateTrainProbTest, FiniteWithinZeroOne) {
  const Status s = ValidateTrainProb(GetParam().p);
  EXPECT_EQ(s.ok(), GetParam().ok) << s.message();
  if (!GetParam().ok) {
    EXPECT_THAT(s.message(), HasSubstr("trainProb"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Values, ValidateTrainProbTest,
    ::testing::Values(ValidateRow{"Zero", 0.0, true}, ValidateRow{"One", 1.0, true},
                      ValidateRow{"PointEight", 0.8, true}, ValidateRow{"Tiny", 1e-9, true},
                      ValidateRow{"Negative", -0.1, false},
                      ValidateRow{"AboveOne", 1.0000001, false},
                      ValidateRow{"NaN", std::nan(""), false},
                      ValidateRow{"Infinity", std::numeric_limits<double>::infinity(), false}),
    RowName<ValidateRow>);

TEST(ValidateTrainProb, MessageShowsValue) {
  EXPECT_EQ(ValidateTrainProb(1.5).message(), "trainProb: must be a number within [0, 1], got 1.5");
}

struct CountRow {
  std::string name;
  double p;
  int64_t n;
  int64_t train;
};

class TrainCountTest : public ::testing::TestWithParam<CountRow> {};

TEST_P(TrainCountTest, FloorOfPTimesNExact) {
  EXPECT_EQ(TrainCountUpTo(GetParam().p, GetParam().n), GetParam().train);
}

constexpr int64_t kTera = 1'000'000'000'000;

INSTANTIATE_TEST_SUITE_P(
    Values, TrainCountTest,
    ::testing::Values(
        CountRow{"PointEightOfTen", 0.8, 10, 8}, CountRow{"PointSevenOfTen", 0.7, 10, 7},
        // 0.29 * 100 is 28.999999999999996 in doubles; the exact rational gives 29.
        CountRow{"PointTwentyNineOfHundred", 0.29, 100, 29}, CountRow{"PointOneOfThree", 0.1, 3, 0},
        CountRow{"HalfOfOne", 0.5, 1, 0}, CountRow{"HalfOfTwo", 0.5, 2, 1},
        CountRow{"ThirdRoundsToMillionths", 1.0 / 3, 1'000'000, 333'333},
        CountRow{"ZeroSamples", 0.8, 0, 0}, CountRow{"NegativeSamples", 0.8, -5, 0},
        CountRow{"ZeroProbTera", 0.0, kTera, 0}, CountRow{"OneProbTera", 1.0, kTera, kTera},
        CountRow{"PointEightTera", 0.8, kTera, 800'000'000'000},
        CountRow{"MillionthsTera", 0.123457, kTera, 123'457'000'000},
        CountRow{"OneProbInt64Max", 1.0, std::numeric_limits<int64_t>::max(),
                 std::numeric_limits<int64_t>::max()},
        CountRow{"UnvalidatedAboveOneClamped", 1.5, 10, 10},
        CountRow{"UnvalidatedNegativeClamped", -0.5, 10, 0},
        CountRow{"UnvalidatedNaNIsZero", std::nan(""), 10, 0}),
    RowName<CountRow>);

TEST(IsTrainSample, PointEightOverTenSamples) {
  // floor(0.8 n) for n = 1..10: 0 1 2 3 4 4 5 6 7 8 -> samples 1 and 6 go to eval.
  const std::vector<bool> expected = {false, true, true, true, true, false, true, true, true, true};
  int train = 0;
  for (int64_t n = 1; n <= 10; ++n) {
    EXPECT_EQ(IsTrainSample(0.8, n), expected[n - 1]) << "n=" << n;
    train += IsTrainSample(0.8, n) ? 1 : 0;
  }
  EXPECT_EQ(train, 8);
  EXPECT_FALSE(IsTrainSample(0.8, 0));
  EXPECT_FALSE(IsTrainSample(1.0, -1));
}

// A consumer that sees new samples in batches and keeps only the running total, as the job does.
struct Splitter {
  double p;
  int64_t seen = 0;
  int64_t train = 0;
  int64_t eval = 0;
  // Returns the number of train samples in this batch.
  int64_t Consume(int64_t batch) {
    int64_t batch_train = 0;
    for (int64_t i = 0; i < batch; ++i) {
      ++seen;
      if (IsTrainSample(p, seen)) {
        ++train;
        ++batch_train;
      } else {
        ++eval;
      }
    }
    return batch_train;
  }
};

TEST(SplitProperty, ExactlyFloorPNOverAnyBatching) {
  // p as exact millionths, so the expected count is computed independently in integers.
  const int64_t p_micros[] = {0,       1,       50'000,  123'457, 290'000,  333'333,
                              500'000, 700'000, 800'000, 999'999, 1'000'000};
  std::mt19937_64 rng(20240601);
  for (const int64_t micro : p_micros) {
    const double p = static_cast<double>(micro) / 1e6;
    for (int trial = 0; trial < 40; ++trial) {
      SCOPED_TRACE("p_micro=" + std::to_string(micro) + " trial=" + std::to_string(trial));
      const int64_t total = std::uniform_int_distribution<int64_t>(0, 3000)(rng);
      const int64_t max_batch = std::uniform_int_distribution<int64_t>(1, 64)(rng);
      Splitter s{p};
      while (s.seen < total) {
        int64_t batch = std::uniform_int_distribution<int64_t>(0, max_batch)(rng);
        if (batch > total - s.seen) batch = total - s.seen;
        const int64_t before = s.seen;
        const int64_t batch_train = s.Consume(batch);
        ASSERT_EQ(batch_train, TrainCountUpTo(p, s.seen) - TrainCountUpTo(p, before));
        ASSERT_EQ(s.train, micro * s.seen / 1'000'000);  // every prefix is exact too
      }
      EXPECT_EQ(s.seen, total);
      EXPECT_EQ(s.train + s.eval, total);
      EXPECT_EQ(s.train, micro * total / 1'000'000);
    }
  }
}

TEST(SplitProperty, B1_NoSampleSkippedAndTrainProbOneWorks) {
  struct Row {
    const char* name;
    double p;
    int64_t batch;
    int64_t total;
    int64_t train;
  };
  const Row rows[] = {
      {"ProbOneSingleSampleBatches", 1.0, 1, 1000, 1000},
      {"ProbOneOneBigBatch", 1.0, 1000, 1000, 1000},
      {"ProbZeroSingleSampleBatches", 0.0, 1, 1000, 0},
      {"ProbZeroOneBigBatch", 0.0, 1000, 1000, 0},
      // Go's int(0.8 * 1) per one-line batch sent all of these to eval.
      {"PointEightSingleSampleBatches", 0.8, 1, 10, 8},
      {"PointEightBatchesOfThree", 0.8, 3, 10, 8},
      {"PointSevenSingleSampleBatches", 0.7, 1, 10, 7},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Splitter s{r.p};
    while (s.seen < r.total) s.Consume(std::min(r.batch, r.total - s.seen));
    EXPECT_EQ(s.seen, r.total);
    EXPECT_EQ(s.train + s.eval, r.total);  // every sample assigned exactly once
    EXPECT_EQ(s.train, r.train);
  }
  for (int64_t n = 1; n <= 1000; ++n) {
    ASSERT_TRUE(IsTrainSample(1.0, n)) << n;
    ASSERT_FALSE(IsTrainSample(0.0, n)) << n;
  }
}

}  // namespace
}  // namespace sedna::core
