// The S3 client's operations (s3_client.h): each builds its exchanges (curl_exchange.h), retries
// them with backoff on 5xx and transport errors, reads the answers (s3_xml.h) and words the
// errors.
#include "adapters/s3/s3_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "adapters/s3/curl_exchange.h"
#include "adapters/s3/s3_text.h"
#include "adapters/s3/s3_xml.h"
#include "adapters/s3/sigv4.h"

namespace sedna::s3 {
namespace {

constexpr size_t kHashBufferSize = 256u << 10;

// The verdict on one attempt.
struct Attempt {
  Status status;
  bool retry = false;
  bool verbatim = false;  // return status unchanged (a sink's own error)
};

std::string ObjectPath(const S3Url& url) { return "/" + url.bucket + "/" + url.key; }

Status CheckObjectUrl(const std::string& what, const S3Url& url) {
  if (url.bucket.empty()) return Status::Error(what + ": empty bucket");
  if (url.key.empty()) return Status::Error(what + ": empty key");
  return Status::Ok();
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

struct Client::Impl {
  Credentials creds;
  ClientOptions opts;
  CurlSession session;

  Impl(Credentials c, ClientOptions o)
      : creds(std::move(c)), opts(o), session(creds, opts.timeout) {}

  std::string Redact(std::string m) const {
    if (creds.secret_key.empty()) return m;
    for (size_t pos = 0; (pos = m.find(creds.secret_key, pos)) != std::string::npos;) {
      m.replace(pos, creds.secret_key.size(), "[secret]");
    }
    return m;
  }

  // "403 SignatureDoesNotMatch: …" from an S3 error document, else "404 Not Found".
  static std::string HttpError(const Reply& r) {
    std::string out = std::to_string(r.status);
    const std::string code = XmlText(r.body, "Code");
    if (!code.empty()) {
      out += " " + code;
      const std::string message = XmlText(r.body, "Message");
      if (!message.empty()) out += ": " + message;
    } else if (!r.reason.empty()) {
      out += " " + r.reason;
    }
    return out;
  }

  Attempt Classify(const Reply& r) const {
    if (!r.upload_error.empty()) return {Status::Error(r.upload_error)};
    if (r.body_too_large) return {Status::Error("response body larger than 32 MiB")};
    if (r.code != CURLE_OK) {
      return {Status::Error(ErrorCode::kUnavailable, "connection to " + session.base_url() +
                                                         " failed: " + r.transport_error),
              true};
    }
    if (r.status >= 500) return {Status::Http(static_cast<int>(r.status), HttpError(r)), true};
    if (r.status < 200 || r.status >= 300) {
      return {Status::Http(static_cast<int>(r.status), HttpError(r))};
    }
    return {Status::Ok()};
  }

  Status Retrying(const std::string& what, const std::function<Attempt()>& attempt) {
    // A library that could not be loaded stays missing: no attempt, no retry.
    if (!session.loaded()) return Status::Error(what + ": " + session.load_error());
    Attempt a;
    int n = 0;
    for (;;) {
      a = attempt();
      ++n;
      if (a.status.ok() || !a.retry || n > opts.retries) break;
      std::this_thread::sleep_for(opts.backoff * (int64_t{1} << std::min(n - 1, 20)));
    }
    if (a.status.ok() || a.verbatim) return a.status;
    std::string m = what + ": " + a.status.message();
    if (n > 1) m += " (" + std::to_string(n) + " attempts)";
    return a.status.WithMessage(Redact(std::move(m)));
  }

  // Runs `ex` with retries; the final reply is left in *reply.
  Status Run(const std::string& what, const Exchange& ex, Reply* reply) {
    return Retrying(what, [&] {
      *reply = session.Perform(ex);
      return Classify(*reply);
    });
  }
};

Client::Client(Credentials credentials, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(credentials), options)) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

Result<ObjectInfo> Client::Head(const S3Url& url) {
  const std::string what = "HEAD " + ToString(url);
  if (Status s = CheckObjectUrl(what, url); !s.ok()) return s;
  Exchange ex{"HEAD", ObjectPath(url)};
  Reply r;
  if (Status s = impl_->Run(what, ex, &r); !s.ok()) return s;
  ObjectInfo info;
  if (!ParseInt64(r.Header("content-length"), &info.size)) {
    return Result<ObjectInfo>::Error(what + ": no valid Content-Length in the answer");
  }
  info.etag = r.Header("etag");
  if (info.etag.size() >= 2 && info.etag.front() == '"' && info.etag.back() == '"') {
    info.etag = info.etag.substr(1, info.etag.size() - 2);
  }
  return info;
}

Status Client::Get(const S3Url& url, int64_t offset, int64_t length,
                   const std::function<Status(std::string_view chunk)>& sink) {
  return Get(url, offset, length, std::string(), sink);
}

Status Client::Get(const S3Url& url, int64_t offset, int64_t length, const std::string& if_match,
                   const std::function<Status(std::string_view chunk)>& sink) {
  const std::string what = "GET " + ToString(url);
  if (Status s = CheckObjectUrl(what, url); !s.ok()) return s;
  if (offset < 0 || length < -1) return Status::Error(what + ": invalid range");
  if (length == 0) return Status::Ok();

  int64_t next = offset;       // absolute offset of the next byte the sink wants
  int64_t remaining = length;  // bytes still wanted; -1: to the end
  int64_t total = -1;          // object size, once an answer told it
  // Of the first answer (or the caller's pin); later attempts must see the same object.
  std::string etag =
      if_match.empty() || if_match.front() == '"' ? if_match : "\"" + if_match + "\"";
  Status sink_status;

  return impl_->Retrying(what, [&]() -> Attempt {
    if (next > offset && total >= 0 && next >= total) return {Status::Ok()};
    Exchange ex{"GET", ObjectPath(url)};
    if (next > 0 || remaining >= 0) {
      std::string range = "bytes=" + std::to_string(next) + "-";
      if (remaining >= 0) range += std::to_string(next + remaining - 1);
      ex.headers.emplace_back("range", std::move(range));
    }
    if (!etag.empty()) ex.headers.emplace_back("if-match", etag);
    int64_t body_pos = -1;  // absolute offset of the next body byte of this answer
    bool enough = false;
    ex.on_data = [&](const Reply& reply, std::string_view chunk) -> bool {
      if (body_pos < 0) {
        body_pos = 0;
        int64_t start = 0;
        int64_t size = -1;
        if (reply.status == 206 &&
            ParseContentRange(reply.Header("content-range"), &start, &size)) {
          body_pos = start;
          if (size >= 0) total = size;
        } else if (reply.status == 200 && ParseInt64(reply.Header("content-length"), &size)) {
          total = size;
        }
        if (etag.empty()) etag = reply.Header("etag");
      }
      const int64_t begin = body_pos;
      const int64_t end = body_pos + static_cast<int64_t>(chunk.size());
      body_pos = end;
      const int64_t lo = std::max(begin, next);
      const int64_t hi = remaining >= 0 ? std::min(end, next + remaining) : end;
      if (hi > lo) {
        Status s =
            sink(chunk.substr(static_cast<size_t>(lo - begin), static_cast<size_t>(hi - lo)));
        if (remaining >= 0) remaining -= hi - lo;
        next = hi;
        if (!s.ok()) {
          sink_status = std::move(s);
          return false;
        }
      }
      if (remaining == 0) {
        enough = true;
        return false;
      }
      return true;
    };
    Reply r = impl_->session.Perform(ex);
    if (r.consumer_stopped) {
      if (enough && sink_status.ok()) return {Status::Ok()};
      return {sink_status, false, true};
    }
    if (etag.empty() && r.status >= 200 && r.status < 300) etag = r.Header("etag");
    return impl_->Classify(r);
  });
}

Status Client::PutFile(const S3Url& url, const std::string& local_path) {
  const std::string what = "PUT " + ToString(url);
  if (Status s = CheckObjectUrl(what, url); !s.ok()) return s;
  const int fd = open(local_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(what + ": opening " + local_path + ": " + std::strerror(errno));
  FdCloser closer(fd);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    return Status::Error(what + ": stat " + local_path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Error(what + ": " + local_path + " is not a regular file");
  }
  if (!impl_->session.loaded()) return Status::Error(what + ": " + impl_->session.load_error());
  Sha256 hash;
  std::string buf(kHashBufferSize, '\0');
  for (int64_t pos = 0; pos < st.st_size;) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(st.st_size - pos, buf.size()));
    const ssize_t got = pread(fd, buf.data(), want, pos);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return Status::Error(what + ": reading " + local_path + ": " + std::strerror(errno));
    }
    if (got == 0) return Status::Error(what + ": " + local_path + " shrank while hashing");
    hash.Update(std::string_view(buf.data(), static_cast<size_t>(got)));
    pos += got;
  }
  buf = std::string();

  Exchange ex{"PUT", ObjectPath(url)};
  ex.payload_sha256 = hash.FinalHex();
  ex.fd = fd;
  ex.fd_size = st.st_size;
  ex.fd_path = local_path;
  Reply r;
  return impl_->Run(what, ex, &r);
}

Status Client::PutBytes(const S3Url& url, std::string_view data) {
  const std::string what = "PUT " + ToString(url);
  if (Status s = CheckObjectUrl(what, url); !s.ok()) return s;
  if (!impl_->session.loaded()) return Status::Error(what + ": " + impl_->session.load_error());
  Exchange ex{"PUT", ObjectPath(url)};
  ex.payload_sha256 = Sha256Hex(data);
  ex.body = data;
  Reply r;
  return impl_->Run(what, ex, &r);
}

Status Client::Copy(const S3Url& src, const S3Url& dst) {
  const std::string what = "PUT " + ToString(dst) + " (copy of " + ToString(src) + ")";
  if (Status s = CheckObjectUrl(what, src); !s.ok()) return s;
  if (Status s = CheckObjectUrl(what, dst); !s.ok()) return s;
  Exchange ex{"PUT", ObjectPath(dst)};
  ex.headers.emplace_back("x-amz-copy-source", UriEncode(ObjectPath(src), /*encode_slash=*/false));
  return impl_->Retrying(what, [&]() -> Attempt {
    const Reply r = impl_->session.Perform(ex);
    Attempt a = impl_->Classify(r);
    if (a.status.ok() && IsErrorDocument(r.body)) {
      // InternalError, SlowDown, … in a 200 answer: the copy failed on the server's side.
      return {Status::Error(ErrorCode::kUnavailable, Impl::HttpError(r)), true};
    }
    return a;
  });
}

Result<std::vector<std::string>> Client::List(const std::string& bucket,
                                              const std::string& prefix) {
  const std::string what = "LIST s3://" + bucket + "/" + prefix;
  if (bucket.empty()) return Result<std::vector<std::string>>::Error(what + ": empty bucket");
  std::vector<std::string> keys;
  std::string token;
  for (;;) {
    Exchange ex{"GET", "/" + bucket};
    ex.query = {{"list-type", "2"}, {"encoding-type", "url"}};
    if (!prefix.empty()) ex.query.emplace_back("prefix", prefix);
    if (!token.empty()) ex.query.emplace_back("continuation-token", token);
    Reply r;
    if (Status s = impl_->Run(what, ex, &r); !s.ok()) return s;
    const bool url_encoded = XmlText(r.body, "EncodingType") == "url";
    size_t pos = 0;
    size_t end = 0;
    while (auto contents = XmlElement(r.body, "Contents", pos, &end)) {
      pos = end;
      std::string key = XmlText(*contents, "Key");
      if (url_encoded) {
        auto decoded = PercentDecode(key, /*plus_is_space=*/true);
        if (!decoded) {
          return Result<std::vector<std::string>>::Error(what + ": bad url-encoded key in answer");
        }
        key = std::move(*decoded);
      }
      keys.push_back(std::move(key));
    }
    if (XmlText(r.body, "IsTruncated") != "true") break;
    token = XmlText(r.body, "NextContinuationToken");
    if (token.empty()) {
      return Result<std::vector<std::string>>::Error(
          what + ": truncated answer without NextContinuationToken");
    }
  }
  return keys;
}

Status Client::Delete(const S3Url& url) {
  const std::string what = "DELETE " + ToString(url);
  if (Status s = CheckObjectUrl(what, url); !s.ok()) return s;
  Exchange ex{"DELETE", ObjectPath(url)};
  Reply r;
  return impl_->Run(what, ex, &r);
}

Status Client::CreateBucket(const std::string& bucket) {
  const std::string what = "PUT s3://" + bucket;
  if (bucket.empty()) return Status::Error(what + ": empty bucket");
  std::string body;
  if (impl_->creds.region != "us-east-1") {
    body =
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<LocationConstraint>" +
        impl_->creds.region + "</LocationConstraint></CreateBucketConfiguration>";
  }
  if (!impl_->session.loaded())
    return Status::Error("PUT s3://" + bucket + ": " + impl_->session.load_error());
  Exchange ex{"PUT", "/" + bucket};
  ex.payload_sha256 = Sha256Hex(body);
  ex.body = body;
  Reply r;
  return impl_->Run(what, ex, &r);
}

int64_t Client::requests_sent() const { return impl_->session.requests_sent(); }

}  // namespace sedna::s3
