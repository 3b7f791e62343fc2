#include "adapters/dataset/index_watcher.h"

#include <utility>  // before any Asio header (Boost 1.74 with g++ 12)

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>
#include <system_error>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/fs/files.h"

namespace sedna::dataset {
namespace {

constexpr uint32_t kFileEvents =
    IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM;
constexpr uint32_t kDirGone = IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT;
constexpr uint32_t kWatchMask = kFileEvents | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

std::string ErrnoText(int e) { return std::system_category().message(e); }

}  // namespace

struct IndexWatcher::Impl : std::enable_shared_from_this<Impl> {
  struct File {
    std::string dir;
    std::string name;
    int refs = 0;
  };
  struct Dir {
    int wd = -1;                                         // -1: gone, to be revived
    std::map<std::string, std::set<std::string>> names;  // file name -> file paths
  };

  Impl(boost::asio::io_context& io, std::function<void(const std::string&)> cb,
       std::chrono::milliseconds interval)
      : on_change(std::move(cb)), revive_interval(interval), revive_timer(io) {
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
      init_errno = errno;
      return;
    }
    sd = std::make_unique<boost::asio::posix::stream_descriptor>(io);
    boost::system::error_code ec;
    sd->assign(fd, ec);
    if (ec) {
      init_errno = ec.value();
      ::close(fd);
      sd.reset();
    }
  }

  void WaitReadable() {
    if (closed || !sd) return;
    sd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [weak = weak_from_this()](const boost::system::error_code& ec) {
                     auto self = weak.lock();
                     if (!self || self->closed || ec) return;
                     self->OnReadable();
                   });
  }

  void OnReadable() {
    std::vector<std::string> notify;
    alignas(struct inotify_event) char buf[16 * 1024];
    for (;;) {
      const ssize_t n = ::read(sd->native_handle(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EAGAIN: drained
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const struct inotify_event*>(buf + off);
        off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
        HandleEvent(*ev, &notify);
      }
    }
    Notify(notify);
    WaitReadable();
  }

  void AddAll(const Dir& d, std::vector<std::string>* out) {
    for (const auto& [name, paths] : d.names) out->insert(out->end(), paths.begin(), paths.end());
  }

  void HandleEvent(const struct inotify_event& ev, std::vector<std::string>* notify) {
    if (ev.mask & IN_Q_OVERFLOW) {
      for (const auto& [path, file] : files) notify->push_back(path);
      return;
    }
    auto wit = wd_dirs.find(ev.wd);
    if (wit == wd_dirs.end()) return;
    if (ev.mask & kDirGone) {
      for (const std::string& dir : wit->second) {
        Dir& d = dirs[dir];
        d.wd = -1;
        AddAll(d, notify);
      }
      if (!(ev.mask & IN_IGNORED)) ::inotify_rm_watch(sd->native_handle(), ev.wd);
      wd_dirs.erase(wit);
      ArmRevive();
      return;
    }
    if (ev.len == 0 || !(ev.mask & kFileEvents)) return;
    const std::string name(ev.name);
    for (const std::string& dir : wit->second) {
      const Dir& d = dirs[dir];
      auto nit = d.names.find(name);
      if (nit == d.names.end()) continue;
      for (const std::string& path : nit->second) {
        if (notify->empty() || notify->back() != path) notify->push_back(path);
      }
    }
  }

  // Calls on_change for each path still watched; the callback may change or destroy the watcher.
  void Notify(const std::vector<std::string>& paths) {
    auto keep_alive = shared_from_this();
    for (const std::string& path : paths) {
      if (closed) return;
      if (files.count(path) != 0) on_change(path);
    }
  }

  Status AddWatch(const std::string& dir) {
    const int wd = ::inotify_add_watch(sd->native_handle(), dir.c_str(), kWatchMask);
    if (wd < 0) return Status::Error("watching directory " + dir + ": " + ErrnoText(errno));
    dirs[dir].wd = wd;
    wd_dirs[wd].insert(dir);
    return Status::Ok();
  }

  void ArmRevive() {
    if (revive_armed || closed) return;
    revive_armed = true;
    revive_timer.expires_after(revive_interval);
    revive_timer.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (!self || self->closed || ec) return;
      self->revive_armed = false;
      self->ReviveDead();
    });
  }

  void ReviveDead() {
    std::vector<std::string> notify;
    bool still_dead = false;
    for (auto& [dir, d] : dirs) {
      if (d.wd >= 0) continue;
      if (AddWatch(dir).ok()) {
        AddAll(d, &notify);
      } else {
        still_dead = true;
      }
    }
    if (still_dead) ArmRevive();
    Notify(notify);
  }

  std::function<void(const std::string&)> on_change;
  std::chrono::milliseconds revive_interval;
  int init_errno = 0;
  bool closed = false;
  bool revive_armed = false;
  std::unique_ptr<boost::asio::posix::stream_descriptor> sd;
  boost::asio::steady_timer revive_timer;
  std::map<std::string, File> files;             // by file path as given
  std::map<std::string, Dir> dirs;               // by cleaned directory path
  std::map<int, std::set<std::string>> wd_dirs;  // one wd per directory inode
};

IndexWatcher::IndexWatcher(boost::asio::io_context& io,
                           std::function<void(const std::string&)> on_change,
                           std::chrono::milliseconds revive_interval)
    : impl_(std::make_shared<Impl>(io, std::move(on_change), revive_interval)) {
  impl_->WaitReadable();
}

IndexWatcher::~IndexWatcher() {
  impl_->closed = true;
  boost::system::error_code ec;
  impl_->revive_timer.cancel();
  if (impl_->sd) impl_->sd->close(ec);  // closing the inotify fd drops every watch
}

Status IndexWatcher::Watch(const std::string& file_path) {
  Impl& m = *impl_;
  if (!m.sd) {
    return Status::Error("watching " + file_path + ": inotify_init1: " + ErrnoText(m.init_errno));
  }
  if (auto it = m.files.find(file_path); it != m.files.end()) {
    Impl::Dir& d = m.dirs[it->second.dir];
    if (d.wd < 0) {
      if (Status s = m.AddWatch(it->second.dir); !s.ok()) return s.With("watching " + file_path);
    }
    ++it->second.refs;
    return Status::Ok();
  }
  const std::string cleaned = fs::CleanPath(file_path);
  const size_t slash = cleaned.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : cleaned.substr(0, slash);
  const std::string name = slash == std::string::npos ? cleaned : cleaned.substr(slash + 1);
  if (file_path.empty() || file_path.back() == '/' || name == "." || name == "..") {
    return Status::Error("watching " + file_path + ": not a file path");
  }
  auto dit = m.dirs.find(dir);
  if (dit == m.dirs.end() || dit->second.wd < 0) {
    if (Status s = m.AddWatch(dir); !s.ok()) return s.With("watching " + file_path);
  }
  m.dirs[dir].names[name].insert(file_path);
  m.files[file_path] = Impl::File{dir, name, 1};
  return Status::Ok();
}

void IndexWatcher::Unwatch(const std::string& file_path) {
  Impl& m = *impl_;
  auto it = m.files.find(file_path);
  if (it == m.files.end() || --it->second.refs > 0) return;
  const Impl::File file = it->second;
  m.files.erase(it);
  Impl::Dir& d = m.dirs[file.dir];
  auto nit = d.names.find(file.name);
  if (nit != d.names.end()) {
    nit->second.erase(file_path);
    if (nit->second.empty()) d.names.erase(nit);
  }
  if (!d.names.empty()) return;
  if (d.wd >= 0) {
    auto wit = m.wd_dirs.find(d.wd);
    if (wit != m.wd_dirs.end()) {
      wit->second.erase(file.dir);
      if (wit->second.empty()) {
        ::inotify_rm_watch(m.sd->native_handle(), d.wd);
        m.wd_dirs.erase(wit);
      }
    }
  }
  m.dirs.erase(file.dir);
}

bool IndexWatcher::Watching(const std::string& file_path) const {
  auto it = impl_->files.find(file_path);
  if (it == impl_->files.end()) return false;
  auto dit = impl_->dirs.find(it->second.dir);
  return dit != impl_->dirs.end() && dit->second.wd >= 0;
}

}  // namespace sedna::dataset
