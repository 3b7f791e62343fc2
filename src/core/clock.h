// The Clock port: where the controller reads the time. The composition root hands one to the
// controller's Context (the system clock, adapters/clock/system_clock.h); unit tests hand a
// FakeClock (adapters/clock/fake_clock.h), set and advanced by the test.
//
// Core code never takes a Clock: core::il::Step and its kin get the time as a value (`now`), read
// by their caller from the Clock. This header is the port's interface only: it reads no clock.
//
// What reads the time through a Clock: every part of the controller (app/cluster, through
// Context::clock), the store's timestamps (StoreOptions::clock), hot-update configs'
// model_update_time (storage::Context::clock), and the local GM (LocalGmOptions::clock). What
// keeps the system clock, because its time is IO-local (never persisted, never compared with a
// persisted time, never deciding what the controller does): asio timers (they wait real time; a
// part arms one with a duration computed from its Clock), the HTTP server's and the process
// runner's timeouts, the GM link's backoff jitter seed (gm/backoff.h), the S3 client's SigV4
// request date (s3/s3_client.h), the log lines' timestamps, and the one-shot CLI commands.
#pragma once

#include <chrono>
#include <cstdint>

namespace sedna::core {

class Clock {
 public:
  using WallTime = std::chrono::system_clock::time_point;
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Wall time: what is persisted, sent upstream, shown, or compared with a persisted time.
  virtual WallTime Now() const = 0;
  // Monotonic time: intervals measured within this process (never persisted). An asio timer is
  // armed with a duration computed from it (expires_after), never with one of its time points.
  virtual SteadyTime Steady() const = 0;
};

// Milliseconds since the Unix epoch.
inline int64_t UnixMs(Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
inline int64_t UnixMs(const Clock& c) { return UnixMs(c.Now()); }

}  // namespace sedna::core
