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
    work([this, job = std::move(job)](core::il::Event ev) {
      inbound_.Post(ResultEvent(job, std::move(ev)));
    });
  });
}

void ActionExecutor::Post(JobRef job, core::il::Event ev) {
  inbound_.Post(ResultEvent(std::move(job), std::move(ev)));
}

void ActionExecutor::Add(JobRef job, core::il::Event ev) {
  inbound_.Add(ResultEvent(std::move(job), std::move(ev)));
}

}  // namespace sedna::app
