// Internal to the dataset registry (dataset_registry.cc, dataset_reads.cc, dataset_s3.cc): one
// Dataset's entry. Other parts reach Datasets through dataset_registry.h.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <unistd.h>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/jobs/il_record.h"

namespace sedna::app {

struct DatasetRegistry::Entry {
  DatasetSource src;
  core::Dataset ds;
  DatasetRecord record;
  s3::S3Url s3_url;
  std::optional<s3::Credentials> creds;  // sedna.io/credential, in memory only ([P:B23])
  bool sync_inflight = false;
  std::string last_sync_problem;  // ProblemShape of the one logged; logged once until it changes
  std::string last_read_problem;  // the same, for reading the index
  bool watching = false;
  bool read_inflight = false;  // a pass is on the pool
  bool read_again = false;     // another was asked for meanwhile
  bool read_again_take = false;
  std::unique_ptr<boost::asio::steady_timer> poll_timer;
  // numberOfSamples coalescing (--dataset-status-interval-ms): when the last one was sent (on
  // Context::clock's steady reading), and a timer that reads again when a changed count had to
  // wait.
  std::chrono::steady_clock::time_point last_status;
  std::unique_ptr<boost::asio::steady_timer> status_timer;
  bool status_due = false;

  // "<ns>/<name>", as log lines name a Dataset ("Dataset default/d1: ...").
  std::string name() const { return ds.meta.ns + "/" + ds.meta.name; }
};

// Removes an S3 index mirror and its side files.
inline void RemoveMirror(const std::string& path) {
  for (const char* suffix : {"", ".state", ".tmp"}) ::unlink((path + suffix).c_str());
}

}  // namespace sedna::app
