// S3 access for datasets, models and job outputs (docs/protocol.md §P2.5, §P7.2, §P9.3).
//
// Path-style addressing (`http(s)://<endpoint>/<bucket>/<key>`); every request is SigV4-signed
// with x-amz-content-sha256 set to the payload's real SHA-256. Failed attempts are retried with
// exponential backoff on 5xx answers and transport errors, never on 4xx. Errors read
// "<METHOD> s3://<bucket>/<key>: <HTTP status> <S3 Code>: <S3 Message>", e.g.
// "PUT s3://b/k: 403 SignatureDoesNotMatch: The request signature we calculated does not match…",
// or "GET s3://b/k: connection to http://10.0.0.1:9000 failed: <cause> (4 attempts)"; the attempt
// count appears when there was more than one. Copy errors start "PUT s3://dst/k (copy of
// s3://src/k)", List errors "LIST s3://bucket/prefix", HEAD errors carry the HTTP reason phrase
// (no body). The secret key never appears in an error message.
//
// Clock: each request is signed with the system clock's time (X-Amz-Date), not the controller's
// (core/clock.h): S3 rejects a signature more than 15 minutes off its own clock, so the date must
// be the host's real time, and it is never persisted or compared with anything the LC keeps.
// Attempt timeouts and retry backoff are libcurl's and this client's own, also on the system clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/s3/s3_address.h"
#include "core/status.h"

namespace sedna::s3 {

struct ObjectInfo {
  int64_t size = 0;
  std::string etag;  // without the surrounding quotes
};

struct ClientOptions {
  // Per attempt: the limit for connecting, and for any stretch with no byte moving either way
  // (whole seconds, at least 1). Not a limit on a whole transfer, which may be long for big
  // objects.
  std::chrono::milliseconds timeout{100000};
  // Extra attempts after the first; sleeps backoff, 2*backoff, 4*backoff… in between.
  int retries = 3;
  std::chrono::milliseconds backoff{200};
};

// Holds one libcurl easy handle, reused across requests (connections are kept alive). Not
// thread-safe: one Client per thread. Move-only; a moved-from Client may only be destroyed or
// assigned to. Object operations need a non-empty key.
class Client {
 public:
  explicit Client(Credentials credentials, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Result<ObjectInfo> Head(const S3Url& url);

  // Streams bytes [offset, offset+length) of the object to `sink`, in chunks of at most 16 KiB;
  // length -1 means to the end. Memory use does not depend on the object size. A range reaching
  // past the end yields the bytes up to the end; an offset at or past the end of a non-empty
  // object is an error (416 InvalidRange). length 0 makes no request and returns ok. A transfer
  // cut short is resumed where it stopped (If-Match on the first answer's ETag), so the sink sees
  // every byte exactly once and in order. A sink error aborts the transfer and is returned as is.
  Status Get(const S3Url& url, int64_t offset, int64_t length,
             const std::function<Status(std::string_view chunk)>& sink);
  // The same, pinned to one version of the object: every request carries If-Match on `etag` (an
  // ObjectInfo::etag from Head, without quotes; empty: no pin, as above). When the object no
  // longer has that ETag, S3 answers 412 and this returns, without retrying,
  // "GET s3://b/k: 412 PreconditionFailed: …"; the sink may already have received bytes of the
  // pinned version (a resumed transfer that found the object replaced).
  Status Get(const S3Url& url, int64_t offset, int64_t length, const std::string& etag,
             const std::function<Status(std::string_view chunk)>& sink);

  // Uploads the regular file at `local_path`, streamed from disk in one PUT (S3's 5 GiB limit
  // applies). The signed payload hash comes from a first streaming pass over the file; the upload
  // pass hashes again and, if the file changed in between, aborts before the last byte is sent, so
  // no object is stored whether or not the server checks x-amz-content-sha256.
  Status PutFile(const S3Url& url, const std::string& local_path);
  Status PutBytes(const S3Url& url, std::string_view data);

  // Server-side copy (x-amz-copy-source, at most 5 GiB); nothing passes through this process. A
  // 200 answer carrying an <Error> body is an error.
  Status Copy(const S3Url& src, const S3Url& dst);

  // Keys under `prefix` (every page of ListObjectsV2), in S3 order (UTF-8 binary).
  Result<std::vector<std::string>> List(const std::string& bucket, const std::string& prefix);

  // Deleting a missing key is ok (S3 answers 204).
  Status Delete(const S3Url& url);

  // Creates the bucket in the credentials' region.
  Status CreateBucket(const std::string& bucket);

  // HTTP requests this client has sent so far: every attempt, retries and resumptions included.
  int64_t requests_sent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sedna::s3
