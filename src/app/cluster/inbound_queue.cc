// The inbound queue (inbound_queue.h).
#include "app/cluster/inbound_queue.h"

#include <boost/asio/post.hpp>
#include "adapters/log/log.h"

namespace sedna::app {

void InboundQueue::Enqueue(Event ev) {
  if (stopped_) return;
  if (!ev.key.empty()) {
    if (processing_.count(ev.key)) {
      added_again_.try_emplace(ev.key, std::move(ev));  // the first one added meanwhile
      return;
    }
    if (!queued_.insert(ev.key).second) return;  // already queued: that one runs
  }
  queue_.push_back({std::move(ev)});
}

void InboundQueue::Add(Event ev) {
  Enqueue(std::move(ev));
  Dispatch();
}

void InboundQueue::Defer(Event ev) {
  Enqueue(std::move(ev));
  if (dispatch_posted_ || stopped_) return;
  dispatch_posted_ = true;
  boost::asio::post(io_, [this] {
    dispatch_posted_ = false;
    Dispatch();
  });
}

void InboundQueue::Post(Event ev) {
  boost::asio::post(io_, [this, ev = std::move(ev)]() mutable { Add(std::move(ev)); });
}

void InboundQueue::Kick() { Dispatch(); }

bool InboundQueue::ReportsCommitted() {
  if (reports_.pending() == 0 || reports_.commit()) return true;
  const size_t pending = reports_.pending();
  for (Queued& q : queue_) {
    if (q.told) continue;
    q.told = true;
    spdlog::debug("{}: waits behind {} acknowledged worker report(s) not committed yet", q.ev.what,
                  pending);
  }
  return false;
}

void InboundQueue::Run(const Event& ev) {
  if (ev.key.empty()) {
    ev.run();
    return;
  }
  const std::string key = ev.key;
  processing_.insert(key);
  ev.run();
  processing_.erase(key);
  auto again = added_again_.find(key);
  if (again == added_again_.end()) return;
  Event next = std::move(again->second);
  added_again_.erase(again);
  Enqueue(std::move(next));
}

void InboundQueue::Dispatch() {
  if (dispatching_ || stopped_) return;
  dispatching_ = true;
  // Reports cannot become pending during a dispatch (they arrive in handlers of their own); the
  // check before every event is what the contract says, and costs a size().
  while (!stopped_ && ReportsCommitted() && !queue_.empty()) {
    Event ev = std::move(queue_.front().ev);
    queue_.pop_front();
    if (!ev.key.empty()) queued_.erase(ev.key);
    Run(ev);
  }
  dispatching_ = false;
}

bool InboundQueue::RunNow(const std::function<void()>& run) {
  if (dispatching_ || stopped_) return false;
  Dispatch();
  if (!queue_.empty() || reports_.pending() > 0) return false;
  dispatching_ = true;
  run();
  dispatching_ = false;
  Dispatch();  // what `run` added
  return true;
}

void InboundQueue::Stop() {
  stopped_ = true;
  queue_.clear();
  queued_.clear();
  added_again_.clear();
}

}  // namespace sedna::app
