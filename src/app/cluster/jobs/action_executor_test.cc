// The action executor (action_executor.h): a pool result steps the job it was made for only while
// that job is still there as the same incarnation; refused-on-the-loop results follow the same
// rule. (That the core's Event and the runner's Action dispatch are exhaustive is a compile-time
// property: core/overloaded.h; no test.)
#include "app/cluster/jobs/action_executor.h"

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/cluster/jobs/job_entry.h"
#include "app/cluster/part_test_env.h"

namespace sedna::app {
namespace {

using core::il::Event;
using testing::ClusterTestEnv;

class ActionExecutorTest : public ::testing::Test {
 protected:
  // The job table as the runner keeps it: one entry per key, its incarnation.
  void Put(const std::string& key, uint64_t incarnation) {
    auto e = std::make_unique<JobEntry>();
    e->key = key;
    e->incarnation = incarnation;
    jobs[key] = std::move(e);
  }
  // Waits until the pool has run everything posted to it, then runs what it posted back.
  void DrainPool() {
    env.ctx().pool.join();
    env.RunReady();
  }

  ClusterTestEnv env;
  InboundQueue inbound{env.io, {[] { return true; }, [] { return size_t{0}; }}};
  std::map<std::string, std::unique_ptr<JobEntry>> jobs;
  struct Stepped {
    std::string key;
    uint64_t incarnation;
    Event ev;
  };
  std::vector<Stepped> stepped;
  ActionExecutor executor{
      env.io,
      env.ctx().pool,
      inbound,
      [this](const std::string& key, uint64_t inc) -> JobEntry* {
        auto it = jobs.find(key);
        return it == jobs.end() || it->second->incarnation != inc ? nullptr : it->second.get();
      },
      [this](JobEntry& e, const Event& ev) {
        stepped.push_back({e.key, e.incarnation, ev});
        trace.push_back("step " + e.key);
      },
      [this] { trace.push_back("begin"); },
      [this] { trace.push_back("end"); }};
  std::vector<std::string> trace;  // steps and batch brackets, in order
};

TEST_F(ActionExecutorTest, APoolResultStepsTheSameIncarnationOnTheLoop) {
  Put("default/il/a", 1);
  std::atomic<bool> on_pool_thread{false};
  const auto loop = std::this_thread::get_id();
  executor.RunOnPool({"default/il/a", 1}, [&]() -> Event {
    on_pool_thread = std::this_thread::get_id() != loop;
    return core::il::FileWritten{core::il::Work::kWriteTrain, 3, true, ""};
  });
  ASSERT_TRUE(env.RunUntil([&] { return !stepped.empty(); }));
  EXPECT_TRUE(on_pool_thread);
  ASSERT_EQ(stepped.size(), 1u);
  EXPECT_EQ(stepped[0].incarnation, 1u);
  const auto* w = std::get_if<core::il::FileWritten>(&stepped[0].ev);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->round, 3);
  EXPECT_TRUE(w->ok);
}

// RunOnPoolThen: a Finish called on the pool posts its event at once, as RunOnPool's; those
// called on the loop in one handler (the syncs' completions, reaped together) go out as one event,
// which steps each job still there between the batch brackets.
TEST_F(ActionExecutorTest, ResultsFinishedOnTheLoopTogetherStepAsOneBatch) {
  Put("default/il/a", 1);
  Put("default/il/b", 1);
  Put("default/il/c", 1);
  std::vector<ActionExecutor::Finish> finishes(3);
  const char* keys[] = {"default/il/a", "default/il/b", "default/il/c"};
  for (int i = 0; i < 3; ++i) {
    executor.RunOnPoolThen({keys[i], 1},
                           [&, i](ActionExecutor::Finish f) { finishes[i] = std::move(f); });
  }
  env.ctx().pool.join();       // the works ran and kept their Finish
  jobs.erase("default/il/c");  // gone before its result: dropped from the batch
  boost::asio::post(env.io, [&] {
    for (int i = 0; i < 3; ++i) {
      finishes[i](core::il::FileWritten{core::il::Work::kWriteTrain, i, true, ""});
    }
    EXPECT_TRUE(stepped.empty());  // gathered, not stepped in the caller's stack
  });
  env.RunReady();
  EXPECT_EQ(trace,
            (std::vector<std::string>{"begin", "step default/il/a", "step default/il/b", "end"}));
}

TEST_F(ActionExecutorTest, AResultFinishedOnThePoolIsPostedAtOnceOnItsOwn) {
  Put("default/il/a", 1);
  executor.RunOnPoolThen({"default/il/a", 1}, [](ActionExecutor::Finish f) {
    f(core::il::ModelCopied{true, ""});
  });
  ASSERT_TRUE(env.RunUntil([&] { return !stepped.empty(); }));
  EXPECT_EQ(trace, (std::vector<std::string>{"step default/il/a"}));  // no batch for one
}

TEST_F(ActionExecutorTest, AResultForAReplacedIncarnationIsDropped) {
  Put("default/il/a", 1);
  executor.RunOnPool({"default/il/a", 1}, []() -> Event {
    return core::il::ModelCopied{true, ""};
  });
  Put("default/il/a", 2);  // deleted and re-created under the same key before the result is back
  DrainPool();
  EXPECT_TRUE(stepped.empty());
}

TEST_F(ActionExecutorTest, AResultForADeletedJobIsDropped) {
  Put("default/il/a", 1);
  Put("default/il/b", 1);
  executor.RunOnPool({"default/il/a", 1}, []() -> Event {
    return core::il::ModelCopied{true, ""};
  });
  executor.RunOnPool({"default/il/b", 1}, []() -> Event {
    return core::il::ModelCopied{false, "disk full"};
  });
  jobs.erase("default/il/a");
  DrainPool();
  ASSERT_EQ(stepped.size(), 1u);
  EXPECT_EQ(stepped[0].key, "default/il/b");
  const auto* c = std::get_if<core::il::ModelCopied>(&stepped[0].ev);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->error, "disk full");
}

TEST_F(ActionExecutorTest, ALoopResultIsPostedAndFollowsTheSameRule) {
  Put("default/il/a", 2);
  executor.Post({"default/il/a", 1}, core::il::ModelCopied{false, "outside"});
  executor.Post({"default/il/a", 2}, core::il::ModelCopied{false, "outside"});
  EXPECT_TRUE(stepped.empty());  // posted: not in the caller's stack
  env.RunReady();
  ASSERT_EQ(stepped.size(), 1u);
  EXPECT_EQ(stepped[0].incarnation, 2u);
}

TEST_F(ActionExecutorTest, AddedOutsideADispatchStepsAtOnce) {
  Put("default/il/a", 1);
  executor.Add({"default/il/a", 1}, core::il::EvalForwardWritten{42});
  ASSERT_EQ(stepped.size(), 1u);
  const auto* f = std::get_if<core::il::EvalForwardWritten>(&stepped[0].ev);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->at_ms, 42);
  executor.Add({"default/il/a", 7}, core::il::EvalForwardWritten{43});
  EXPECT_EQ(stepped.size(), 1u);
}

}  // namespace
}  // namespace sedna::app
