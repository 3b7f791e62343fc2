#include "app/standalone/worker_security.h"

#include <gtest/gtest.h>

#include <string>

namespace sedna::app {
namespace {

using NJ = nlohmann::json;
const std::string kPath = "spec.trainSpec.template";
const std::string kPod = kPath + ".spec.securityContext";
const std::string kC0 = kPath + ".spec.containers[0].securityContext";

NJ Template(const NJ& pod_ctx, const NJ& container_ctx) {
  NJ c{{"name", "w"}, {"image", "x"}};
  if (!container_ctx.is_null()) c["securityContext"] = container_ctx;
  NJ spec{{"containers",
           NJ::array({c, NJ{{"name", "side"}, {"securityContext", {{"privileged", true}}}}})}};
  if (!pod_ctx.is_null()) spec["securityContext"] = pod_ctx;
  return NJ{{"spec", spec}};
}

TEST(WorkerSecurityTest, ContainerWinsOverPodAndUnhonouredFieldsAreNamed) {
  auto r = ReadSecurityRequest(Template({{"runAsUser", 1000},
                                         {"runAsGroup", 2000},
                                         {"fsGroup", 3000},
                                         {"supplementalGroups", {5, 6}}},
                                        {{"runAsUser", 65534},
                                         {"capabilities", {{"drop", {"ALL"}}}},
                                         {"allowPrivilegeEscalation", false},
                                         {"readOnlyRootFilesystem", true}}),
                               kPath);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE(r->run_as_user);
  EXPECT_EQ(r->run_as_user->value, 65534);
  EXPECT_EQ(r->run_as_user->path, kC0 + ".runAsUser");
  ASSERT_TRUE(r->run_as_group);
  EXPECT_EQ(r->run_as_group->value, 2000);
  EXPECT_EQ(r->supplemental_groups, (std::vector<gid_t>{5, 6}));
  EXPECT_TRUE(r->no_new_privs);
  // Only the first container runs; the sidecar's fields are not looked at.
  EXPECT_EQ(r->unhonoured, (std::vector<std::string>{kPod + ".fsGroup", kC0 + ".capabilities",
                                                     kC0 + ".readOnlyRootFilesystem"}));
}

TEST(WorkerSecurityTest, WrongTypesNameTheField) {
  struct Row {
    NJ pod, container;
    std::string error;
  } rows[] = {
      {nullptr, {{"runAsUser", "root"}}, kC0 + ".runAsUser: expected an integer"},
      {nullptr, {{"runAsUser", -1}}, kC0 + ".runAsUser: expected an integer"},
      {{{"runAsGroup", 1.5}}, nullptr, kPod + ".runAsGroup: expected an integer"},
      {nullptr, {{"runAsNonRoot", "yes"}}, kC0 + ".runAsNonRoot: expected true or false"},
      {{{"supplementalGroups", 5}}, nullptr, kPod + ".supplementalGroups: expected a list"},
      {{{"supplementalGroups", {1, "x"}}}, nullptr, kPod + ".supplementalGroups[1]: expected"},
      {"strict", nullptr, kPod + ": expected an object"},
  };
  for (const auto& row : rows) {
    auto r = ReadSecurityRequest(Template(row.pod, row.container), kPath);
    ASSERT_FALSE(r.ok()) << row.error;
    EXPECT_EQ(r.message().rfind(row.error, 0), 0u) << r.message();
  }
}

TEST(WorkerSecurityTest, RootLcAppliesTheIds) {
  auto r = ReadSecurityRequest(
      Template({{"supplementalGroups", NJ::array({7})}}, {{"runAsUser", 65534}}), kPath);
  ASSERT_TRUE(r.ok());
  auto c = ResolveCredentials(*r, 0, 0);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->uid, 65534u);
  EXPECT_EQ(c->gid, 0u) << "runAsGroup unset: group 0, as Kubernetes documents";
  EXPECT_EQ(c->groups, (std::vector<gid_t>{7}));
  EXPECT_TRUE(c->not_applied.empty());
}

TEST(WorkerSecurityTest, NothingAskedKeepsTheLcsCredentials) {
  auto r = ReadSecurityRequest(Template(nullptr, nullptr), kPath);
  ASSERT_TRUE(r.ok());
  auto c = ResolveCredentials(*r, 0, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->uid);
  EXPECT_FALSE(c->gid);
  EXPECT_FALSE(c->no_new_privs);
  EXPECT_TRUE(ReadSecurityRequest(NJ(), kPath).ok()) << "no template at all";
}

TEST(WorkerSecurityTest, RunAsNonRootRefusesAUid0Worker) {
  struct Row {
    NJ pod, container;
    std::string error;
  } rows[] = {
      {{{"runAsNonRoot", true}},
       nullptr,
       kPod + ".runAsNonRoot: true, but the worker would run as uid 0 (no runAsUser is set and "
              "the LC runs as root)"},
      {nullptr,
       {{"runAsNonRoot", true}, {"runAsUser", 0}},
       kC0 + ".runAsNonRoot: true, but the worker would run as uid 0 (" + kC0 + ".runAsUser is 0)"},
  };
  for (const auto& row : rows) {
    auto r = ReadSecurityRequest(Template(row.pod, row.container), kPath);
    ASSERT_TRUE(r.ok()) << r.message();
    auto c = ResolveCredentials(*r, 0, 0);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.message(), row.error);
  }
  // A container's runAsNonRoot: false overrides the pod's true.
  auto r =
      ReadSecurityRequest(Template({{"runAsNonRoot", true}}, {{"runAsNonRoot", false}}), kPath);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(ResolveCredentials(*r, 0, 0).ok());
  // With a non-zero runAsUser it holds.
  r = ReadSecurityRequest(Template({{"runAsNonRoot", true}}, {{"runAsUser", 1000}}), kPath);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(ResolveCredentials(*r, 0, 0).ok());
}

TEST(WorkerSecurityTest, NonRootLcRunsWorkersAsItselfAndSaysSo) {
  auto r =
      ReadSecurityRequest(Template({{"runAsNonRoot", true}, {"supplementalGroups", NJ::array({7})}},
                                   {{"runAsUser", 65534}, {"runAsGroup", 1000}}),
                          kPath);
  ASSERT_TRUE(r.ok());
  auto c = ResolveCredentials(*r, 1000, 1000);
  ASSERT_TRUE(c.ok()) << "runAsNonRoot holds: the worker runs as uid 1000";
  EXPECT_FALSE(c->uid);
  EXPECT_FALSE(c->gid);
  EXPECT_EQ(c->not_applied,
            (std::vector<std::string>{
                kC0 + ".runAsUser: 65534 not applied: the LC is not root; the worker runs as uid "
                      "1000",
                kPod + ".supplementalGroups not applied: the LC is not root; the worker has the "
                       "LC's groups"}))
      << "runAsGroup 1000 is the LC's gid: nothing to say";
}

}  // namespace
}  // namespace sedna::app
