// The shared context's helpers (context.h).
#include "app/cluster/context.h"

#include <malloc.h>

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
      ::malloc_trim(0);
    }
  });
}

void HeapTrim::Cancel() {
  cancelled_ = true;
  if (timer_) timer_->cancel();
  if (keeping_) json::KeepParsedDocuments(0);
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
