// The round history: per IL/LL job, the last N train rounds (--history-rounds) as the controller
// saw them happen: the samples the train trigger fired on and why, the train (Ready sent, worker
// completed or failed, trained model), the eval (Ready sent, the new and the deployed model's
// metrics) and the deploy decision, with their times. What /dashboard, the per-job /metrics
// gauges and `sedna-lc status --history JOB` show.
//
// Derived, never authoritative: it is recorded from the typed facts each job step returns
// (core/facts.h: trigger fired, report sent, train/eval reported, deploy decided), never from log
// text or the frames the step sends, so it never changes what a job does. It is kept in the
// lc_state scope
// "history" (one record per job), written in a transaction of its own kFlushDelay after the step
// (coalesced: one commit for a round's steps, off the path from a step to the next one, e.g. an
// append to its Train Ready), and at a graceful stop: a crash may lose the history entries of the
// last kFlushDelay, never a step.
//
// Owns: the histories (bounded: --history-rounds rounds per job, kMaxJobs jobs, kMaxMetrics
//   metrics per model, text fields cut at kMaxText bytes), their flush.
// Calls: the store (its own scope only).
// Called by: the job runner (OnStep, after Adopt), the status endpoint (All, Find), start-up
//   (lazily, on first use: Load from the store).
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "app/cluster/context.h"
#include "core/facts.h"

namespace sedna::app {

constexpr const char* kScopeHistory = "history";

// One train round (IL round, LL version). Times are unix ms, 0 when not reached.
struct RoundRecord {
  int64_t round = 0;
  int64_t samples = 0;        // train samples the round was triggered with
  std::string train_trigger;  // the trigger expression ("num_of_samples > 500")
  std::string fired;          // why it fired ("fired: num_of_samples = 600 > 500")
  int64_t fired_ms = 0;
  int64_t attempts = 0;        // times the trigger fired for this round (retries after failures)
  std::string data_url;        // the train samples file sent in Train Ready
  std::string output_dir;      // where the train worker writes
  int64_t train_ready_ms = 0;  // Train Ready sent
  int64_t train_done_ms = 0;   // the train worker's completed or failed report
  std::string train_status;    // "", "completed", "failed"
  std::string trained_model;   // results[0].url of the completed train
  // results[0].metrics of the completed train, flattened as below (LL: per task, "task/accuracy").
  std::map<std::string, double> train_metrics;
  int64_t eval_ready_ms = 0;
  int64_t eval_done_ms = 0;
  std::string eval_status;
  // Eval metrics, flattened to numbers: "accuracy"; a list as its mean (what a trigger compares
  // for a bare list, e.g. per-class precision); a nested (LL per-task) object as "task/accuracy".
  std::map<std::string, double> new_metrics;       // results[0]: the newly trained model
  std::map<std::string, double> deployed_metrics;  // results[1]: the deployed model
  std::string decision;         // "", "deploy", "kept", "not deployed", "deployed", "deploy failed"
  std::string decision_reason;  // the deploy trigger's reason (or why not decided)
  std::string deploy_trigger;   // the deploy trigger expression
  int64_t decided_ms = 0;
  int64_t deployed_ms = 0;  // the deploy copy finished (Deploy Ready) or failed
  bool operator==(const RoundRecord&) const = default;
};

struct JobHistory {
  std::string key;   // core::ResourceKey
  std::string kind;  // IncrementalLearningJob | LifelongLearningJob
  std::string ns, name;
  std::string train_trigger, deploy_trigger;  // the job's current trigger expressions
  std::string deploy_target;                  // the deploy copy's destination (for rollback)
  int64_t deploys = 0;                        // successful deploy copies, ever
  // Read and written back unchanged: what records written before the typed facts used (the IL
  // decisions already recorded); nothing derives from it now.
  int64_t decisions_seen = 0;
  int64_t updated_ms = 0;
  // Oldest first. A vector: a job's history is kept for every job, and an empty deque already
  // holds ~0.5 KB (its map and first node); the oldest round leaves once per round at most.
  std::vector<RoundRecord> rounds;
  bool operator==(const JobHistory&) const = default;
};

// The job a step was of, as the job runner tells it with the step's facts: views of the job's
// own strings, valid for the call (the history copies what it keeps).
struct HistoryJob {
  std::string_view key, kind, ns, name;
  std::string_view train_trigger, deploy_trigger;  // core::Trigger::text
};

// Pure: records one step's facts (in the order the core returned them) into `h`. Returns whether
// `h` changed. Keeps at most `max_rounds` rounds.
bool RecordStep(JobHistory& h, const HistoryJob& job, const std::vector<core::Fact>& facts,
                int64_t now_ms, size_t max_rounds);

// The stored record (what `status --history -o json` prints); JobHistoryJson is it parsed, for
// documents that embed it (the dashboard feed).
std::string EncodeJobHistory(const JobHistory& h);
nlohmann::json JobHistoryJson(const JobHistory& h);
// Errors name the field; a record of a newer layout decodes what it knows.
Result<JobHistory> DecodeJobHistory(const std::string& text);

class RoundHistory {
 public:
  static constexpr size_t kMaxJobs = 256;
  static constexpr size_t kMaxMetrics = 32;
  static constexpr size_t kMaxText = 512;
  static constexpr std::chrono::milliseconds kFlushDelay{20};

  explicit RoundHistory(Context& ctx);
  ~RoundHistory();
  RoundHistory(const RoundHistory&) = delete;
  RoundHistory& operator=(const RoundHistory&) = delete;

  // After a step was committed and adopted (JobRunner::ActOn), with its facts.
  void OnStep(const HistoryJob& job, const std::vector<core::Fact>& facts, int64_t now_ms);
  // The histories, by job key. The first call loads them from the store.
  const std::map<std::string, JobHistory>& All() const;
  const JobHistory* Find(const std::string& key) const;
  // Writes what changed now (the flush kFlushDelay after a step does it otherwise).
  void Flush();
  // The job was deleted: its history goes too (the caller deletes the record in its delete
  // transaction, kScopeHistory).
  void Forget(const std::string& key);

 private:
  void Load() const;
  void ScheduleFlush();

  Context& ctx_;
  mutable bool loaded_ = false;
  mutable std::map<std::string, JobHistory> jobs_;
  std::map<std::string, bool> dirty_;  // key -> true: write, false: delete (evicted)
  std::unique_ptr<boost::asio::steady_timer> flush_timer_;  // armed: a flush is due
  bool flush_armed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // false once destroyed
};

}  // namespace sedna::app
