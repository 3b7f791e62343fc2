// Model copies (storage.h): host to host through a copy into the target's directory, host to S3
// from a staging copy of the opened source, S3 to host through a staging file, S3 to S3
// server-side.
#include "adapters/storage/storage.h"

#include <unistd.h>

#include <memory>
#include <optional>

#include "adapters/storage/storage_internal.h"

namespace sedna::storage {

Status CopyModelWith(const Context& ctx, const std::string& src_url, const std::string& dst_url,
                     const std::function<Status(s3::Client*, const fs::Dir*)>& before_replace) {
  const bool src_s3 = fs::IsS3Url(src_url), dst_s3 = fs::IsS3Url(dst_url);
  Result<s3::S3Url> src = s3::S3Url{}, dst = s3::S3Url{};
  if (src_s3) src = ParseUrl(ctx, src_url);
  if (!src.ok()) return src.status();
  if (dst_s3) dst = ParseUrl(ctx, dst_url);
  if (!dst.ok()) return dst.status();
  // A host source is opened once, here, beneath the job's root, and read from that fd only.
  std::optional<fs::OpenedFile> src_file;
  if (!src_s3) {
    auto rel = BeneathJobRoot(ctx, src_url, "model source");
    if (!rel.ok()) return rel.status();
    auto root = OpenJobRoot(ctx, false);
    if (!root.ok()) return Status::Error("model source " + src_url + ": " + root.message());
    auto f = root->OpenFile(*rel);
    if (!f.ok()) return Status::Error("model source " + src_url + ": " + f.message());
    src_file = std::move(*f);
  }
  // A host target: its directory opened (created) once and its entry replaced within it.
  auto copy_to_host = [&](const fs::OpenedFile& from) -> Status {
    if (Status s = fs::CheckPathBounds(dst_url, "model target " + dst_url); !s.ok()) return s;
    const fs::DirAndName dn = fs::SplitDirName(dst_url);
    if (dst_url.empty() || dst_url[0] != '/' || dn.name.empty()) {
      return Status::Error("model target " + dst_url + ": not an absolute host file path");
    }
    // A target beneath the job's root (LL's <out>/deploy/index.pkl) is in a directory its
    // workers can write: opened beneath the root, no link followed. Any other target's directory
    // (a Model's URL, the hot-update directory) is the operator's: opened as the host would.
    Result<fs::Dir> dir = fs::Dir();
    if (auto rel = fs::IsS3Url(ctx.job_root) || ctx.job_root.empty()
                       ? std::nullopt
                       : fs::RelativeBeneath(ctx.job_root, dn.dir)) {
      auto root = OpenJobRoot(ctx, true);
      if (!root.ok()) return Status::Error("model target " + dst_url + ": " + root.message());
      dir = root->Sub(*rel, true);
    } else {
      dir = fs::Dir::OpenHost(ctx.rootfs, dn.dir, true);
    }
    if (!dir.ok()) return Status::Error("model target " + dst_url + ": " + dir.message());
    if (before_replace) {
      if (Status s = before_replace(nullptr, &*dir); !s.ok()) return s;
    }
    auto id = fs::CopyInto(from, *dir, dn.name);
    return id.status();
  };
  if (!src_s3 && !dst_s3) return copy_to_host(*src_file);
  s3::Client client(*ctx.credentials, ctx.s3_options);
  if (dst_s3 && before_replace) {
    if (Status s = before_replace(&client, nullptr); !s.ok()) return s;
  }
  if (src_s3 && dst_s3) return client.Copy(*src, *dst);
  if (dst_s3) {
    // The upload reads a staging copy made from the opened source, never the source by name.
    auto tmp = StagingFile::Make(ctx, src_url);
    if (!tmp.ok()) return tmp.status();
    auto buf = std::make_unique_for_overwrite<char[]>(128 * 1024);
    for (int64_t off = 0;;) {
      const ssize_t n = ::pread(src_file->fd.get(), buf.get(), 128 * 1024, off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::Error(Errno("reading " + src_file->path));
      if (n == 0) break;
      if (Status s = fs::WriteAllAt(
              tmp->fd(), off, std::string_view(buf.get(), static_cast<size_t>(n)), tmp->path());
          !s.ok()) {
        return s;
      }
      off += n;
    }
    return client.PutFile(*dst, tmp->path());
  }
  // S3 -> host: download to an O_EXCL staging file, then copy it into the target's directory.
  auto tmp = StagingFile::Make(ctx, dst_url);
  if (!tmp.ok()) return tmp.status();
  int64_t off = 0;
  Status s = client.Get(*src, 0, -1, [&](std::string_view chunk) -> Status {
    if (Status w = fs::WriteAllAt(tmp->fd(), off, chunk, tmp->path()); !w.ok()) return w;
    off += static_cast<int64_t>(chunk.size());
    return Status::Ok();
  });
  if (!s.ok()) return s;
  auto staged = tmp->Reopen();
  if (!staged.ok()) return staged.status();
  staged->st.st_mode = (staged->st.st_mode & ~07777) | 0644;  // the target's mode, not 0600
  return copy_to_host(*staged);
}

Status CopyModel(const Context& ctx, const std::string& src_url, const std::string& dst_url) {
  return CopyModelWith(ctx, src_url, dst_url, nullptr);
}

}  // namespace sedna::storage
