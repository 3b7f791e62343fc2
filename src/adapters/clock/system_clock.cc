// The system clock (system_clock.h).
#include "adapters/clock/system_clock.h"

namespace sedna::clock {

namespace {

class SystemClock final : public core::Clock {
 public:
  WallTime Now() const override { return std::chrono::system_clock::now(); }
  SteadyTime Steady() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

const core::Clock& System() {
  static const SystemClock clock;
  return clock;
}

}  // namespace sedna::clock
