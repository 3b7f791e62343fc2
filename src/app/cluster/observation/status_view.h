// What `sedna-lc status` and the /status, /metrics endpoints show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/il_job.h"
#include "core/ll_job.h"
#include "core/resources.h"
#include "core/status.h"

namespace sedna::app {

struct JobView {
  std::string kind, ns, name;
  std::string stage;  // "Train/Waiting"
  int64_t round = 0;
  int64_t samples_waiting = 0;
  int64_t samples_seen = 0;
  std::string work;
  std::string last_decision;
  int64_t decisions = 0;
  int64_t decided_round = 0;
  std::string last_error;
  std::vector<core::ModelRef> last_eval;
  std::string deployed_url;
  std::string deployed_at;
  // The job's output directories (§P4.5), made on the pool: "made", "making", or why they could
  // not be made (tried again at the job's next update).
  std::string output_dirs;
};

struct Metrics {
  int64_t frames_received = 0;
  int64_t frames_sent = 0;
  int64_t rejected_frames = 0;
  int64_t rejected_objects = 0;
  int64_t worker_posts = 0;
  int64_t samples_ingested = 0;
  int64_t index_bytes_read = 0;   // bytes read from dataset indexes (ReadResult::bytes_read)
  int64_t store_commits = 0;      // database transactions committed
  int64_t s3_index_polls = 0;     // S3 dataset index syncs (one HEAD each, plus GETs when changed)
  int64_t s3_index_requests = 0;  // HTTP requests they sent
  int64_t s3_index_bytes = 0;     // index bytes they fetched
  int64_t gm_connects = 0;
  int64_t outbox_count = 0;
  int64_t outbox_bytes = 0;
  int64_t reports_pending = 0;  // acknowledged worker reports not yet committed (intake journal)
  int64_t jobs = 0;
  bool gm_connected = false;
};

// Fill the state-derived fields of a view (kind, name and stage are the caller's).
// `last_condition` is the index of the job's latest condition (-1 for none). When the LC has
// already answered that Waiting condition (sent Ready or Failed) and has no work in flight, `work`
// is "reported": the stage shown is the GM's, and the GM has not moved it on yet.
void FillIlView(const core::il::State& s, int64_t last_condition, JobView& v);
void FillLlView(const core::ll::State& s, JobView& v);

std::string EncodeStatusJson(const std::vector<JobView>& jobs);
Result<std::vector<JobView>> DecodeStatusJson(const std::string& text);
// Prometheus text exposition format.
std::string RenderMetrics(const Metrics& m);
// Rows as columns aligned to the widest cell, two spaces apart (the first row sets the count).
std::string RenderAlignedRows(const std::vector<std::vector<std::string>>& rows);
// One line per job, aligned columns, for `sedna-lc status`.
std::string RenderStatusTable(const std::vector<JobView>& jobs);

}  // namespace sedna::app
