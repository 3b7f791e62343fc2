#include "adapters/fs/spare_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <utility>

namespace sedna::fs {
namespace {

constexpr char kDirPrefix[] = ".sedna-spare-";

// Removes the spare directories of processes that are gone from `dir` (empty ones only: rmdir).
void RemoveStaleDirs(const Dir& dir) {
  const int fd = ::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  const size_t plen = sizeof kDirPrefix - 1;
  size_t seen = 0;
  while (dirent* e = ::readdir(d)) {
    if (++seen > 4096) break;
    const std::string entry = e->d_name;
    if (entry.compare(0, plen, kDirPrefix) != 0) continue;
    const long pid = std::strtol(entry.c_str() + plen, nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlinkat(dir.fd(), entry.c_str(), AT_REMOVEDIR);
  }
  ::closedir(d);
}

}  // namespace

SpareFiles::~SpareFiles() {
  for (auto& [key, entry] : spares_) {
    for (const SpareDir& d : entry.dirs) Remove(d);
  }
}

void SpareFiles::Remove(const SpareDir& d) {
  // Only while it is still the directory made (an empty one: rmdir).
  auto st = d.parent.Lstat(d.name);
  if (st.ok() && *st && S_ISDIR((*st)->st_mode) && IdOf(**st) == d.id) {
    ::unlinkat(d.parent.fd(), d.name.c_str(), AT_REMOVEDIR);
  }
}

void SpareFiles::Want(const std::string& key) {
  std::lock_guard lock(mu_);
  spares_.try_emplace(key);
}

size_t SpareFiles::Fill(const std::string& key, const Dir& dir) {
  if (!dir.valid()) return 0;
  {
    std::lock_guard lock(mu_);
    if (spares_.find(key) == spares_.end()) return 0;
  }
  RemoveStaleDirs(dir);
  size_t made = 0;
  // What is made happens outside the lock: it is the slow part (the inodes' allocation).
  while (true) {
    bool want_file = false, want_dir = false;
    {
      std::lock_guard lock(mu_);
      auto it = spares_.find(key);
      if (it == spares_.end() || total_ >= max_total_) return made;
      want_file = it->second.files.size() < files_per_key_;
      want_dir = !want_file && it->second.dirs.empty();
      if (!want_file && !want_dir) return made;
    }
    if (want_file) {
      const int raw = ::openat(dir.fd(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
      if (raw < 0) return made;
      UniqueFd fd(raw);
      std::lock_guard lock(mu_);
      auto it = spares_.find(key);
      // Dropped meanwhile, or another Fill got there.
      if (it == spares_.end() || it->second.files.size() >= files_per_key_ ||
          total_ >= max_total_) {
        return made;
      }
      it->second.files.push_back(std::move(fd));
      ++total_;
    } else {
      static std::atomic<uint64_t> counter{0};
      SpareDir d;
      d.name = kDirPrefix + std::to_string(::getpid()) + "-" + std::to_string(counter++);
      if (::mkdirat(dir.fd(), d.name.c_str(), 0755) != 0) return made;
      auto parent = dir.Sub("", false);
      auto st = dir.Lstat(d.name);
      if (!parent.ok() || !st.ok() || !*st) {
        ::unlinkat(dir.fd(), d.name.c_str(), AT_REMOVEDIR);
        return made;
      }
      d.parent = std::move(*parent);
      d.id = IdOf(**st);
      std::unique_lock lock(mu_);
      auto it = spares_.find(key);
      if (it == spares_.end() || !it->second.dirs.empty() || total_ >= max_total_) {
        lock.unlock();
        Remove(d);
        return made;
      }
      it->second.dirs.push_back(std::move(d));
      ++total_;
    }
    ++made;
  }
}

UniqueFd SpareFiles::Take(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = spares_.find(key);
  if (it == spares_.end() || it->second.files.empty()) return UniqueFd();
  UniqueFd fd = std::move(it->second.files.back());
  it->second.files.pop_back();
  --total_;
  return fd;
}

std::optional<SpareFiles::SpareDir> SpareFiles::TakeDir(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = spares_.find(key);
  if (it == spares_.end() || it->second.dirs.empty()) return std::nullopt;
  SpareDir d = std::move(it->second.dirs.back());
  it->second.dirs.pop_back();
  --total_;
  return d;
}

std::vector<SpareFiles::SpareDir> SpareFiles::Drop(const std::string& key) {
  Entry gone;  // the files closed outside the lock
  {
    std::lock_guard lock(mu_);
    auto it = spares_.find(key);
    if (it == spares_.end()) return {};
    gone = std::move(it->second);
    total_ -= gone.files.size() + gone.dirs.size();
    spares_.erase(it);
  }
  return std::move(gone.dirs);
}

size_t SpareFiles::total() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace sedna::fs
