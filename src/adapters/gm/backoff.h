// Reconnect delay policy for the GM link: capped exponential backoff with full jitter.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace sedna::gm {

// The n-th delay since construction or the last Reset() (n = 0, 1, ...) is drawn uniformly from
// [0, min(max, initial * 2^n)] milliseconds. initial is clamped to >= 1 ms and max to >= initial.
// The same seed yields the same sequence; seed 0 draws a seed from std::random_device.
// Clock: none of the controller's (core/clock.h). Only when std::random_device fails is the seed
// taken from the steady clock's reading: entropy for the jitter, never a time anyone compares.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed = 0);

  std::chrono::milliseconds Next();
  // The upper bound of the delay the next Next() returns.
  std::chrono::milliseconds cap() const { return cap_; }
  void Reset() { cap_ = initial_; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds cap_;
  std::mt19937_64 rng_;
};

}  // namespace sedna::gm
