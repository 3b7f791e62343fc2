#include "app/cluster/jobs/action_executor.h"

#include <boost/asio/post.hpp>

namespace sedna::app {

InboundQueue::Event ActionExecutor::ResultEvent(JobRef job, core::il::Event ev) {
  std::string what = job.key + " event";
  return {"", std::move(what), [this, job = std::move(job), ev = std::move(ev)] {
            if (JobEntry* e = find_(job.key, job.incarnation)) step_(*e, ev);
          }};
}

void ActionExecutor::RunOnPool(JobRef job, std::function<core::il::Event()> work) {
  boost::asio::post(pool_, [this, job = std::move(job), work = std::move(work)]() mutable {
    core::il::Event ev = work();
    inbound_.Post(ResultEvent(std::move(job), std::move(ev)));
  });
}

void ActionExecutor::RunOnPoolThen(JobRef job, std::function<void(Finish finish)> work) {
  boost::asio::post(pool_, [this, job = std::move(job), work = std::move(work)]() mutable {
    work([this, job = std::move(job)](core::il::Event ev) { Deliver(job, std::move(ev)); });
  });
}

void ActionExecutor::Deliver(JobRef job, core::il::Event ev) {
  if (!io_.get_executor().running_in_this_thread()) {
    inbound_.Post(ResultEvent(std::move(job), std::move(ev)));
    return;
  }
  gathered_.push_back({std::move(job), std::move(ev)});
  if (gathered_.size() == 1) boost::asio::post(io_, [this] { PostGathered(); });
}

void ActionExecutor::PostGathered() {
  std::vector<Gathered> results = std::move(gathered_);
  gathered_.clear();
  if (results.size() == 1) {
    inbound_.Post(ResultEvent(std::move(results[0].job), std::move(results[0].ev)));
    return;
  }
  std::string what = std::to_string(results.size()) + " pool results";
  inbound_.Post({"", std::move(what), [this, results = std::move(results)] {
                   if (begin_) begin_();
                   for (const Gathered& r : results) {
                     if (JobEntry* e = find_(r.job.key, r.job.incarnation)) step_(*e, r.ev);
                   }
                   if (end_) end_();
                 }});
}

void ActionExecutor::Post(JobRef job, core::il::Event ev) {
  inbound_.Post(ResultEvent(std::move(job), std::move(ev)));
}

void ActionExecutor::Add(JobRef job, core::il::Event ev) {
  inbound_.Add(ResultEvent(std::move(job), std::move(ev)));
}

}  // namespace sedna::app
