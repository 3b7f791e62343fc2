// The FakeClock the unit tests drive, and the system clock behind the port (core/clock.h).
#include "adapters/clock/fake_clock.h"

#include <gtest/gtest.h>

#include "adapters/clock/system_clock.h"

namespace sedna::clock {
namespace {

TEST(FakeClock, StandsStillUntilAdvancedAndMovesBothReadings) {
  FakeClock c;
  EXPECT_EQ(core::UnixMs(c), FakeClock::kStartUnixMs);
  const auto steady = c.Steady();
  EXPECT_EQ(c.Steady(), steady);
  EXPECT_GT(steady - core::Clock::SteadyTime{}, std::chrono::hours(1));
  c.Advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(core::UnixMs(c), FakeClock::kStartUnixMs + 1500);
  EXPECT_EQ(c.Steady() - steady, std::chrono::milliseconds(1500));
}

TEST(FakeClock, SetNowMovesTheWallTimeOnly) {
  FakeClock c;
  const auto steady = c.Steady();
  c.SetUnixMs(1000);
  EXPECT_EQ(core::UnixMs(c), 1000);
  c.SetNow(core::Clock::WallTime(std::chrono::seconds(7)));
  EXPECT_EQ(core::UnixMs(c), 7000);
  EXPECT_EQ(c.Steady(), steady);
}

TEST(SystemClock, ReadsTheSystemClocks) {
  const core::Clock& c = System();
  EXPECT_EQ(&c, &System());
  const auto wall = std::chrono::system_clock::now();
  EXPECT_LE(std::chrono::abs(c.Now() - wall), std::chrono::seconds(5));
  const auto s1 = c.Steady();
  const auto s2 = c.Steady();
  EXPECT_LE(s1, s2);
  EXPECT_LE(std::chrono::abs(s2 - std::chrono::steady_clock::now()), std::chrono::seconds(5));
}

}  // namespace
}  // namespace sedna::clock
