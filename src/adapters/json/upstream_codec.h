// LC -> GM status contents (docs/protocol.md §P3), worker POST bodies (§P5.1) and their
// forwarding (§P3.5), the condition data the GM derives from a content (§P4.1), and the worker API
// reply body (§P5.2). All output is byte-for-byte what the Go LC / GM produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/json/go_json.h"
#include "core/report.h"
#include "core/status.h"

namespace sedna::json {

// The UpstreamMessage of an LC-originated report:
// {"phase":..,"status":..,"input":{"models":[{"format":..,"url":..,"device_soc_versions":[..]}],
// "dataURL":..,"dataIndexURL":..,"outputDir":..},"output":null}. `input` only when has_input;
// inside it every empty string, an empty models list, and a model's empty format/url/devices are
// omitted (omitempty; the v0.7.0 LC's runtime.Model has device_soc_versions omitempty after url);
// input models never carry metrics, nor the v0.7.0 LC's "classes":null: no GM reads either, and
// both GM generations re-marshal the models before storing them (a v0.6+ GM adds "classes":null
// itself, a 2021 GM drops unknown keys). phase and status are always present, spelled as
// `spelling` says.
// The wire spelling of an LC-originated report's phase and status (the only place the core's
// enums meet text): an IL job's "Train"/"Eval"/"Deploy" and "Ready"/"Completed"/"Failed", an LL
// job's "train"/... and "ready"/... (as each Go controller writes and compares them).
enum class ReportSpelling { kIl, kLl };
std::string ReportPhaseText(core::ReportPhase p, ReportSpelling spelling);
std::string ReportStatusText(core::ReportStatus s, ReportSpelling spelling);
// Either spelling, any case; nullopt for any other text.
std::optional<core::ReportPhase> ParseReportPhase(std::string_view text);
std::optional<core::ReportStatus> ParseReportStatus(std::string_view text);
std::string EncodeStatusReport(const core::StatusReport& report, ReportSpelling spelling);

// {"numberOfSamples":N} (§P3.1).
std::string EncodeDatasetStatus(int64_t number_of_samples);

// A worker's POST body: the parsed report plus the raw parts that are forwarded verbatim.
struct WorkerMessage {
  core::WorkerReport report;
  RawJson results;                    // the `results` array; null when absent or null
  std::optional<RawJson> owner_info;  // the `ownerInfo` object, if present and not null
};

// Decodes a worker body (§P5.1). name, namespace, ownerName, ownerKind, kind, status must be
// strings, ownerInfo an object, results an array (each may be absent or null); any other type,
// or a body that is not a JSON object, is an error naming the key ("results: expected an array,
// got object"). namespace and ownerName, when not empty, must be a Kubernetes namespace and
// object name (k8s_names.h: 'ownerName: "a/b" must not contain '/''). Results are read leniently:
// report.results has one ModelRef per element (same indices), filled from `format`/`url` when they
// are strings, `metrics` when it is an object (number -> Number, array of numbers -> List, else
// Other) and `device_soc_versions` when it is an array of strings (else left empty); the first
// element that is not an object or lacks a string format/url is described in report.results_error
// (e.g. "results[0].url: missing", "results[1].format: expected a string, got number"). An element
// that is neither an object nor null is an error, as for Go's
// []map[string]interface{}. A body of more than kMaxWorkerBodyValues JSON values is refused
// ("invalid JSON: more than 32768 values"): each costs ~150 bytes parsed, so a 1 MiB body of `0,`
// would otherwise take ~75 MB. report.observed_metrics has one entry per result: its `metrics`
// as core::MetricNumbers (nested objects flattened, lists as means, bounded).
// With ReportMetrics::kDeferred the metrics are left for DecodeReportMetrics (results[i].metrics
// and observed_metrics empty; results_error still says when a `metrics` is not an object): the
// worker API answers from the rest, and the batch that commits the report decodes them.
inline constexpr size_t kMaxWorkerBodyValues = size_t{1} << 15;
enum class ReportMetrics { kDecode, kDeferred };
Result<WorkerMessage> DecodeWorkerMessage(std::string_view body,
                                          ReportMetrics metrics = ReportMetrics::kDecode);
// Fills report.results[i].metrics and report.observed_metrics from `results` (the message's
// `results` array), as DecodeWorkerMessage does with ReportMetrics::kDecode.
void DecodeReportMetrics(const RawJson& results, core::WorkerReport& report);
// Undoes DecodeReportMetrics (the report as ReportMetrics::kDeferred left it), memory included.
void DropReportMetrics(core::WorkerReport& report);

// The body's `name` when it is a JSON object whose (last) `name` member is a string, else "": what
// Go's decoder leaves in MessageContent.Name after a type error elsewhere in the body (it fills
// every field it can); after a syntax error it fills nothing. "" past kMaxWorkerBodyValues.
std::string WorkerNameIn(std::string_view body);

// Whether a worker report only informs ([D:I21]: it may not fill the outbox space that
// completions need): everything but a train or eval completion, i.e. unless `kind` is "train" or
// "eval" and `status` "completed" or "failed" (ASCII case-insensitive, as the LC compares kinds).
bool IsInformationalReport(std::string_view kind, std::string_view status);

// Whether an upstream frame (as EncodeFrame wrote it) is informational: a forwarded worker
// message (EncodeForwardedWorkerMessage: its `output` is an object) whose phase and status make
// IsInformationalReport true. The LC's own frames (condition answers, EncodeStatusReport, whose
// `output` is null; Dataset counts, which have no phase) and frames it cannot read are not.
// Decides from the frame up to its `"content":"` and the next 684 base64 characters (the first
// 513 bytes of the content), so it costs the same for any frame size; a phase or status string
// that does not end within them is none of the four names, hence informational.
bool IsInformationalFrame(std::string_view frame);

// The forwarded message (§P3.5): {"phase":kind,"status":status,"output":{"models":<results>,
// "ownerInfo":<ownerInfo>}}, results/ownerInfo as Go re-marshals them (map keys sorted, number
// text preserved), null when absent.
std::string EncodeForwardedWorkerMessage(const WorkerMessage& msg);

// What the GM stores as a condition's `data` for an upstream content (§P4.1): only
// input.{model,models,dataURL,dataIndexURL,outputDir} and output.{model,models} are kept, each
// model as {format,url,metrics}, everything omitempty (a present but empty input/output/model
// object stays as {}), metrics re-printed as Go float64s with sorted keys (0.70 -> 0.7). A member
// of the wrong type is an error naming its path, as the GM's json.Unmarshal would fail.
Result<std::string> CondDataFromUpstreamContent(std::string_view content);

// The worker API reply as go-restful pretty-prints ResponseMessage (1-space indent, no trailing
// newline): "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}".
std::string EncodeWorkerApiReply(int status, std::string_view message);

}  // namespace sedna::json
