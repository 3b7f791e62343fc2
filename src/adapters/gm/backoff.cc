#include "adapters/gm/backoff.h"

#include <algorithm>

namespace sedna::gm {

namespace {

uint64_t SeedOrRandom(uint64_t seed) {
  if (seed != 0) return seed;
  try {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  } catch (...) {
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
}

}  // namespace

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed)
    : initial_(std::max(initial, std::chrono::milliseconds(1))),
      max_(std::max(max, initial_)),
      cap_(initial_),
      rng_(SeedOrRandom(seed)) {}

std::chrono::milliseconds Backoff::Next() {
  std::uniform_int_distribution<int64_t> dist(0, cap_.count());
  std::chrono::milliseconds delay(dist(rng_));
  cap_ = cap_ >= max_ / 2 ? max_ : cap_ * 2;
  return delay;
}

}  // namespace sedna::gm
