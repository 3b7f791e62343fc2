#include "adapters/log/log_budget.h"

#include <algorithm>

namespace sedna::app {

LogBudget::LogBudget(int burst, double per_second)
    : burst_(std::max(burst, 1)), per_second_(per_second > 0 ? per_second : 1), tokens_(burst_) {}

bool LogBudget::Allow(Clock::time_point now) {
  if (!started_) {
    started_ = true;
    refilled_ = now;
  } else if (now > refilled_) {
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * per_second_);
    refilled_ = now;
  }
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  if (suppressed_++ == 0) first_suppressed_ = now;
  return false;
}

int64_t LogBudget::TakeSuppressed(Clock::time_point* since) {
  const int64_t n = suppressed_;
  if (since) *since = first_suppressed_;
  suppressed_ = 0;
  return n;
}

}  // namespace sedna::app
