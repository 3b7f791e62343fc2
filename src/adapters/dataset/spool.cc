#include "adapters/dataset/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <system_error>

#include "adapters/dataset/regular_file.h"
#include "adapters/fs/files.h"

namespace sedna::dataset {
namespace {

constexpr size_t kBufferLimit = 64 * 1024;

Status SpoolError(const std::string& what, const std::string& path, int e) {
  return Status::Error(what + " " + path + ": " + std::system_category().message(e));
}

}  // namespace

Result<std::unique_ptr<Spool>> Spool::Open(const std::string& path, int64_t committed_size) {
  if (committed_size < 0) {
    return Result<std::unique_ptr<Spool>>::Error(
        "opening spool " + path + ": negative committed size " + std::to_string(committed_size));
  }
  // Only a regular file is opened (a device's open can have effects of its own), and the open
  // cannot block (a FIFO); the fstat after it closes the race with a replacement in between.
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed) {
    if (Status s = RequireRegularFile("opening spool", path, st.st_mode); !s.ok()) return s;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0) return SpoolError("opening spool", path, errno);
  std::unique_ptr<Spool> spool(new Spool(path, fd, committed_size));
  if (::fstat(fd, &st) != 0) return SpoolError("opening spool", path, errno);
  if (Status s = RequireRegularFile("opening spool", path, st.st_mode); !s.ok()) return s;
  if (st.st_size < committed_size) {
    return Result<std::unique_ptr<Spool>>::Error(
        "opening spool " + path + ": size " + std::to_string(st.st_size) +
        " is below the committed size " + std::to_string(committed_size));
  }
  if (st.st_size > committed_size) {
    if (::ftruncate(fd, committed_size) != 0 || ::fdatasync(fd) != 0) {
      return SpoolError("truncating spool", path, errno);
    }
  }
  // The file may have just been created: make its directory entry durable. A file that already
  // existed needs it only once per directory and process (one fsync makes every entry durable),
  // not once per spool: a restart with 100 jobs would otherwise fsync the directory 200 times.
  std::string dir = path.substr(0, path.find_last_of('/') + 1);
  if (dir.empty()) dir = ".";
  static std::mutex synced_mu;
  static std::set<std::string> synced_dirs;
  {
    std::lock_guard<std::mutex> lock(synced_mu);
    if (existed && synced_dirs.count(dir)) return spool;
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return SpoolError("opening spool directory", dir, errno);
  const int rc = ::fsync(dfd);
  const int e = errno;
  ::close(dfd);
  if (rc != 0) return SpoolError("syncing spool directory", dir, e);
  std::lock_guard<std::mutex> lock(synced_mu);
  synced_dirs.insert(dir);
  return spool;
}

Spool::Spool(std::string path, int fd, int64_t size)
    : path_(std::move(path)), fd_(fd), written_(size) {}

Spool::~Spool() { ::close(fd_); }

Status Spool::Append(std::string_view sample) {
  if (std::memchr(sample.data(), '\n', sample.size()) != nullptr) {
    return Status::Error("spool " + path_ + ": sample contains a newline");
  }
  const size_t old_size = buffer_.size();
  buffer_.append(sample);
  buffer_.push_back('\n');
  if (buffer_.size() < kBufferLimit) return Status::Ok();
  Status s = WriteBuffer();
  if (!s.ok()) buffer_.resize(old_size);
  return s;
}

Status Spool::Truncate(int64_t size) {
  if (size < 0 || size > this->size()) {
    return Status::Error("truncating spool " + path_ + ": size " + std::to_string(size) +
                         " outside [0, " + std::to_string(this->size()) + "]");
  }
  if (size >= written_) {
    buffer_.resize(static_cast<size_t>(size - written_));
    return Status::Ok();
  }
  buffer_.clear();
  if (::ftruncate(fd_, size) != 0) return SpoolError("truncating spool", path_, errno);
  written_ = size;
  return Status::Ok();
}

Status Spool::WriteBuffer() {
  if (buffer_.empty()) return Status::Ok();
  if (Status s = fs::WriteAllAt(fd_, written_, buffer_, path_); !s.ok()) return s;
  written_ += static_cast<int64_t>(buffer_.size());
  buffer_.clear();
  if (buffer_.capacity() > 4 * kBufferLimit) buffer_.shrink_to_fit();  // after a huge sample
  return Status::Ok();
}

Status Spool::Flush() {
  if (Status s = WriteBuffer(); !s.ok()) return s;
  return Synced(::fdatasync(fd_) == 0 ? 0 : errno);
}

Status Spool::PrepareSync(std::vector<fs::SyncItem>& syncs) {
  if (Status s = WriteBuffer(); !s.ok()) return s;
  syncs.push_back({fd_, true, 0});
  return Status::Ok();
}

Status Spool::Synced(int error) const {
  if (error != 0) return SpoolError("syncing", path_, error);
  return Status::Ok();
}

}  // namespace sedna::dataset
