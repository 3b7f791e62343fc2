// The dataset registry, S3 indexes (dataset_registry.h): one HEAD per poll (and a ranged GET of
// the new bytes) on the pool, into a local mirror that is then read like a host index.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include "adapters/log/log.h"

#include <chrono>
#include <memory>

#include "adapters/dataset/index_reader.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/s3_client.h"
#include "app/cluster/datasets/dataset_entry.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/datasets/problem_shape.h"

namespace sedna::app {

namespace asio = boost::asio;

// An S3 index: one HEAD (and a ranged GET of the new bytes, if any) on the pool, then the mirror
// is read like a host index. An unchanged poll also takes an unterminated last line.
void DatasetRegistry::SyncS3(Entry& e) {
  if (e.sync_inflight) return;
  if (!e.creds) {
    NoteSyncProblem(e, "spec.url is on S3 but no " + std::string(core::kCredentialAnnotation) +
                           " annotation was received (spec.credentialName unset, or the GM "
                           "has not re-sent the Dataset since this LC started); not polled yet");
    return;
  }
  if (Status s = fs::MakeDirs(ctx_.cfg.spool_dir + "/s3-index"); !s.ok()) {
    NoteSyncProblem(e, s.message());
    return;
  }
  e.sync_inflight = true;
  asio::post(ctx_.pool, [this, key = e.src.key, creds = *e.creds, url = e.s3_url,
                         mirror = e.src.local_path, options = ctx_.S3Options()] {
    s3::Client client(creds, options);
    auto r = s3::SyncIndexMirror(client, url, mirror);
    inbound_.Post({"", key + " S3 sync",
                   [this, key, mirror, r = std::move(r)] { OnS3Synced(key, mirror, r); }});
  });
}

void DatasetRegistry::OnS3Synced(const std::string& key, const std::string& mirror,
                                 const Result<s3::MirrorSync>& r) {
  auto it = datasets_.find(key);
  if (it == datasets_.end() || it->second->src.local_path != mirror) {
    RemoveMirror(mirror);  // deleted, or moved to another URL, while syncing
    if (it != datasets_.end()) it->second->sync_inflight = false;
    return;
  }
  Entry& e = *it->second;
  e.sync_inflight = false;
  if (ctx_.stopped) return;
  ctx_.metrics.s3_index_polls++;
  if (!r.ok()) {
    NoteSyncProblem(e, r.message() + "; retrying every " + std::to_string(PollSeconds(e)) + " s");
    return;
  }
  ctx_.metrics.s3_index_requests += r->requests;
  ctx_.metrics.s3_index_bytes += r->bytes_fetched;
  if (r->missing) {
    NoteSyncProblem(e, "s3://" + e.s3_url.bucket + "/" + e.s3_url.key +
                           ": no such object (or bucket); polled again every " +
                           std::to_string(PollSeconds(e)) + " s");
    return;
  }
  if (!e.last_sync_problem.empty()) {
    spdlog::info("Dataset {}: S3 index readable again", e.name());
    e.last_sync_problem.clear();
  }
  if (r->rewritten) spdlog::info("Dataset {}: S3 index object was replaced", e.name());
  Read(e, !r->changed);
}

void DatasetRegistry::NoteSyncProblem(Entry& e, const std::string& problem) {
  std::string shape = ProblemShape(problem);
  if (shape == e.last_sync_problem) return;
  e.last_sync_problem = std::move(shape);
  spdlog::error("Dataset {}: {}", e.name(), problem);
}

}  // namespace sedna::app
