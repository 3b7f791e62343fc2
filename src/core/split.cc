#include "core/split.h"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

namespace sedna::core {
namespace {

int64_t TrainProbMicro(double p) {
  if (std::isnan(p) || p <= 0) return 0;
  if (p >= 1) return kTrainProbScale;
  return std::llround(p * static_cast<double>(kTrainProbScale));
}

}  // namespace

Status ValidateTrainProb(double p) {
  if (std::isfinite(p) && p >= 0 && p <= 1) return Status::Ok();
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), p);
  const std::string text = r.ec == std::errc() ? std::string(buf, r.ptr) : "?";
  return Status::Error("trainProb: must be a number within [0, 1], got " + text);
}

int64_t TrainCountUpTo(double p, int64_t n) {
  if (n <= 0) return 0;
  const __int128 product = static_cast<__int128>(TrainProbMicro(p)) * n;
  return static_cast<int64_t>(product / kTrainProbScale);
}

bool IsTrainSample(double p, int64_t n) {
  if (n <= 0) return false;
  return TrainCountUpTo(p, n) > TrainCountUpTo(p, n - 1);
}

}  // namespace sedna::core
