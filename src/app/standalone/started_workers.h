// Who may report for a standalone job ([D:I15.1]): the local manager knows every worker it
// started, so a worker report counts only when it comes from one of them, under the name it was
// given (WORKER_NAME), for that worker's own job and stage.
//
// A worker's report reaches the loop before its exit in the usual order (it waits for the reply
// before it exits), but a worker that does not wait, or whose reply was lost, may have its request
// read after its exit was seen: an exited worker may still report for kExitGrace, until the next
// worker of its job and stage starts.
//
// Limits (docs/security.md): the name is a secret only as far as the worker's environment is
// (/proc/<pid>/environ is readable by its uid and by root); any local process that learns it can
// report in the worker's place.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "core/report.h"
#include "core/resources.h"
#include "core/status.h"

namespace sedna::app {

class StartedWorkers {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kExitGrace{10};

  // `job` is the job's resource key (core::ResourceKey). Workers of that job and stage started
  // before stop being allowed to report: the new one reports for the stage now. `hot_update`:
  // an inference worker started with MODEL_HOT_UPDATE=true, which also reports kind deploy
  // (lib/sedna's model reload, docs/protocol.md §H4.1).
  void Started(const std::string& job, core::Stage stage, const std::string& name,
               bool hot_update = false);
  void Exited(const std::string& job, const std::string& name, Clock::time_point now);
  // The job was deleted: none of its workers may report any more.
  void ForgetJob(const std::string& job);

  // Ok when report.worker_name is a worker started for the job that namespace/ownerKind/ownerName
  // name, still running or exited less than kExitGrace ago, and report.kind (any case) is the kind
  // a worker of its stage reports: train, eval, or inference for the inference worker (lib/sedna's
  // IL/LL inference never reports), and deploy for a hot-update inference worker (its reloads;
  // otherwise "deploy" is the LC's own phase). The error names the field.
  Status MayReport(const core::WorkerReport& report, Clock::time_point now) const;

  // Workers remembered (running or recently exited), for tests.
  size_t size() const;

 private:
  struct Worker {
    core::Stage stage = core::Stage::kTrain;
    bool hot_update = false;
    std::optional<Clock::time_point> exited;
  };
  std::map<std::string, std::map<std::string, Worker>> jobs_;  // job key -> worker name -> worker
};

}  // namespace sedna::app
