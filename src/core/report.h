// Messages between the core and the outside world, as domain types (codecs in adapters/json).
#pragma once

#include <string>
#include <vector>

#include "core/resources.h"

namespace sedna::core {

// An LC-originated job status report (§3.2 UpstreamMessage without `output`, which is always
// null for LC-originated reports). Encoded as
// {"phase":..,"status":..,"input":{"models":[{"format","url"}],"dataURL","dataIndexURL","outputDir"},"output":null}
// with `input` omitted when has_input is false and each input field omitted when empty.
struct StatusReport {
  std::string phase;   // IL: Train|Eval|Deploy; LL: train|eval|deploy
  std::string status;  // IL: Ready|Completed|Failed; LL: ready|failed
  bool has_input = false;
  std::vector<ModelRef> input_models;  // metrics are never encoded in input models
  std::string data_url;
  std::string data_index_url;
  std::string output_dir;
  bool operator==(const StatusReport&) const = default;
};

// A worker's POST body (§5.1) as the core sees it. Number text preservation for forwarding is the
// codec's business; the core only needs the parsed parts.
struct WorkerReport {
  std::string worker_name;
  std::string ns;
  std::string owner_name;
  std::string owner_kind;
  std::string kind;    // train | eval | ...  (compared case-insensitively)
  std::string status;  // completed | failed | ready | running
  std::vector<ModelRef> results;
  // First structural problem found in `results` (e.g. "results[0].url: expected a string"),
  // empty when every result has string `format` and `url` and `metrics`, if present, is an object.
  std::string results_error;
};

// Which model URLs a completed train or eval report of a job may name now (issue 15: a report
// can only move its own job, with models the job may use). Computed from the job's state by
// il::ScopeOfReport / ll::ScopeOfReport; the adapter checks each result URL against it (host
// paths after the rootfs prefix, `..` and symlinks; S3 URLs lexically).
struct ReportScope {
  // A worker of this kind is awaited by this LC now. When false the report is not this LC's to
  // act on (e.g. the stage was dispatched by another node's LC): it is only forwarded.
  bool awaited = false;
  std::vector<std::string> dirs;   // a result URL must lie inside one of these (or be one)
  std::vector<std::string> exact;  // or equal one of these (models the LC itself sent)
  std::string what;                // "the output of train round 2", for messages
};

}  // namespace sedna::core
