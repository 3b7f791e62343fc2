// Round sample files and model copies, on the node's disk or on S3 (docs/protocol.md §P7.4,
// §P9.3). URLs are host paths (read and written under the rootfs mount) or "s3://bucket/key".
//
// Nothing is ever half-visible: a host file is replaced atomically (temp + fsync + rename); an S3
// object appears whole with its one PUT (or server-side COPY). Every error names the URL and the
// cause; credentials never appear in one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "adapters/fs/confined.h"
#include "adapters/fs/files.h"
#include "adapters/fs/spare_files.h"
#include "adapters/fs/sync_batch.h"
#include "adapters/s3/s3_client.h"
#include "core/clock.h"
#include "core/status.h"

namespace sedna::storage {

struct Context {
  std::string rootfs;       // host paths live under it (fs::JoinRootfs)
  std::string staging_dir;  // local scratch for files on their way to or from S3 (the LC's own)
  // The LC's own record of the host files it created (model versions, hot-update files), which
  // pruning and job deletes are limited to (ledger.h). Empty: "ledger" beside staging_dir.
  std::string ledger_dir;
  // The job's root (its spec.outputDir root, a host path or s3:// URL): every sample file written
  // and every model source read on the job's behalf lies beneath it. A host root is opened once
  // (fs::Dir::OpenHost) and everything beneath it is opened with no link followed. Empty: no
  // job root, so any host sample file or model source is refused.
  std::string job_root;
  // Where model hot-update configs must lie (below rootfs; Config::hot_update_dir): the GM's
  // hostPath root in cluster mode, the local directory in standalone mode.
  std::string hot_update_dir = "/var/lib/sedna/model-hot-update";
  // Unnamed files made ahead beneath job roots (keyed by job_root), which sample files are written
  // into instead of new temp files. Null: none.
  fs::SpareFiles* spares = nullptr;
  // The owning object's sedna.io/credential, parsed; required when a URL is on S3.
  std::optional<s3::Credentials> credentials;
  s3::ClientOptions s3_options;
  // The time written into hot-update configs (WriteHotUpdate's model_update_time); it must outlive
  // the work done with this context. Null: the system clock.
  const core::Clock* clock = nullptr;
};

// The dataset's URL prefix written as the first line of dataIndex.txt (§P7.2 URLPrefix: the
// directory of the index URL with a trailing '/').
std::string UrlPrefix(const std::string& index_url);

// Which tokens of a sample line dataIndex.txt lists, one a line: kFirst, the first
// space-separated token (the 2021 LC); kEveryWithExtension, every space-separated token whose
// Go path.Ext is non-empty, i.e. with a '.' after its last '/' (the v0.5+ LC, so that label files
// are downloaded too: `img.png label.png` gives 2 lines, `0.5,0.3` 1, `img` none).
enum class IndexTokens { kFirst, kEveryWithExtension };

struct SampleFile {
  std::string url;                    // data.txt / data.csv
  std::string prefix;                 // written before the samples (a csv header line), or ""
  std::vector<fs::FileRange> ranges;  // the samples: byte ranges of spool files, one per line
  // Non-empty: also write dataIndex.txt there (§P7.4): `index_prefix` on the first line, then the
  // `index_tokens` of each sample line, in order.
  std::string index_url;
  std::string index_prefix;
  IndexTokens index_tokens = IndexTokens::kFirst;
};

// Writes the sample file and its dataIndex.txt. Host paths must lie beneath ctx.job_root (else an
// error naming the URL): the root is opened once (Dir::OpenHost, created if missing), the
// directories between it and the file are made or opened with no link followed (a link there,
// e.g. a worker's "data/train/3 -> /etc", is an error naming it), and each file is replaced
// within its directory's fd (Dir::ReplaceUnsynced: both files renamed before either's fsync, their
// writes in flight together; the caller sends Ready only after this returns, and re-issues the
// write after a restart until then). S3: each file is built
// in an O_EXCL staging file of staging_dir and uploaded with one PUT, the index first, so a visible
// data file always has its index; staging files are removed. Memory use does not depend on the
// number or size of the samples.
Status WriteSampleFile(const Context& ctx, const SampleFile& file);

// A sample file's host files put in place by PutSampleFile, their syncs still to make (none for
// files on S3, which are uploaded whole).
class PendingSampleFile {
 public:
  PendingSampleFile();
  ~PendingSampleFile();
  PendingSampleFile(PendingSampleFile&&) noexcept;
  PendingSampleFile& operator=(PendingSampleFile&&) noexcept;

  // The syncs that make the files durable where they are: each file's, its directory's, and the
  // parent's of a directory made for it. The fds stay open until Finish.
  std::vector<fs::SyncItem> Syncs() const;
  // Once the syncs Syncs gave were made (`synced`: the same items in the same order, their
  // errors set): closes the files and returns the first error, naming its file or directory.
  Status Finish(const std::vector<fs::SyncItem>& synced);

  struct HostFile;  // one file put in place (storage.cc)

 private:
  friend Result<PendingSampleFile> PutSampleFile(const Context& ctx, const SampleFile& file);
  std::vector<HostFile> files_;
};

// WriteSampleFile up to its syncs: on success the files are in place (a process crash leaves them
// whole; a power loss before the syncs may leave them short) and WriteSampleFile's result is
// Finish's once the syncs are made. For a caller that makes the syncs of several jobs' files
// together (fs::Syncer); WriteSampleFile makes them at once with fs::SyncAll.
Result<PendingSampleFile> PutSampleFile(const Context& ctx, const SampleFile& file);

// Makes ctx.spares' spare files for ctx.job_root, in that root (a host root that exists; nothing
// for S3, no spares or no root). For the pool, ahead of the next WriteSampleFile of the job.
void FillSpareFiles(const Context& ctx);

// Copies a model file from `src_url` to `dst_url`: host -> host atomic copy ([P:B13]), S3 -> S3
// server-side COPY, host -> S3 upload, S3 -> host download into staging_dir then an atomic copy.
// A host source must lie beneath ctx.job_root: it is opened once (the root with Dir::OpenHost,
// the file with Dir::OpenFile: no link followed, a regular file), and only that fd is read, so
// swapping the name for a link at any time cannot make the LC read another file. A host target's
// directory is opened with Dir::OpenHost (created if missing) and its entry replaced within it
// (fs::CopyInto; a link at the target's name is replaced, never followed).
Status CopyModel(const Context& ctx, const std::string& src_url, const std::string& dst_url);

// CopyModel, calling `before_replace` (if set) right before the target is written: with the S3
// client when the target is on S3 (target_dir null), else with the target's directory as opened
// for the write (client null; the target's entry is target_dir's entry named by the URL's last
// component). An error from it stops the copy with the target untouched. For model_versions.h.
Status CopyModelWith(
    const Context& ctx, const std::string& src_url, const std::string& dst_url,
    const std::function<Status(s3::Client* client, const fs::Dir* target_dir)>& before_replace);

}  // namespace sedna::storage
