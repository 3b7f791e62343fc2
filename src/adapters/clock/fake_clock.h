// A Clock (core/clock.h) for tests: it stands still until the test sets or advances it. Both
// readings start at fixed, non-zero times (so that a default time_point{} lies far in the past, as
// it does for the system clock) and Advance moves both. Reads and writes are atomic, so a test may
// read it from the blocking-work pool while the loop advances it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/clock.h"

namespace sedna::clock {

class FakeClock final : public core::Clock {
 public:
  // 2026-01-01T00:00:00Z.
  static constexpr int64_t kStartUnixMs = 1767225600000;
  // The steady reading at the start: one day after the steady clock's epoch.
  static constexpr int64_t kStartSteadyMs = 86400000;

  WallTime Now() const override {
    return WallTime(
        std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(wall_ns_.load())));
  }
  SteadyTime Steady() const override {
    return SteadyTime(std::chrono::duration_cast<SteadyTime::duration>(
        std::chrono::nanoseconds(steady_ns_.load())));
  }

  // Moves both readings forward by `d` (not negative).
  void Advance(std::chrono::nanoseconds d) {
    wall_ns_ += d.count();
    steady_ns_ += d.count();
  }
  // Sets the wall time only (a wall clock may jump, either way); the steady reading stays.
  void SetNow(WallTime t) {
    wall_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  void SetUnixMs(int64_t ms) { wall_ns_ = ms * 1000000; }

 private:
  std::atomic<int64_t> wall_ns_{kStartUnixMs * 1000000};
  std::atomic<int64_t> steady_ns_{kStartSteadyMs * 1000000};
};

}  // namespace sedna::clock
