// Messages between the core and the outside world, as domain types (codecs in adapters/json).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/resources.h"

namespace sedna::core {

// The phase and status of an LC-originated report. Their wire spelling (IL "Train"/"Ready", LL
// "train"/"ready") is the codec's (json::EncodeStatusReport); the core never compares text.
enum class ReportPhase { kTrain, kEval, kDeploy };
enum class ReportStatus { kReady, kCompleted, kFailed };
// For log lines and messages only (lower case: "train", "ready"); never a wire spelling.
const char* ReportPhaseName(ReportPhase p);
const char* ReportStatusName(ReportStatus s);

// An LC-originated job status report (§P3.2 UpstreamMessage without `output`, which is always
// null for LC-originated reports). Encoded as
// {"phase":..,"status":..,"input":{"models":[{"format","url"}],"dataURL","dataIndexURL","outputDir"},"output":null}
// with `input` omitted when has_input is false and each input field omitted when empty.
struct StatusReport {
  ReportPhase phase = ReportPhase::kTrain;
  ReportStatus status = ReportStatus::kReady;  // LL sends Ready, Completed (deploy) or Failed
  bool has_input = false;
  std::vector<ModelRef> input_models;  // metrics are never encoded in input models
  std::string data_url;
  std::string data_index_url;
  std::string output_dir;
  bool operator==(const StatusReport&) const = default;
};

// Metrics as plain numbers, for the observers: a number as is, a list as the mean of its numbers
// (what a trigger compares for a bare list), a nested object's members as "<key>/<member>" (LL's
// per-task metrics, two levels deep); at most kMaxObservedMetrics names of at most
// kMaxObservedMetricName bytes, finite values only.
using MetricNumbers = NameMap<double>;
inline constexpr size_t kMaxObservedMetrics = 32;
inline constexpr size_t kMaxObservedMetricName = 64;
// The numbers of parsed metrics (nested objects are not in core::Metrics: the codec flattens them
// into WorkerReport::observed_metrics).
MetricNumbers NumbersOf(const Metrics& m);

// A worker's POST body (§P5.1) as the core sees it. Number text preservation for forwarding is the
// codec's business; the core only needs the parsed parts.
struct WorkerReport {
  std::string worker_name;
  std::string ns;
  std::string owner_name;
  std::string owner_kind;
  std::string kind;    // train | eval | ...  (compared case-insensitively)
  std::string status;  // completed | failed | ready | running
  std::vector<ModelRef> results;
  // Per result (same indices), its metrics as numbers for the observers (the round history, the
  // dashboard; never the triggers, which read `results`): see MetricNumbers. Filled by the codec.
  std::vector<MetricNumbers> observed_metrics;
  // First structural problem found in `results` (e.g. "results[0].url: expected a string"),
  // empty when every result has string `format` and `url` and `metrics`, if present, is an object.
  std::string results_error;
};

// Per result, its metrics as numbers: observed_metrics when the codec filled it (one per result),
// else NumbersOf each result's metrics.
std::vector<MetricNumbers> ObservedMetrics(const WorkerReport& r);

// Which model URLs a completed train or eval report of a job may name now ([D:I15]: a report
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
