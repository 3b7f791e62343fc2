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

// The process's knowledge of spool directory entries: directories synced since it started (an
// entry that existed before is then durable), and files it created whose entry it has not synced
// since (a directory synced before they were created does not cover them).
struct Entries {
  std::mutex mu;
  std::set<std::string> synced_dirs;
  std::set<std::string> unsynced;
};
Entries g_entries;

std::string DirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "./" : path.substr(0, slash + 1);
}

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
  const std::string dir = DirOf(path);
  bool durable = false;
  {
    std::lock_guard<std::mutex> lock(g_entries.mu);
    if (!existed) {
      g_entries.unsynced.insert(path);
    } else {
      durable = g_entries.synced_dirs.count(dir) > 0 && g_entries.unsynced.count(path) == 0;
    }
  }
  std::unique_ptr<Spool> spool(new Spool(path, fd, committed_size, durable));
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
  return spool;
}

void Spool::Removed(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_entries.mu);
  g_entries.unsynced.erase(path);
}

Spool::Spool(std::string path, int fd, int64_t size, bool entry_durable)
    : path_(std::move(path)),
      dir_(DirOf(path_)),
      fd_(fd),
      written_(size),
      entry_durable_(entry_durable) {}

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
  if (::fdatasync(fd_) != 0) return SpoolError("syncing", path_, errno);
  if (entry_durable()) return Status::Ok();
  auto dir = OpenDir();
  if (!dir.ok()) return dir.status();
  return EntrySynced(::fsync(dir->get()) == 0 ? 0 : errno);
}

Result<fs::UniqueFd> Spool::OpenDir() const {
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return SpoolError("opening spool directory", dir_, errno);
  return fs::UniqueFd(dfd);
}

Status Spool::PrepareSync(SyncList& list) {
  if (Status s = WriteBuffer(); !s.ok()) return s;
  entry_at_ = -1;
  if (!entry_durable()) {
    auto it = list.dirs.find(dir_);
    if (it == list.dirs.end()) {
      auto dir = OpenDir();
      if (!dir.ok()) return dir.status();
      entry_fd_ = std::move(*dir);
      it = list.dirs.emplace(dir_, list.items.size()).first;
      list.items.push_back({entry_fd_.get(), false, 0});
    }
    entry_at_ = static_cast<int>(it->second);
  }
  data_at_ = static_cast<int>(list.items.size());
  list.items.push_back({fd_, true, 0});
  return Status::Ok();
}

Status Spool::Synced(const std::vector<fs::SyncItem>& synced) {
  auto error_at = [&](int at) {  // a sync not made is an I/O error
    return at >= 0 && static_cast<size_t>(at) < synced.size()
               ? synced[static_cast<size_t>(at)].error
               : EIO;
  };
  const int data_error = error_at(data_at_);
  Status s = data_error == 0 ? Status::Ok() : SpoolError("syncing", path_, data_error);
  if (entry_at_ >= 0) {
    Status e = EntrySynced(error_at(entry_at_));
    if (s.ok()) s = e;
  }
  data_at_ = entry_at_ = -1;
  entry_fd_.Reset();
  return s;
}

Status Spool::EntrySynced(int error) {
  if (error != 0) return SpoolError("syncing spool directory", dir_, error);
  entry_durable_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_entries.mu);
  g_entries.synced_dirs.insert(dir_);
  g_entries.unsynced.erase(path_);
  return Status::Ok();
}

}  // namespace sedna::dataset
