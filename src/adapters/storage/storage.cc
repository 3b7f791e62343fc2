#include "adapters/storage/storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>

namespace sedna::storage {

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string Basename(const std::string& url) { return url.substr(url.rfind('/') + 1); }

// A file in staging_dir that is removed when this goes out of scope.
class StagingFile {
 public:
  static Result<StagingFile> Make(const Context& ctx, const std::string& url) {
    if (Status s = fs::MakeDirs(ctx.staging_dir); !s.ok()) return s;
    static std::atomic<uint64_t> counter{0};
    StagingFile f;
    f.path_ = ctx.staging_dir + "/stage-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter++) + "-" + Basename(url);
    return f;
  }
  StagingFile(StagingFile&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  StagingFile& operator=(StagingFile&&) = delete;
  ~StagingFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  StagingFile() = default;
  std::string path_;
};

// Writes `first_line` + '\n', then the first space-separated token of each line of `ranges`
// (one per line), to a new file at `path` (not atomic: `path` is a staging file).
Status WriteIndexFile(const std::string& path, const std::string& first_line,
                      const std::vector<fs::FileRange>& ranges) {
  int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return Status::Error(Errno("writing " + path));
  std::string buf = first_line + "\n";
  Status st = Status::Ok();
  auto flush = [&]() -> bool {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n = ::write(out, buf.data() + done, buf.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        st = Status::Error(Errno("writing " + path));
        return false;
      }
      done += static_cast<size_t>(n);
    }
    buf.clear();
    return true;
  };
  std::vector<char> chunk(64 * 1024);
  for (const auto& r : ranges) {
    if (!st.ok()) break;
    int in = ::open(r.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      st = Status::Error(Errno("reading " + r.path));
      break;
    }
    bool in_token = true, line_open = false;
    for (int64_t off = r.begin; off < r.end && st.ok();) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(chunk.size(), r.end - off));
      ssize_t n = ::pread(in, chunk.data(), want, off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        st = n < 0 ? Status::Error(Errno("reading " + r.path))
                   : Status::Error("reading " + r.path + ": range [" + std::to_string(r.begin) +
                                   ", " + std::to_string(r.end) + ") is past the end of the file");
        break;
      }
      for (ssize_t i = 0; i < n; ++i) {
        const char c = chunk[static_cast<size_t>(i)];
        if (c == '\n') {
          buf.push_back('\n');
          in_token = true;
          line_open = false;
        } else {
          line_open = true;
          if (c == ' ') in_token = false;
          if (in_token) buf.push_back(c);
        }
      }
      off += n;
      if (buf.size() >= chunk.size() && !flush()) break;
    }
    if (st.ok() && line_open) buf.push_back('\n');
    ::close(in);
  }
  if (st.ok()) flush();
  if (::close(out) != 0 && st.ok()) st = Status::Error(Errno("writing " + path));
  return st;
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

// Writes `prefix` + `ranges` (or the index of `ranges`) to `url`.
Status WriteOne(const Context& ctx, const std::string& url, const std::string& prefix,
                const std::vector<fs::FileRange>& ranges, bool index) {
  if (!fs::IsS3Url(url)) {
    const std::string path = fs::JoinRootfs(ctx.rootfs, url);
    if (Status s = fs::MakeDirs(fs::Dirname(path)); !s.ok()) return s;
    if (!index) return fs::WriteFileFromRanges(path, prefix, ranges);
    auto tmp = StagingFile::Make(ctx, url);
    if (!tmp.ok()) return tmp.status();
    if (Status s = WriteIndexFile(tmp->path(), prefix, ranges); !s.ok()) return s;
    return fs::AtomicCopyFile(tmp->path(), path);
  }
  auto u = ParseUrl(ctx, url);
  if (!u.ok()) return u.status();
  auto tmp = StagingFile::Make(ctx, url);
  if (!tmp.ok()) return tmp.status();
  Status s = index ? WriteIndexFile(tmp->path(), prefix, ranges)
                   : fs::WriteFileFromRanges(tmp->path(), prefix, ranges);
  if (!s.ok()) return s;
  s3::Client client(*ctx.credentials, ctx.s3_options);
  return client.PutFile(*u, tmp->path());
}

}  // namespace

std::string UrlPrefix(const std::string& index_url) {
  return index_url.substr(0, index_url.rfind('/') + 1);
}

Status WriteSampleFile(const Context& ctx, const SampleFile& file) {
  if (!file.index_url.empty()) {
    if (Status s = WriteOne(ctx, file.index_url, file.index_prefix, file.ranges, true); !s.ok()) {
      return s;
    }
  }
  return WriteOne(ctx, file.url, file.prefix, file.ranges, false);
}

Status CopyModelWith(const Context& ctx, const std::string& src_url, const std::string& dst_url,
                     const std::function<Status(s3::Client*, const fs::Dir*)>& before_replace) {
  const bool src_s3 = fs::IsS3Url(src_url), dst_s3 = fs::IsS3Url(dst_url);
  if (!src_s3 && !dst_s3) {
    if (before_replace) {
      if (Status s = before_replace(nullptr, nullptr); !s.ok()) return s;
    }
    return fs::AtomicCopyFile(fs::JoinRootfs(ctx.rootfs, src_url),
                              fs::JoinRootfs(ctx.rootfs, dst_url));
  }
  Result<s3::S3Url> src = s3::S3Url{}, dst = s3::S3Url{};
  if (src_s3) src = ParseUrl(ctx, src_url);
  if (!src.ok()) return src.status();
  if (dst_s3) dst = ParseUrl(ctx, dst_url);
  if (!dst.ok()) return dst.status();
  s3::Client client(*ctx.credentials, ctx.s3_options);
  if (dst_s3 && before_replace) {
    if (Status s = before_replace(&client, nullptr); !s.ok()) return s;
  }
  if (src_s3 && dst_s3) return client.Copy(*src, *dst);
  if (dst_s3) return client.PutFile(*dst, fs::JoinRootfs(ctx.rootfs, src_url));
  // S3 -> host: download to staging, then replace the target atomically.
  auto tmp = StagingFile::Make(ctx, dst_url);
  if (!tmp.ok()) return tmp.status();
  int fd = ::open(tmp->path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(Errno("writing " + tmp->path()));
  Status s = client.Get(*src, 0, -1, [&](std::string_view chunk) -> Status {
    while (!chunk.empty()) {
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Error(Errno("writing " + tmp->path()));
      }
      chunk.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  });
  if (::close(fd) != 0 && s.ok()) s = Status::Error(Errno("writing " + tmp->path()));
  if (!s.ok()) return s;
  if (before_replace) {
    if (Status k = before_replace(nullptr, nullptr); !k.ok()) return k;
  }
  return fs::AtomicCopyFile(tmp->path(), fs::JoinRootfs(ctx.rootfs, dst_url));
}

Status CopyModel(const Context& ctx, const std::string& src_url, const std::string& dst_url) {
  return CopyModelWith(ctx, src_url, dst_url, nullptr);
}

}  // namespace sedna::storage
