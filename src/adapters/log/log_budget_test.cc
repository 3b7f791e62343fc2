#include "adapters/log/log_budget.h"

#include <gtest/gtest.h>

namespace sedna::app {
namespace {

using namespace std::chrono_literals;
using Clock = LogBudget::Clock;

int AllowedOf(LogBudget& b, Clock::time_point at, int lines) {
  int n = 0;
  for (int i = 0; i < lines; ++i) n += b.Allow(at);
  return n;
}

TEST(LogBudgetTest, ABurstIsWrittenThenTheRestIsCounted) {
  LogBudget b(5, 2);
  const Clock::time_point t0{1h};
  EXPECT_EQ(AllowedOf(b, t0, 8), 5);
  Clock::time_point since;
  EXPECT_EQ(b.TakeSuppressed(&since), 3);
  EXPECT_EQ(since, t0);
  EXPECT_EQ(b.TakeSuppressed(), 0);  // taken
}

TEST(LogBudgetTest, TheBudgetRefillsAtItsRateUpToTheBurst) {
  LogBudget b(5, 2);
  const Clock::time_point t0{1h};
  EXPECT_EQ(AllowedOf(b, t0, 5), 5);
  EXPECT_FALSE(b.Allow(t0 + 100ms));  // 0.2 of a line
  EXPECT_TRUE(b.Allow(t0 + 600ms));   // 1.2 lines earned
  EXPECT_FALSE(b.Allow(t0 + 700ms));
  // A long quiet refills the whole burst, not more.
  EXPECT_EQ(AllowedOf(b, t0 + 1h, 9), 5);
  Clock::time_point since;
  EXPECT_EQ(b.TakeSuppressed(&since), 1 + 1 + 4);
  EXPECT_EQ(since, t0 + 100ms);
}

TEST(LogBudgetTest, ASteadyFloodIsWrittenAtTheRate) {
  LogBudget b(10, 5);
  const Clock::time_point t0{1h};
  int written = 0;
  // 30,000 lines a second for 10 s.
  for (int i = 0; i < 300000; ++i) written += b.Allow(t0 + i * 33333ns);
  EXPECT_GE(written, 10 + 5 * 10 - 1);
  EXPECT_LE(written, 10 + 5 * 10 + 1);
  EXPECT_EQ(b.TakeSuppressed(), 300000 - written);
}

TEST(LogBudgetTest, BadParametersStillAllowALine) {
  LogBudget b(0, -1);
  EXPECT_EQ(b.burst(), 1);
  EXPECT_GT(b.per_second(), 0);
  EXPECT_TRUE(b.Allow(Clock::time_point{1h}));
}

}  // namespace
}  // namespace sedna::app
