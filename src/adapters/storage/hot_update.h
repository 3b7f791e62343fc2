// Model hot update (sedna-head-protocol.md §4.1): the model files and the model_config.json that
// a hot-update inference worker polls, written as the v0.7.0 LC writes them, but atomically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/storage/model_versions.h"
#include "adapters/storage/storage.h"
#include "core/il_job.h"
#include "core/status.h"

namespace sedna::storage {

// The host directory every hot-update config must lie in (runtime.ModelHotUpdateHostPrefix).
inline constexpr const char* kHotUpdateHostDir = "/var/lib/sedna/model-hot-update";

// The bytes the v0.7.0 LC writes: json.MarshalIndent of
// {"model_config":{"model_path":..,"model_update_time":..}} with prefix "" and indent " " (keys
// sorted, strings escaped as Go does, `<` `>` `&` included), no trailing newline.
std::string ModelConfigJson(std::string_view model_path, std::string_view update_time);

// Go's Time.String() of a time with a monotonic reading:
// "2006-01-02 15:04:05.999999999 -0700 MST m=+3600.000000001". `unix_nanos` is the wall time,
// printed in a zone `utc_offset_seconds` east of UTC named `zone` (Go prints the numeric offset
// again, "+0800", when the zone has no name); the fraction loses its trailing zeros (and its dot
// when zero); `mono_nanos` is printed as signed seconds with 9 decimals.
std::string GoTimeString(int64_t unix_nanos, int utc_offset_seconds, std::string_view zone,
                         int64_t mono_nanos);
// time.Now().String() for this process: the local zone (TZ, /etc/localtime), and the monotonic
// reading counted from the start of the process, as Go counts it.
std::string GoTimeNow();

struct HotUpdateResult {
  std::vector<DeployResult> copies;  // one per copy of the action, in order
  std::string config_file;           // the file written, as this process sees it (rootfs)
  std::string update_time;           // the model_update_time written
};

// Executes a core::il::WriteHotUpdate (contract in core/il_job.h): first refuses a config_path
// that does not resolve (symlinks, "..") strictly inside <rootfs>/var/lib/sedna/model-hot-update/
// ("hot-update config path /etc/x is not inside /var/lib/sedna/model-hot-update"), then runs each
// copy as DeployModel does (the replaced model kept as a version; host paths under the rootfs,
// S3 sources downloaded; every file replaced by temp + fsync + rename), then replaces
// <rootfs><config_path> with ModelConfigJson(model_path, GoTimeNow()), mode 0644 whatever the
// umask. Any error stops there: the config is written only after every model file, so a failed
// copy leaves the old config (and so the worker's model) in place. Blocking: run on the pool.
Result<HotUpdateResult> WriteHotUpdate(const Context& ctx, const core::il::WriteHotUpdate& action);

// What the v0.7.0 LC does on a job delete (§4.1, RemoveAll(<rootfs>/dirname(config))): removes
// the directory of `config_path` (the job's hot-update annotation) and everything in it, after the
// same check as WriteHotUpdate, so that no annotation can remove anything outside a job's own
// directory below kHotUpdateHostDir. A directory that does not exist is not an error. Blocking.
Status RemoveHotUpdateDir(const Context& ctx, const std::string& config_path);

}  // namespace sedna::storage
