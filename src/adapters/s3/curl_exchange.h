// One signed HTTP exchange with S3 over libcurl (not for the client's users): the request
// (method, path, query, extra headers, payload and its SHA-256), SigV4-signed (sigv4.h) with the
// system clock's time, sent on one reused easy handle (connections kept alive), and the reply:
// status, reason phrase, the final response's headers, and the body, either streamed to a
// consumer (2xx) or collected (up to 32 MiB). A file upload is re-hashed as it is sent and
// aborted before its last byte if the file changed since its hash was signed. No retries here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "adapters/s3/lazy_libs.h"
#include "adapters/s3/s3_address.h"
#include "adapters/s3/sigv4.h"

namespace sedna::s3 {

struct Reply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string reason;
  std::map<std::string, std::string> headers;  // lower-cased names, of the final response
  std::string body;                            // non-2xx bodies, and 2xx ones without on_data
  std::string transport_error;
  std::string upload_error;
  bool consumer_stopped = false;
  bool body_too_large = false;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Exchange {
  std::string method;
  std::string path;  // unencoded "/bucket[/key]"
  Params query;      // unencoded
  Params headers;    // extra headers, all signed
  std::string payload_sha256{kEmptySha256};
  std::string_view body;  // upload source when fd < 0
  int fd = -1;            // upload source: bytes [0, fd_size) of this file
  int64_t fd_size = 0;
  std::string fd_path;
  // Receives 2xx bodies chunk by chunk (reply.status and reply.headers are set); false stops
  // the transfer (reply.consumer_stopped).
  std::function<bool(const Reply&, std::string_view)> on_data;
};

// The easy handle and the identity requests are signed with. libcurl and libcrypto are loaded
// on construction (lazy_libs.h); when either cannot be, loaded() is false and load_error() says
// why. Not thread-safe; move-only through the Client that owns it.
class CurlSession {
 public:
  // `timeout`: per attempt, for connecting and for any stretch with no byte moving.
  CurlSession(const Credentials& creds, std::chrono::milliseconds timeout);
  ~CurlSession();
  CurlSession(const CurlSession&) = delete;
  CurlSession& operator=(const CurlSession&) = delete;

  bool loaded() const { return lib_ != nullptr; }
  const std::string& load_error() const { return load_error_; }
  const std::string& base_url() const { return base_url_; }  // "http://127.0.0.1:9000"
  int64_t requests_sent() const { return requests_sent_; }

  // One attempt; transport failures are in Reply::code and Reply::transport_error.
  Reply Perform(const Exchange& ex);

 private:
  std::string endpoint_;
  SigningIdentity id_;
  std::string base_url_;
  std::chrono::milliseconds timeout_;
  CURL* curl_ = nullptr;
  const CurlApi* lib_ = nullptr;
  std::string load_error_;  // libcurl or libcrypto could not be loaded
  char errbuf_[CURL_ERROR_SIZE] = {};
  int64_t requests_sent_ = 0;
};

}  // namespace sedna::s3
