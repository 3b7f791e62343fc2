// Round sample files and model copies, on the node's disk or on S3 (sedna-protocol.md §7.4,
// §9.3). URLs are host paths (read and written under the rootfs mount) or "s3://bucket/key".
//
// Nothing is ever half-visible: a host file is replaced atomically (temp + fsync + rename); an S3
// object appears whole with its one PUT (or server-side COPY). Every error names the URL and the
// cause; credentials never appear in one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/fs/files.h"
#include "adapters/s3/s3_client.h"
#include "core/status.h"

namespace sedna::storage {

struct Context {
  std::string rootfs;       // host paths live under it (fs::JoinRootfs)
  std::string staging_dir;  // local scratch for files on their way to or from S3
  // The owning object's sedna.io/credential, parsed; required when a URL is on S3.
  std::optional<s3::Credentials> credentials;
  s3::ClientOptions s3_options;
};

// The dataset's URL prefix written as the first line of dataIndex.txt (§7.2 URLPrefix: the
// directory of the index URL with a trailing '/').
std::string UrlPrefix(const std::string& index_url);

struct SampleFile {
  std::string url;                    // data.txt / data.csv
  std::string prefix;                 // written before the samples (a csv header line), or ""
  std::vector<fs::FileRange> ranges;  // the samples: byte ranges of spool files, one per line
  // Non-empty: also write dataIndex.txt there (§7.4): `index_prefix` on the first line, then the
  // first space-separated token of each sample line, in order.
  std::string index_url;
  std::string index_prefix;
};

// Writes the sample file and its dataIndex.txt. Host paths: parent directories created, each file
// replaced atomically. S3: each file is built in staging_dir and uploaded with one PUT, the index
// first, so a visible data file always has its index; staging files are removed. Memory use does
// not depend on the number or size of the samples.
Status WriteSampleFile(const Context& ctx, const SampleFile& file);

// Copies a model file from `src_url` to `dst_url`: host -> host atomic copy (B13), S3 -> S3
// server-side COPY, host -> S3 upload, S3 -> host download into staging_dir then an atomic copy.
Status CopyModel(const Context& ctx, const std::string& src_url, const std::string& dst_url);

// Deploys keep the models they replace as numbered versions (design.md §4), in a hidden
// directory beside the target that inference workers loading the target, or scanning its
// directory, do not see: "<dir>/.sedna-versions/<name>.<n>", n = 1, 2, … (the newest is the
// highest). At most kKeptModelVersions are kept; a deploy or restore deletes older ones.
inline constexpr int kKeptModelVersions = 5;
inline constexpr char kVersionDirName[] = ".sedna-versions";

// The URL of version `n` of the deploy target `dst_url` (a host path or s3:// URL).
std::string ModelVersionUrl(const std::string& dst_url, int64_t n);

struct DeployResult {
  int64_t kept_version = 0;  // the number the replaced model was kept as; 0: no earlier model
  std::string warning;       // non-empty: the deploy succeeded but older versions were not pruned
};

// CopyModel(ctx, src_url, dst_url), keeping the target's current model, if any, as the next
// version first. Host target: the old file is hard-linked into the version directory (copied
// when the filesystem refuses a link) and the directory fsynced before the new file is renamed
// over the target, so the target is the old or the new complete file at every moment and the
// old one survives a crash. A target that is already the newest version (same inode: a deploy
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

// The kept versions of a host deploy target, oldest first (none: empty). S3 URLs are an error.
Result<std::vector<ModelVersion>> ListModelVersions(const Context& ctx, const std::string& dst_url);

// Restores version `number` of a host deploy target: the current target is kept as the next
// version first (so a restore can be undone), then the version is copied over the target
// atomically, then versions beyond kKeptModelVersions are pruned. Returns the number the
// replaced model was kept as (0: there was no target), and a warning when pruning failed (the
// restore stands). A number that is not kept is an error
// naming it and the kept ones; S3 URLs are an error.
Result<DeployResult> RestoreModelVersion(const Context& ctx, const std::string& dst_url,
                                         int64_t number);

}  // namespace sedna::storage
