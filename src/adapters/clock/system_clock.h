// The system clock behind the Clock port (core/clock.h): std::chrono::system_clock for wall time,
// std::chrono::steady_clock for monotonic time. Thread-safe.
#pragma once

#include "core/clock.h"

namespace sedna::clock {

// The process's one system clock (lives as long as the process).
const core::Clock& System();

}  // namespace sedna::clock
