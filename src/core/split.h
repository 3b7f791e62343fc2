// Train/eval split of new dataset samples by running totals (design-notes §D4): the split depends
// only on a sample's ordinal among the job's new samples, never on how samples were batched.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace sedna::core {

// trainProb is used as an exact rational of millionths: p_micro = llround(p * 1e6).
inline constexpr int64_t kTrainProbScale = 1'000'000;

// Ok iff p is finite and within [0, 1]; the error names `trainProb`.
Status ValidateTrainProb(double p);

// The train samples among the first n new samples: floor(p_micro * n / 1e6), exact in integers
// for any n >= 0 (no overflow for any int64_t n). n <= 0 gives 0. An unvalidated p is clamped to
// [0, 1] and NaN counts as 0.
int64_t TrainCountUpTo(double p, int64_t n);

// Whether the n-th new sample (1-based) goes to train: TrainCountUpTo(p, n) >
// TrainCountUpTo(p, n - 1). Over any N samples exactly TrainCountUpTo(p, N) are train. n <= 0
// gives false.
bool IsTrainSample(double p, int64_t n);

}  // namespace sedna::core
