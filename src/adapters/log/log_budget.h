// A budget for the log lines that outside input causes (a worker's report, what stepping a job on
// it says): a token bucket of `burst` lines refilled at `per_second`. A line over it is counted,
// not written, so that a worker repeating a report 30,000 times a second neither fills the disk
// with lines nor spends the LC's CPU on them (docs/security.md, "Log flooding").
//
// Not thread-safe: one owner (a job entry, on the loop thread).
#pragma once

#include <chrono>
#include <cstdint>

namespace sedna::app {

class LogBudget {
 public:
  using Clock = std::chrono::steady_clock;

  // burst >= 1; per_second > 0.
  LogBudget(int burst, double per_second);

  // True when a line may be written at `now`; otherwise the line is counted as suppressed.
  // `now` must not go backwards (a steady clock).
  bool Allow(Clock::time_point now);

  // The lines suppressed since the last call, and when the first of them was (meaningless when
  // the count is 0). Call it after an Allow that returned true, to say so before the line.
  int64_t TakeSuppressed(Clock::time_point* since = nullptr);

  int burst() const { return burst_; }
  double per_second() const { return per_second_; }

 private:
  int burst_;
  double per_second_;
  double tokens_;
  Clock::time_point refilled_{};
  bool started_ = false;
  int64_t suppressed_ = 0;
  Clock::time_point first_suppressed_{};
};

}  // namespace sedna::app
