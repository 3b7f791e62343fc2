#include "adapters/storage/storage_internal.h"

#include <cerrno>
#include <cstring>

namespace sedna::storage {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string Basename(const std::string& url) { return url.substr(url.rfind('/') + 1); }

Result<std::string> BeneathJobRoot(const Context& ctx, const std::string& url,
                                   const std::string& what) {
  if (Status s = fs::CheckPathBounds(url, what + " " + url); !s.ok()) return s;
  if (ctx.job_root.empty() || fs::IsS3Url(ctx.job_root)) {
    return Status::Error(
        what + " " + url + " is a host path but the job's output directory " +
        (ctx.job_root.empty() ? std::string("is not set") : "is on S3 (" + ctx.job_root + ")"));
  }
  auto rel = fs::RelativeBeneath(ctx.job_root, url);
  if (!rel) {
    return Status::Error(what + " " + url + " is not beneath the job's output directory " +
                         ctx.job_root);
  }
  return *rel;
}

Result<fs::Dir> OpenJobRoot(const Context& ctx, bool create) {
  return fs::Dir::OpenHost(ctx.rootfs, ctx.job_root, create);
}

Result<s3::S3Url> ParseUrl(const Context& ctx, const std::string& url) {
  auto u = s3::ParseS3Url(url);
  if (!u.ok()) return Status::Error(url + ": " + u.message());
  if (!ctx.credentials) {
    return Status::Error(url + " is on S3 but the object has no sedna.io/credential annotation " +
                         "(is spec.credentialName set, and has the GM sent the object since the " +
                         "LC started?)");
  }
  return *u;
}

}  // namespace sedna::storage
