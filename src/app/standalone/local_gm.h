// Standalone mode's embedded local manager: plays Sedna's GM for the jobs of the user's YAML
// manifests. It keeps each job's conditions with the GM's condition machine (core::gm,
// §P4.1/§P4.2), consumes the controller's outbox as the GM consumes LC messages, sends the job back
// to the controller as the GM would (§P4.3), and runs the train/eval/inference "pods" as local
// processes from the pod templates with the GM's env contract (§P4.4), using local paths. The GM
// played is the v0.5-v0.7 one (G2: docs/protocol.md §H1.3, §H1.4, §H1.7, model hot update §H4.1)
// unless options.gm_protocol is "g1" (the 2021 GM); every node of the GM's routing is this machine.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adapters/manifest/manifest.h"
#include "app/cluster/intake/upstream_sink.h"
#include "app/cluster/observation/dashboard_workers.h"
#include "app/standalone/local_credentials.h"
#include "core/clock.h"
#include "core/report.h"
#include "core/status.h"

namespace boost::asio {
class io_context;
}

namespace sedna::app {

class Controller;

struct LocalGmOptions {
  std::string manifest_path;  // file or directory (*.yaml, *.yml), watched for changes
  std::string db_path;        // the controller's database (conditions are kept there too)
  std::string log_dir;        // worker logs: <log_dir>/<job>/<worker-name>.log
  std::string lc_server;      // LC_SERVER given to workers, e.g. http://127.0.0.1:9100
  std::chrono::milliseconds worker_timeout{0};  // per train/eval worker; 0 = none
  // How long the verdict of a train/eval worker that exited 0 waits for its report: the
  // controller acknowledges a report once journaled and forwards it after its batch commit
  // (--report-batch-ms) and the outbox's send, so the exit can overtake it. No report by then:
  // the pod failed.
  std::chrono::milliseconds report_grace{5000};
  std::chrono::milliseconds manifest_poll{2000};
  // The GM played (Config::gm_protocol): "auto" and "g2" the v0.5-v0.7 GM (GM-driven deploy,
  // condition-driven LL, model hot update: docs/protocol.md §H1.3, §H1.4, §H1.7, §H4.1), "g1"
  // the 2021 GM (docs/protocol.md §P4; hotUpdateEnabled is dropped, as its typed API drops it).
  std::string gm_protocol = "auto";
  // The GM's hostPath root for model hot update, its /var/lib/sedna/model-hot-update: a job's
  // model_config.json is <hot_update_dir>/<ns>/incrementallearningjob/<name>/model_config.json.
  std::string hot_update_dir;
  // Where the local GM reads the time (condition times, the dashboard's worker times, its store's
  // timestamps); it must outlive the LocalGm. Null: the system clock.
  const core::Clock* clock = nullptr;
};

class LocalGm : public UpstreamSink {
 public:
  LocalGm(boost::asio::io_context& io, Controller& controller, LocalGmOptions options);
  // Frames for the LC go to `to_lc` (on the loop) instead of a controller: for tests.
  LocalGm(boost::asio::io_context& io, std::function<void(const std::string&)> to_lc,
          LocalGmOptions options);
  ~LocalGm() override;
  // Loads the manifests (errors name file, document and field; bad documents are skipped), resumes
  // stored conditions, and feeds every object to the controller, with the credential of the
  // Secret its spec.credentialName names (§P2.5; a missing Secret is logged, the object sent
  // without it and sent again when the Secret appears, changes or goes). Fails only when nothing
  // usable could be loaded at all or the database cannot be opened.
  Status Start();
  // Terminates every worker (SIGTERM, then SIGKILL) and waits for them.
  void Stop();
  // LC_SERVER given to workers (known once the worker API listens).
  void SetLcServer(const std::string& url);
  // The controller's report gate (Controller::SetReportGate): only a worker this LocalGm started
  // for the report's job may report, and only the kind of its stage (started_workers.h); a
  // hot-update inference worker's deploy report only while its job is at (Deploy, Running) (a
  // standalone restart restarts the worker, which then reloads the model of an earlier round and
  // reports it: the GM would append that as a stray (Deploy, Completed)). Called on the loop
  // thread.
  Status MayReport(const core::WorkerReport& report) const;
  // The workers started (the most recent ones), for the dashboard (Controller::SetWorkersSource).
  std::vector<WorkerView> Workers() const;

  bool connected() const override;
  bool Send(std::span<const std::string_view> frames, std::function<void(size_t)> done) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sedna::app
