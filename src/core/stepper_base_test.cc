#include "core/stepper_base.h"

#include <gtest/gtest.h>

namespace sedna::core::internal {
namespace {

// The log name of a worker report, sized once: a name that outgrew its reserve would have been
// reallocated to a larger capacity than its length. (This one is longer than twice the string's
// inline capacity, so libstdc++'s reserve gives exactly the capacity asked for.)
TEST(ReportWho, NamesTheWorkerKindAndStatusInOneAllocation) {
  const std::string who = ReportWho("eval-worker-2bq7d", "eval", "completed");
  EXPECT_EQ(who, "worker eval-worker-2bq7d (eval, completed)");
  EXPECT_EQ(who.capacity(), who.size());
  EXPECT_EQ(ReportWho("", "", ""), "worker  (, )");
}

}  // namespace
}  // namespace sedna::core::internal
