// The signed libcurl exchange (curl_exchange.h).
#include "adapters/s3/curl_exchange.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "adapters/s3/s3_text.h"
#include "core/ascii.h"

namespace sedna::s3 {
namespace {

// Bodies kept in memory: error documents and ListObjectsV2 pages (1000 keys of <= 1 KiB each).
constexpr size_t kMaxCollectedBody = 32u << 20;
constexpr long kDownloadBufferSize = 16 << 10;

struct Transfer {
  const Exchange* ex;
  Reply* reply;
  CURL* curl;
  const CurlApi* lib;
  int64_t upload_pos = 0;
  Sha256 upload_hash;
};

size_t HeaderCallback(char* data, size_t size, size_t n, void* p) {
  auto* t = static_cast<Transfer*>(p);
  const std::string_view line = Trim(std::string_view(data, size * n));
  if (line.substr(0, 5) == "HTTP/") {  // a new response (after 100 Continue, say)
    t->reply->headers.clear();
    t->reply->reason.clear();
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 != std::string_view::npos) t->reply->reason = std::string(Trim(line.substr(sp2 + 1)));
  } else if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    t->reply->headers[core::AsciiLowered(Trim(line.substr(0, colon)))] =
        std::string(Trim(line.substr(colon + 1)));
  }
  return size * n;
}

size_t WriteCallback(char* data, size_t size, size_t n, void* p) {
  auto* t = static_cast<Transfer*>(p);
  const size_t len = size * n;
  t->lib->easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->reply->status);
  if (t->reply->status >= 200 && t->reply->status < 300 && t->ex->on_data) {
    if (!t->ex->on_data(*t->reply, std::string_view(data, len))) {
      t->reply->consumer_stopped = true;
      return 0;
    }
    return len;
  }
  if (t->reply->body.size() + len > kMaxCollectedBody) {
    t->reply->body_too_large = true;
    return 0;
  }
  t->reply->body.append(data, len);
  return len;
}

size_t ReadCallback(char* buf, size_t size, size_t n, void* p) {
  auto* t = static_cast<Transfer*>(p);
  const Exchange& ex = *t->ex;
  const int64_t total = ex.fd >= 0 ? ex.fd_size : static_cast<int64_t>(ex.body.size());
  const int64_t left = total - t->upload_pos;
  if (left <= 0) return 0;
  const size_t want = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(size * n)));
  if (ex.fd < 0) {
    std::memcpy(buf, ex.body.data() + t->upload_pos, want);
    t->upload_pos += static_cast<int64_t>(want);
    return want;
  }
  ssize_t got;
  do {
    got = pread(ex.fd, buf, want, t->upload_pos);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    t->reply->upload_error = "reading " + ex.fd_path + ": " + std::strerror(errno);
    return CURL_READFUNC_ABORT;
  }
  if (got == 0) {
    t->reply->upload_error = ex.fd_path + " shrank during the upload";
    return CURL_READFUNC_ABORT;
  }
  t->upload_hash.Update(std::string_view(buf, static_cast<size_t>(got)));
  t->upload_pos += got;
  if (t->upload_pos == total && t->upload_hash.FinalHex() != ex.payload_sha256) {
    t->reply->upload_error = ex.fd_path + " changed during the upload";
    return CURL_READFUNC_ABORT;
  }
  return static_cast<size_t>(got);
}

int SeekCallback(void* p, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(p);
  if (origin != SEEK_SET || offset != 0) return CURL_SEEKFUNC_CANTSEEK;
  t->upload_pos = 0;
  t->upload_hash = Sha256();
  return CURL_SEEKFUNC_OK;
}

}  // namespace

CurlSession::CurlSession(const Credentials& creds, std::chrono::milliseconds timeout)
    : endpoint_(creds.endpoint),
      id_{creds.access_key, creds.secret_key, creds.region, "s3"},
      base_url_((creds.use_https ? "https://" : "http://") + creds.endpoint),
      timeout_(timeout) {
  lib_ = LoadCrypto(&load_error_) ? LoadCurl(&load_error_) : nullptr;
  if (lib_ != nullptr) curl_ = lib_->easy_init();
}

CurlSession::~CurlSession() {
  if (curl_ != nullptr) lib_->easy_cleanup(curl_);
}

Reply CurlSession::Perform(const Exchange& ex) {
  Reply reply;
  if (curl_ == nullptr) {
    reply.code = CURLE_FAILED_INIT;
    reply.transport_error = lib_ == nullptr ? load_error_ : "curl_easy_init failed";
    return reply;
  }
  lib_->easy_reset(curl_);  // keeps the connection cache
  errbuf_[0] = '\0';
  Transfer t{&ex, &reply, curl_, lib_};

  std::string url = base_url_ + CanonicalUri(ex.path);
  const std::string query = CanonicalQueryString(ex.query);
  if (!query.empty()) url += "?" + query;
  RequestToSign to_sign{ex.method, ex.path, ex.query, ex.headers, ex.payload_sha256};
  const Params headers =
      SignS3Request(std::move(to_sign), endpoint_, id_, std::chrono::system_clock::now());
  curl_slist* list = nullptr;
  for (const auto& [name, value] : headers) {
    list = lib_->slist_append(list, (name + ": " + value).c_str());
  }

  const long timeout_ms = static_cast<long>(std::max<int64_t>(timeout_.count(), 1));
  lib_->easy_setopt(curl_, CURLOPT_URL, url.c_str());
  lib_->easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
  lib_->easy_setopt(curl_, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  lib_->easy_setopt(curl_, CURLOPT_HTTPHEADER, list);
  lib_->easy_setopt(curl_, CURLOPT_ERRORBUFFER, errbuf_);
  lib_->easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
  lib_->easy_setopt(curl_, CURLOPT_TCP_KEEPALIVE, 1L);
  lib_->easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  lib_->easy_setopt(curl_, CURLOPT_LOW_SPEED_LIMIT, 1L);
  lib_->easy_setopt(curl_, CURLOPT_LOW_SPEED_TIME, std::max(1L, (timeout_ms + 999) / 1000));
  lib_->easy_setopt(curl_, CURLOPT_BUFFERSIZE, kDownloadBufferSize);
  lib_->easy_setopt(curl_, CURLOPT_HEADERFUNCTION, HeaderCallback);
  lib_->easy_setopt(curl_, CURLOPT_HEADERDATA, &t);
  lib_->easy_setopt(curl_, CURLOPT_WRITEFUNCTION, WriteCallback);
  lib_->easy_setopt(curl_, CURLOPT_WRITEDATA, &t);
  if (ex.method == "HEAD") {
    lib_->easy_setopt(curl_, CURLOPT_NOBODY, 1L);
  } else if (ex.method == "GET") {
    lib_->easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
  } else if (ex.method == "PUT") {
    const int64_t size = ex.fd >= 0 ? ex.fd_size : static_cast<int64_t>(ex.body.size());
    lib_->easy_setopt(curl_, CURLOPT_UPLOAD, 1L);
    lib_->easy_setopt(curl_, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    lib_->easy_setopt(curl_, CURLOPT_READFUNCTION, ReadCallback);
    lib_->easy_setopt(curl_, CURLOPT_READDATA, &t);
    lib_->easy_setopt(curl_, CURLOPT_SEEKFUNCTION, SeekCallback);
    lib_->easy_setopt(curl_, CURLOPT_SEEKDATA, &t);
  } else {
    lib_->easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, ex.method.c_str());
  }

  ++requests_sent_;
  reply.code = lib_->easy_perform(curl_);
  lib_->easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &reply.status);
  if (reply.code != CURLE_OK) {
    reply.transport_error = errbuf_[0] != '\0' ? errbuf_ : lib_->easy_strerror(reply.code);
  }
  lib_->slist_free_all(list);
  return reply;
}

}  // namespace sedna::s3
