// The shared context's helpers (context.h).
#include "app/cluster/context.h"

#include <malloc.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include <cctype>
#include <chrono>

#include "adapters/json/go_json.h"
#include "core/resources.h"

namespace sedna::app {

void HeapTrim::Schedule() {
  constexpr auto kTrimDelay = std::chrono::seconds(2);
  if (armed_ || cancelled_) return;
  if (!keeping_) {
    json::KeepParsedDocuments(kReportBatch);
    keeping_ = true;
  }
  if (!timer_) timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  armed_ = true;
  timer_->expires_after(kTrimDelay);
  timer_->async_wait([this](const boost::system::error_code& ec) {
    armed_ = false;
    if (!ec && !cancelled_) {
      json::ReleaseKeptDocuments();
      if (release_) release_();
      ::malloc_trim(0);
    }
  });
}

void HeapTrim::Cancel() {
  cancelled_ = true;
  if (timer_) timer_->cancel();
  if (keeping_) json::KeepParsedDocuments(0);
}

struct FileSyncs::Wait {
  boost::asio::posix::stream_descriptor fd;  // a dup of the syncer's eventfd
};

FileSyncs::FileSyncs(boost::asio::io_context& io) : io_(io) {
  if (!syncer_.async()) return;
  const int fd = ::dup(syncer_.event_fd());
  if (fd < 0) return;  // no wait: every batch is then synced on its caller's thread
  wait_ = std::make_unique<Wait>(Wait{boost::asio::posix::stream_descriptor(io, fd)});
}

FileSyncs::~FileSyncs() { *alive_ = false; }

void FileSyncs::Sync(std::vector<fs::SyncItem> items, fs::Syncer::Done done) {
  if (!wait_) {  // synced on this thread (each item's error set), done before it returns
    fs::SyncAll(items);
    done(items);
    return;
  }
  if (syncer_.Sync(std::move(items), std::move(done))) {
    boost::asio::post(io_, [this, alive = alive_] {
      if (*alive) Arm();
    });
  }
}

void FileSyncs::Stop() {
  stopped_ = true;
  if (wait_) wait_->fd.cancel();
}

void FileSyncs::Arm() {
  if (armed_ || stopped_ || syncer_.in_flight() == 0) return;
  armed_ = true;
  wait_->fd.async_wait(boost::asio::posix::descriptor_base::wait_read,
                       [this, alive = alive_](const boost::system::error_code& ec) {
                         if (ec || !*alive) return;
                         armed_ = false;
                         if (stopped_) return;
                         syncer_.Reap();
                         Arm();  // while syncs are in flight
                       });
}

Result<std::optional<s3::Credentials>> CredentialsOf(const std::optional<std::string>& json) {
  if (!json) return std::optional<s3::Credentials>();
  auto c = s3::ParseCredentialAnnotation(*json);
  if (!c.ok()) {
    return Status::Error(std::string("metadata.annotations[") + core::kCredentialAnnotation +
                         "]: " + c.message());
  }
  return std::optional<s3::Credentials>(*c);
}

std::string SanitizeKey(const std::string& key) {
  std::string s;
  for (char c : key)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return s;
}

}  // namespace sedna::app
