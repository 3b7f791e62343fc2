// What the storage functions share, for storage's own files only (not part of storage.h's
// interface): the job's root and the host paths beneath it, S3 URLs with the object's
// credentials, and the LC's staging files.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>

#include "adapters/storage/storage.h"

namespace sedna::storage {

// `what` + ": " + strerror(errno).
std::string Errno(const std::string& what);
// The last component of `url`.
std::string Basename(const std::string& url);

// A file of the LC's own staging directory (Dir::OpenTrusted), created O_EXCL under a name no
// one can predict, and removed (if it is still the file created) when this goes out of scope.
class StagingFile {
 public:
  static Result<StagingFile> Make(const Context& ctx, const std::string& url) {
    auto dir = fs::Dir::OpenTrusted(ctx.staging_dir, true);
    if (!dir.ok()) return dir.status();
    static std::atomic<uint64_t> counter{0};
    thread_local std::mt19937_64 rng(std::random_device{}());
    std::string base = Basename(url).substr(0, 100);
    for (int attempt = 0; attempt < 16; ++attempt) {
      const std::string name = "stage-" + std::to_string(::getpid()) + "-" +
                               std::to_string(counter++) + "-" + std::to_string(rng()) + "-" + base;
      const int fd = ::openat(dir->fd(), name.c_str(),
                              O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0 && errno == EEXIST) continue;
      if (fd < 0) return Status::Error(Errno("creating a staging file in " + ctx.staging_dir));
      StagingFile f;
      f.fd_ = fs::UniqueFd(fd);
      auto st = fs::Fstat(fd, "staging file " + name);
      if (!st.ok()) return st.status();
      f.id_ = fs::IdOf(*st);
      f.path_ = ctx.staging_dir + "/" + name;
      f.name_ = name;
      f.dir_ = std::move(*dir);
      return f;
    }
    return Status::Error("creating a staging file in " + ctx.staging_dir + ": names taken");
  }
  StagingFile(StagingFile&& o) noexcept
      : dir_(std::move(o.dir_)),
        fd_(std::move(o.fd_)),
        id_(o.id_),
        path_(std::move(o.path_)),
        name_(std::move(o.name_)) {
    o.name_.clear();
  }
  StagingFile& operator=(StagingFile&&) = delete;
  ~StagingFile() {
    if (!name_.empty()) (void)dir_.RemoveFileIf(name_, id_);
  }
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  // The file as written so far, reopened for reading through its fd (for fs::CopyInto).
  Result<fs::OpenedFile> Reopen() const {
    fs::OpenedFile f;
    f.fd = fs::UniqueFd(::openat(dir_.fd(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!f.fd.valid()) return Status::Error(Errno("reading " + path_));
    if (::fstat(f.fd.get(), &f.st) != 0) return Status::Error(Errno("reading " + path_));
    if (!(fs::IdOf(f.st) == id_)) return Status::Error(path_ + ": replaced while staged");
    f.path = path_;
    return f;
  }

 private:
  StagingFile() = default;
  fs::Dir dir_;
  fs::UniqueFd fd_;
  fs::FileId id_;
  std::string path_, name_;
};

// The host path `url` beneath the job's root: its relative path, or an error naming the field.
Result<std::string> BeneathJobRoot(const Context& ctx, const std::string& url,
                                   const std::string& what);

// The job's root, opened once (host links resolved as the host would, never above the rootfs).
Result<fs::Dir> OpenJobRoot(const Context& ctx, bool create);

// `url` as an S3 URL, or an error naming it (also when the object has no credentials).
Result<s3::S3Url> ParseUrl(const Context& ctx, const std::string& url);

}  // namespace sedna::storage
