// Applying kept early reports (early_release.h).
#include "app/cluster/intake/early_release.h"

#include "adapters/log/log.h"

#include "adapters/json/upstream_codec.h"

namespace sedna::app {

EarlyReports::Apply ApplyEarlyReports(JobRunner& jobs, ReportIntake& intake, InboundQueue& inbound,
                                      EarlyReports& early) {
  return [&jobs, &intake, &inbound, &early](const std::vector<EarlyReport>& kept,
                                            const EarlyReports::Erase& erase) {
    const std::string owner = kept.front().owner;
    if (intake.pending() != 0) {
      inbound.Defer({"early:" + owner, owner + " reports kept before it arrived",
                     [&early, owner] { early.Release(owner); }});
      return EarlyReports::Applied::kLater;
    }
    std::vector<PendingReport> ready;
    for (const EarlyReport& r : kept) {
      auto m = json::DecodeWorkerMessage(r.body, json::ReportMetrics::kDeferred);
      if (!m.ok()) {  // it was decoded when it was kept: only another build could cause this
        spdlog::warn("{}: kept report of worker {} unreadable: {}; dropped", owner, r.worker,
                     m.message());
        continue;
      }
      auto p = jobs.PrepareReport(*m);
      if (!p.ok()) continue;  // refused (logged): the worker was answered 200 when it was kept
      if (!*p) {
        spdlog::warn("{}: kept report of worker {} dropped: its job is gone", owner, r.worker);
        continue;
      }
      ready.push_back(std::move(**p));
    }
    auto committed =
        jobs.CommitReports(ready, [&erase](store::Store::Tx& tx) { return erase(&tx); });
    if (!committed.ok()) {
      spdlog::error("{}: applying {} kept worker report(s): {}; tried again in a second", owner,
                    kept.size(), committed.message());
      return EarlyReports::Applied::kFailed;
    }
    (*committed)();
    return EarlyReports::Applied::kApplied;
  };
}

}  // namespace sedna::app
