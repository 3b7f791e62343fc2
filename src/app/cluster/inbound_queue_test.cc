// The inbound queue (inbound_queue.h): order, coalescing by key, a key added again while it is
// processed, and the acknowledged reports committed before any event is handed out.
#include "app/cluster/inbound_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace sedna::app {
namespace {

// Stands in for the report intake: `pending` reports, committed unless `fail`; counts commits.
struct FakeReports {
  size_t pending = 0;
  bool fail = false;
  int commits = 0;
  std::function<void()> on_commit;  // the committed steps' actions
  InboundQueue::Reports Hooks() {
    return {[this] {
              ++commits;
              if (fail) return false;
              pending = 0;
              if (on_commit) on_commit();
              return true;
            },
            [this] { return pending; }};
  }
};

class InboundQueueTest : public ::testing::Test {
 protected:
  // An event that records its name, and the reports pending when it ran.
  InboundQueue::Event Ev(const std::string& key, const std::string& name) {
    return {key, name, [this, name] {
              ran.push_back(name);
              pending_seen.push_back(reports.pending);
            }};
  }

  boost::asio::io_context io;
  FakeReports reports;
  InboundQueue q{io, reports.Hooks()};
  std::vector<std::string> ran;
  std::vector<size_t> pending_seen;
};

// Events added outside a dispatch run at once, in the caller's stack, in arrival order.
TEST_F(InboundQueueTest, AddedEventsRunAtOnceInOrder) {
  q.Add(Ev("", "a"));
  EXPECT_EQ(ran, std::vector<std::string>{"a"});
  q.Add(Ev("", "b"));
  q.Add(Ev("k", "c"));
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(q.waiting(), 0u);
}

// What a handler adds runs after it returns, never inside it.
TEST_F(InboundQueueTest, AnEventAddedByAHandlerRunsAfterIt) {
  q.Add({"", "outer", [this] {
           ran.push_back("outer begins");
           q.Add(Ev("", "inner 1"));
           q.Add(Ev("", "inner 2"));
           q.Kick();  // no dispatch inside a dispatch
           EXPECT_FALSE(q.RunNow([this] { ran.push_back("run now"); }));
           ran.push_back("outer ends");
         }});
  EXPECT_EQ(ran, (std::vector<std::string>{"outer begins", "outer ends", "inner 1", "inner 2"}));
}

// Coalescing, as controller-runtime's workqueue: deferred within one handler, then dispatched.
TEST_F(InboundQueueTest, DeferredEventsCoalesceByKey) {
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> deferred;  // key, event
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"distinct keys keep their order", {{"a", "a1"}, {"b", "b1"}}, {"a1", "b1"}},
      {"a queued key is not queued again", {{"a", "a1"}, {"a", "a2"}}, {"a1"}},
      {"the first keeps its place", {{"a", "a1"}, {"b", "b1"}, {"a", "a2"}}, {"a1", "b1"}},
      {"unkeyed events never coalesce", {{"", "x1"}, {"", "x2"}}, {"x1", "x2"}},
      {"keyed and unkeyed interleave",
       {{"", "x1"}, {"a", "a1"}, {"", "x2"}, {"a", "a2"}},
       {"x1", "a1", "x2"}},
  };
  for (const Case& c : cases) {
    ran.clear();
    for (const auto& [key, name] : c.deferred) q.Defer(Ev(key, name));
    EXPECT_TRUE(ran.empty()) << c.name << ": a deferred event ran inside its caller";
    EXPECT_EQ(q.waiting(), c.want.size()) << c.name;
    io.poll();
    io.restart();
    EXPECT_EQ(ran, c.want) << c.name;
    // Handed out, a key may be queued again.
    ran.clear();
    if (!c.deferred.empty()) q.Add(Ev(c.deferred[0].first, "again"));
    EXPECT_EQ(ran, std::vector<std::string>{"again"}) << c.name;
  }
}

// A key added again while its handler runs is processed once more after it, never twice at a
// time; added several times meanwhile, it runs once more.
TEST_F(InboundQueueTest, AKeyAddedWhileProcessedRunsAgainAfter) {
  int depth = 0, max_depth = 0, runs = 0;
  std::function<void()> handler = [&] {
    max_depth = std::max(max_depth, ++depth);
    ++runs;
    if (runs == 1) {
      q.Add({"k", "k", handler});
      q.Add({"k", "k", handler});
      q.Defer({"k", "k", handler});
    }
    --depth;
  };
  q.Add({"k", "k", handler});
  io.poll();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(max_depth, 1);
  EXPECT_EQ(q.waiting(), 0u);
  // Another key added meanwhile is not held back by it.
  ran.clear();
  q.Add({"k", "k", [this] {
           q.Add(Ev("k", "k again"));
           q.Add(Ev("j", "j"));
           ran.push_back("k");
         }});
  EXPECT_EQ(ran, (std::vector<std::string>{"k", "j", "k again"}));
}

// Every event finds the acknowledged reports committed, the commit's own actions included.
TEST_F(InboundQueueTest, ReportsAreCommittedBeforeAnyEvent) {
  reports.pending = 3;
  reports.on_commit = [this] { q.Add(Ev("", "action of a committed step")); };
  q.Add(Ev("", "frame"));
  EXPECT_EQ(reports.commits, 1);
  EXPECT_EQ(ran, (std::vector<std::string>{"frame", "action of a committed step"}));
  EXPECT_EQ(pending_seen, (std::vector<size_t>{0, 0}));
  // Nothing pending: no commit is asked for.
  q.Add(Ev("", "timer"));
  EXPECT_EQ(reports.commits, 1);
  // A due batch is committed by Kick, with no event.
  reports.pending = 1;
  q.Kick();
  EXPECT_EQ(reports.pending, 0u);
  EXPECT_EQ(reports.commits, 2);
}

// Reports that cannot be committed hold every event back, in arrival order, also those added
// meanwhile; RunNow refuses; once they commit, the events follow in their order.
TEST_F(InboundQueueTest, EventsWaitBehindReportsThatCannotCommit) {
  reports.pending = 1;
  reports.fail = true;
  q.Add(Ev("", "update"));
  q.Add(Ev("read:d", "read"));
  q.Defer(Ev("read:d", "read again"));  // coalesced with the waiting one
  q.Add(Ev("", "delete"));
  io.poll();
  io.restart();
  EXPECT_TRUE(ran.empty());
  EXPECT_EQ(q.waiting(), 3u);
  bool ran_now = false;
  EXPECT_FALSE(q.RunNow([&] { ran_now = true; }));
  EXPECT_FALSE(ran_now);
  reports.fail = false;
  q.Kick();  // the retry
  EXPECT_EQ(ran, (std::vector<std::string>{"update", "read", "delete"}));
  EXPECT_EQ(pending_seen, (std::vector<size_t>{0, 0, 0}));
  EXPECT_EQ(q.waiting(), 0u);
  EXPECT_TRUE(q.RunNow([&] { ran_now = true; }));
  EXPECT_TRUE(ran_now);
}

// RunNow commits what is pending first, and what its function adds follows at once.
TEST_F(InboundQueueTest, RunNowCommitsFirstAndHandsOutWhatItAdds) {
  reports.pending = 2;
  EXPECT_TRUE(q.RunNow([this] {
    ran.push_back("forward");
    pending_seen.push_back(reports.pending);
    q.Add(Ev("", "follow-up"));
    EXPECT_TRUE(ran.size() == 1) << "an event ran inside RunNow's function";
  }));
  EXPECT_EQ(ran, (std::vector<std::string>{"forward", "follow-up"}));
  EXPECT_EQ(pending_seen, (std::vector<size_t>{0, 0}));
}

// Post is the way in from the pool's threads: the event runs on the loop.
TEST_F(InboundQueueTest, PostedFromAnotherThreadRunsOnTheLoop) {
  const auto loop = std::this_thread::get_id();
  std::thread::id where;
  std::thread t([&] { q.Post({"", "pool result", [&] { where = std::this_thread::get_id(); }}); });
  t.join();
  EXPECT_EQ(where, std::thread::id());
  io.poll();
  EXPECT_EQ(where, loop);
}

// At Stop, queued events are dropped, and so is anything added later.
TEST_F(InboundQueueTest, StopDropsWhatIsQueued) {
  reports.pending = 1;
  reports.fail = true;
  q.Add(Ev("", "waiting"));
  q.Stop();
  reports.fail = false;
  q.Add(Ev("", "late"));
  q.Defer(Ev("k", "late deferred"));
  q.Kick();
  io.poll();
  EXPECT_TRUE(ran.empty());
  EXPECT_EQ(q.waiting(), 0u);
  EXPECT_FALSE(q.RunNow([this] { ran.push_back("run now"); }));
  EXPECT_TRUE(ran.empty());
}

}  // namespace
}  // namespace sedna::app
