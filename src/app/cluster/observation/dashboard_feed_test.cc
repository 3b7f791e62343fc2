#include "app/cluster/observation/dashboard_feed.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sedna::app {
namespace {

// The feed's rollback command for one kept version of a job deploying to `target`.
std::string RollbackCommandInFeed(const std::string& target) {
  std::vector<JobView> jobs(1);
  jobs[0].kind = "IncrementalLearningJob";
  jobs[0].ns = "default";
  jobs[0].name = "j";
  std::map<std::string, JobHistory> history;
  JobHistory& h = history["default/incrementallearningjob/j"];
  h.kind = "IncrementalLearningJob";
  h.ns = "default";
  h.name = "j";
  h.deploy_target = target;
  DashboardFiles files;
  files.versions[target] = {storage::ModelVersion{3, "/rootfs/x", 10, 1700000000}};
  DashboardInput in;
  in.jobs = &jobs;
  in.history = &history;
  in.files = &files;
  const auto feed = nlohmann::json::parse(EncodeDashboardJson(in));
  return feed.at("jobs").at(0).at("versions").at(0).at("command").get<std::string>();
}

// [D:I21.8]c: a deploy target from a GM object is one quoted word in the command an
// operator pastes, not shell syntax.
TEST(DashboardFeed, RollbackCommandQuotesTheDeployTarget) {
  EXPECT_EQ(RollbackCommandInFeed("/models/deploy/model.pb"),
            "sedna-lc rollback-model /models/deploy/model.pb --version 3");
  EXPECT_EQ(RollbackCommandInFeed("/models/a;touch${IFS}x;#/deploy.pb"),
            "sedna-lc rollback-model '/models/a;touch${IFS}x;#/deploy.pb' --version 3");
  EXPECT_EQ(RollbackCommandInFeed("/models/it's here.pb"),
            "sedna-lc rollback-model '/models/it'\\''s here.pb' --version 3");
}

}  // namespace
}  // namespace sedna::app
