// inotify watch on dataset index files (design-notes §D2: sample appended -> reaction in
// milliseconds instead of a 60 s poll). Watches each index's parent DIRECTORY, so replacement by
// rename, deletion and re-creation of the file are seen too. Runs on the caller's io_context.
#pragma once

#include <utility>  // before any Asio header (Boost 1.74 with g++ 12)

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace sedna::dataset {

// Not thread-safe: construct, call and destroy it on the io_context's thread (or while the
// io_context is not running). The io_context must outlive the watcher.
class IndexWatcher {
 public:
  // on_change(file_path) runs on the io thread, with file_path exactly as given to Watch. It may
  // be called many times per burst of writes (coalescing is the caller's business) and may call
  // Watch, Unwatch or destroy the watcher. revive_interval: see Watch.
  IndexWatcher(boost::asio::io_context& io, std::function<void(const std::string&)> on_change,
               std::chrono::milliseconds revive_interval = std::chrono::seconds(1));
  ~IndexWatcher();
  IndexWatcher(const IndexWatcher&) = delete;
  IndexWatcher& operator=(const IndexWatcher&) = delete;

  // Watches the parent directory of file_path (IN_CREATE, IN_MODIFY, IN_CLOSE_WRITE,
  // IN_MOVED_TO, IN_DELETE, IN_MOVED_FROM) and calls on_change(file_path) for events on that file
  // name; also after an inotify queue overflow. Reference counted per file_path: each successful
  // Watch needs one Unwatch. Error if the directory does not exist or inotify is unavailable (the
  // caller polls and retries later).
  // If the directory is deleted, moved or unmounted, on_change is called for its files, the
  // references are kept and the watch is re-established every revive_interval until the
  // directory is back (then on_change is called again); Watching() is false meanwhile.
  Status Watch(const std::string& file_path);
  // Drops one reference; at zero no further on_change calls are made for file_path. Unknown
  // paths are ignored.
  void Unwatch(const std::string& file_path);
  // True while file_path is referenced and its directory watch is alive.
  bool Watching(const std::string& file_path) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sedna::dataset
