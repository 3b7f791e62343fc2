// Model hot update (docs/protocol.md §H4.1): the model files and the model_config.json that
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
// time.Now().String() for this process, read from `clock`: its wall time in the local zone (TZ,
// /etc/localtime), and its monotonic reading counted from the start of the process (on the system
// steady clock), as Go counts it.
std::string GoTimeNow(const core::Clock& clock);
std::string GoTimeNow();  // from the system clock

struct HotUpdateResult {
  std::vector<DeployResult> copies;  // one per copy of the action, in order
  std::string config_file;           // the file written, as this process sees it (rootfs)
  std::string update_time;           // the model_update_time written
  // The same write had finished before (a restart between the config's rename and the core's
  // record of it): nothing was written again; update_time is the one then written.
  bool resumed = false;
};

// The job <ns>/<name>'s own hot-update directory (a host path):
// <hot_update_dir>/<ns>/incrementallearningjob/<name>, lower-cased as Sedna's GM builds it.
// Everything WriteHotUpdate writes for the job lies beneath it.
Result<std::string> HotUpdateJobDir(const Context& ctx, const std::string& ns,
                                    const std::string& name);

// Executes a core::il::WriteHotUpdate (contract in core/il_job.h). The job's directory is derived
// from action.job_namespace/job_name (HotUpdateJobDir), never from the annotation, and opened
// once (fs::Dir::OpenHost, created when missing); config_path (the annotation) must lie
// lexically strictly beneath it, else nothing is done and the error names the annotation and the
// directory. Then each copy runs as DeployModel does (the replaced model kept as a version; a
// copy into the job's directory goes into a directory opened beneath it with no link followed,
// so a link a worker planted there is never followed: a linked target is replaced, not kept, a
// linked .sedna-versions fails the copy), then the config is written beneath the job's directory
// (fs::Dir::Replace, mode 0644 whatever the umask) with ModelConfigJson(model_path,
// GoTimeNow(clock)), `clock` the context's. Every file written beneath the job's directory is
// recorded (with its dev/ino) in the LC's ledger (ledger.h) for RemoveHotUpdateDir. Any error stops
// there: the config is written only after every model file, so a failed copy leaves the old config
// (and so the worker's model) in place. Each config write is recorded in the ledger (before the
// rename) with its key, the action's condition and a hash of what it writes; an action whose write
// has finished (the recorded file, by dev/ino, is the config in place) is not done again and
// returns `resumed`. Blocking: run on the pool.
Result<HotUpdateResult> WriteHotUpdate(const Context& ctx, const core::il::WriteHotUpdate& action);

// On a job delete (v0.7.0 removes the whole directory of the annotation, §H4.1): removes only what
// this LC wrote in job <ns>/<name>'s hot-update directory, as recorded in its ledger: each file
// and the versions kept of it, only while it still is the file recorded (RemoveFileIf by
// dev/ino), then each directory that held them and the job's directory if they are empty.
// Anything else (a worker's files, another job's directory) stays. Nothing recorded, or no
// directory: ok. Blocking.
Status RemoveHotUpdateDir(const Context& ctx, const std::string& ns, const std::string& name);

}  // namespace sedna::storage
