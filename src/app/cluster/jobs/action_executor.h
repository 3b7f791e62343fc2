// The action executor: the pool round trip of a job's actions. Blocking work runs on the pool;
// the core event it returns comes back to the loop through the inbound queue (so it is handed out
// only after the worker reports acknowledged before it are committed) and steps the job only if
// the job it was made for still exists as that incarnation: a result for a job deleted or
// replaced (a new incarnation under the same key) meanwhile is dropped.
//
// Owns: its wiring and the results finished on the loop not yet posted (no job state; the work's
//   captures travel with the work).
// Calls: the pool (Context::pool) for the work; the inbound queue (Post from any thread, Add on
//   the loop) for the results; the lookup and step it is given (the job runner's).
// Called by: the job runner (its steps' actions, the deploy wait's forward, a refused eval
//   report); a completion on the loop (the file syncs', through RunOnPoolThen's Finish).
// Emits: the core events its callers hand it (FileWritten, ModelCopied, HotUpdateWritten,
//   EvalForwardWritten, EvalReportRefused), each to the job it was made for.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "app/cluster/inbound_queue.h"
#include "core/il_job.h"

namespace sedna::app {

struct JobEntry;

// A job as it was when the work started: its key and incarnation (a job re-created under the same
// key is another incarnation).
struct JobRef {
  std::string key;
  uint64_t incarnation = 0;
};

class ActionExecutor {
 public:
  // The job (key, incarnation), or nullptr when it is gone or was replaced. On the loop.
  using Find = std::function<JobEntry*(const std::string& key, uint64_t incarnation)>;
  // Steps the job with the event. On the loop.
  using Step = std::function<void(JobEntry&, const core::il::Event&)>;

  // Around the steps of results handed out together (the job runner's BeginSteps / EndSteps).
  using Batch = std::function<void()>;

  ActionExecutor(boost::asio::io_context& io, boost::asio::thread_pool& pool, InboundQueue& inbound,
                 Find find, Step step, Batch begin = {}, Batch end = {})
      : io_(io),
        pool_(pool),
        inbound_(inbound),
        find_(std::move(find)),
        step_(std::move(step)),
        begin_(std::move(begin)),
        end_(std::move(end)) {}
  ActionExecutor(const ActionExecutor&) = delete;
  ActionExecutor& operator=(const ActionExecutor&) = delete;

  // Runs `work` on the pool; the event it returns steps `job` (Post, then as ResultEvent).
  void RunOnPool(JobRef job, std::function<core::il::Event()> work);
  // Hands `job`'s event to the loop as RunOnPool does; callable from any thread, once.
  using Finish = std::function<void(core::il::Event)>;
  // Runs `work` on the pool with a Finish for `job`, which it calls then or later (from a
  // completion it started: the file syncs of Context::syncs), exactly once. A Finish called on the
  // pool posts its event at once; those called on the loop (the syncs' completions, reaped
  // together) are gathered until the loop's current handlers are done and go out as one event,
  // which steps each job still there (as RunOnPool's would) between `begin` and `end`.
  void RunOnPoolThen(JobRef job, std::function<void(Finish finish)> work);
  // A result known without blocking work (an action refused on the loop): posted to the loop
  // like a pool result, so it follows the step that asked for the action.
  void Post(JobRef job, core::il::Event ev);
  // An event for `job` on the loop, handed out as the inbound queue's Add (at once outside a
  // dispatch).
  void Add(JobRef job, core::il::Event ev);
  // The inbound-queue event that steps `job` with `ev` if it is still that incarnation, and drops
  // `ev` otherwise. Built on any thread.
  InboundQueue::Event ResultEvent(JobRef job, core::il::Event ev);

 private:
  struct Gathered {
    JobRef job;
    core::il::Event ev;
  };
  void Deliver(JobRef job, core::il::Event ev);
  void PostGathered();

  boost::asio::io_context& io_;
  boost::asio::thread_pool& pool_;
  InboundQueue& inbound_;
  Find find_;
  Step step_;
  Batch begin_, end_;
  std::vector<Gathered> gathered_;  // loop only: Finish calls on the loop not posted yet
};

}  // namespace sedna::app
