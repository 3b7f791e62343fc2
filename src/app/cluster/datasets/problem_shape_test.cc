#include "app/cluster/datasets/problem_shape.h"

#include <gtest/gtest.h>

namespace sedna::app {
namespace {

TEST(ProblemShapeTest, NumbersCollapseWordsDoNot) {
  struct Row {
    const char* a;
    const char* b;
    bool same;
  };
  const Row rows[] = {
      {"GET s3://b/k: connection cut after 1234 of 5000 bytes (4 attempts)",
       "GET s3://b/k: connection cut after 77 of 5000 bytes (2 attempts)", true},
      {"HEAD s3://b/k: 403 SignatureDoesNotMatch", "HEAD s3://b/k: 403 SignatureDoesNotMatch",
       true},
      {"HEAD s3://b/k: 403 SignatureDoesNotMatch", "HEAD s3://b/k: 404 NoSuchBucket", false},
      {"s3://b/k: no such object", "s3://b/k: connection refused", false},
      {"", "", true},
      {"1", "22", true},
      {"a1b", "ab", false},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ProblemShape(r.a) == ProblemShape(r.b), r.same) << r.a << " | " << r.b;
  }
  EXPECT_EQ(ProblemShape("cut after 1234 of 50 bytes"), "cut after # of # bytes");
}

}  // namespace
}  // namespace sedna::app
