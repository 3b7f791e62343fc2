// The inbound queue: the one way an event from outside reaches a part of the controller. GM
// frames, timers, index changes, results coming back from the pool and the worker requests that
// change state are added here; the queue hands them to their parts on the loop thread, in arrival
// order, each only once the acknowledged worker reports are committed. That is the ordering
// contract: nothing overtakes an acknowledged report (docs/durability.md, "Worker reports"), so
// the outbox, and each job's steps, keep arrival order, also while the database refuses commits.
//
// Keys coalesce as controller-runtime's workqueue does. An event added under a key that is already
// queued is not queued again (the one queued keeps its place and reads the state as it is when it
// runs). A key is being processed while its handler runs; added again meanwhile, it is queued once
// more when the handler returns, never handed out twice at a time. Events without a key never
// coalesce.
//
// Owns: the events not handed out yet, the keys queued, being processed, and added while being
//   processed; whether a dispatch is running.
// Calls: the report intake, through `Reports` given by the composition root (commit, pending),
//   before it hands out any event; then the events' handlers (the parts' own code).
// Called by: every event source (GM frames, the dataset registry and the job runner for their
//   timers, pool results and index reads, the worker endpoint); the report intake (Kick when a
//   batch is due, waiting() before it takes a report, RunNow for a report stepped alone).
// Emits: nothing of its own; each event is its part's code.
//
// Never re-entrant: an event added while a handler runs (or while the reports commit and their
// actions run) is queued and handed out after it, in the same dispatch; no part's code is ever on
// the stack when reports commit. An event added from outside a dispatch starts one at once, in
// the caller's stack: sources add as their last step and hold no reference into a part. Loop
// thread only, except Post.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace sedna::app {

class InboundQueue {
 public:
  // What the queue needs of the report intake.
  struct Reports {
    // Commits the acknowledged reports (and runs their steps' actions); false when they could not
    // be committed and are still pending.
    std::function<bool()> commit;
    // How many are acknowledged and not committed.
    std::function<size_t()> pending;
  };

  struct Event {
    std::string key;   // "" never coalesces
    std::string what;  // names the event in the log line of an event that waits
    std::function<void()> run;
  };

  // `io` must outlive the queue.
  InboundQueue(boost::asio::io_context& io, Reports reports)
      : io_(io), reports_(std::move(reports)) {}
  InboundQueue(const InboundQueue&) = delete;
  InboundQueue& operator=(const InboundQueue&) = delete;

  // Queues `ev` (coalesced by key) and, unless a dispatch is running, dispatches now.
  void Add(Event ev);
  // Queues `ev` (coalesced by key); it is handed out after the current handler returns (a
  // dispatch is posted to the loop), so a burst of the same key within one handler is one event.
  void Defer(Event ev);
  // Add, from any thread: posted to the loop first.
  void Post(Event ev);
  // Dispatches now, unless a dispatch is running: commits the pending reports, then hands out
  // what is queued. Called when a batch of reports is due.
  void Kick();
  // Runs `run` now, as an event handed out in order, and returns true; or returns false and runs
  // nothing when it cannot be now: a dispatch is running, or events wait behind reports that
  // cannot be committed (the caller answers "retry"). Events `run` adds follow it at once.
  bool RunNow(const std::function<void()>& run);

  // Events queued and not handed out: outside a dispatch, those waiting behind reports that cannot
  // be committed.
  size_t waiting() const { return queue_.size(); }
  // Whether an event added now may have to wait: events are queued or reports pending.
  bool may_wait() const { return !queue_.empty() || reports_.pending() > 0; }

  // Drops what is queued (their sources re-send: docs/durability.md); later events are dropped.
  void Stop();

 private:
  struct Queued {
    Event ev;
    bool told = false;  // its wait behind the reports is logged
  };
  void Enqueue(Event ev);
  void Dispatch();
  // Commits the pending reports; false (each waiting event logged once) when they stay pending.
  bool ReportsCommitted();
  void Run(const Event& ev);

  boost::asio::io_context& io_;
  Reports reports_;
  std::deque<Queued> queue_;
  std::set<std::string> queued_;              // keys in queue_
  std::set<std::string> processing_;          // keys whose handler runs
  std::map<std::string, Event> added_again_;  // keys added while processing: queued once done
  bool dispatching_ = false;
  bool dispatch_posted_ = false;
  bool stopped_ = false;
};

}  // namespace sedna::app
