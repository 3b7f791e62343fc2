// Deployed models kept as versions so that a deploy can be rolled back (design-notes §D4;
// docs/design-notes.md, "Model versions").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adapters/storage/storage.h"
#include "core/status.h"

namespace sedna::storage {

// Deploys keep the models they replace as numbered versions (design-notes §D4), in a hidden
// directory beside the target that inference workers loading the target, or scanning its
// directory, do not see: "<dir>/.sedna-versions/<name>.<n>", n = 1, 2, … (the newest is the
// highest). Only the versions this LC made and recorded in its ledger (ledger.h: name, dev, ino,
// in the LC's spool) are versions: anything else a worker puts in that directory is neither
// listed, restored nor deleted. At most kKeptModelVersions are kept; a deploy or restore deletes
// older ones (each only while it still is the recorded file).
inline constexpr int kKeptModelVersions = 5;
inline constexpr char kVersionDirName[] = ".sedna-versions";

// The URL of version `n` of the deploy target `dst_url` (a host path or s3:// URL).
std::string ModelVersionUrl(const std::string& dst_url, int64_t n);

struct DeployResult {
  int64_t kept_version = 0;  // the number the replaced model was kept as; 0: no earlier model
  // Non-empty: the deploy succeeded, but the replaced target was not kept (a link or not a
  // regular file), or older versions were not pruned; says which and why.
  std::string warning;
};

// CopyModel(ctx, src_url, dst_url), keeping the target's current model, if any, as the next
// version first. Host target: its directory is opened once (fs::Dir::OpenHost) and flocked
// (against rollback-model); the copy's target directory must be that one. The old target is
// kept only if it opens as a regular file (Dir::OpenFile, no link followed): a symlink or a
// non-regular file is not kept (DeployResult::warning) and is replaced, never followed. The
// version directory is opened with Dir::Sub: a link there fails the deploy, naming it, with
// nothing written through it and the target untouched. The kept file is recorded, then
// hard-linked into the version directory (copied from the opened fd when the filesystem refuses
// a link or the entry changed), and the directory fsynced before the new file is renamed over
// the target, so the target is the old or the new complete file at every moment and the old one
// survives a crash. A target that is already the newest recorded version (same dev/ino: a deploy
// re-run after a crash) is not kept twice. S3 target: a server-side COPY of the old object to
// the version key before the new object is written (skipped when the newest version has the
// same ETag). An error keeping the version fails the deploy before the target is touched.
Result<DeployResult> DeployModel(const Context& ctx, const std::string& src_url,
                                 const std::string& dst_url);

struct ModelVersion {
  int64_t number = 0;
  std::string path;  // as seen by this process (under the rootfs)
  int64_t size = 0;
  int64_t mtime = 0;  // seconds since the epoch: when that model was written (deployed)
};

// The kept (recorded, still as recorded) versions of a host deploy target, oldest first (none:
// empty). S3 URLs are an error.
Result<std::vector<ModelVersion>> ListModelVersions(const Context& ctx, const std::string& dst_url);

// Restores version `number` of a host deploy target (a recorded version, read through
// Dir::OpenFile with its dev/ino checked): the current target is kept as the next version first (so
// a restore can be undone), then the version is copied over the target atomically, then versions
// beyond kKeptModelVersions are pruned. Returns the number the replaced model was kept as (0: there
// was no target), and a warning when pruning failed (the restore stands). A number that is not kept
// is an error naming it and the kept ones; S3 URLs are an error.
Result<DeployResult> RestoreModelVersion(const Context& ctx, const std::string& dst_url,
                                         int64_t number);

namespace internal {
// DeployModel with the host target's directory already opened (`target_dir`, e.g. beneath a
// job's hot-update directory with no link followed); null: opened here with fs::Dir::OpenHost.
// The copy's own target directory (CopyModelWith's hook) must be that directory, else the deploy
// fails with the target untouched.
Result<DeployResult> DeployModelIn(const Context& ctx, const std::string& src_url,
                                   const std::string& dst_url, const fs::Dir* target_dir);
}  // namespace internal

}  // namespace sedna::storage
