#include "adapters/s3/s3_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "adapters/s3/lazy_libs.h"
#include "adapters/s3/sigv4.h"

namespace sedna::s3 {
namespace {

// Bodies kept in memory: error documents and ListObjectsV2 pages (1000 keys of <= 1 KiB each).
constexpr size_t kMaxCollectedBody = 32u << 20;
constexpr size_t kHashBufferSize = 256u << 10;
constexpr long kDownloadBufferSize = 16 << 10;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX -> byte (and '+' -> ' ' when plus_is_space); nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = HexValue(s[i + 1]);
      const int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (v > (INT64_MAX - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// ---- XML (the few S3 elements read here; no DTDs, CDATA or namespace prefixes) ---------------

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string XmlUnescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string_view::npos) {
      out.push_back('&');
      continue;
    }
    const std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") {
      out.push_back('&');
    } else if (ent == "lt") {
      out.push_back('<');
    } else if (ent == "gt") {
      out.push_back('>');
    } else if (ent == "quot") {
      out.push_back('"');
    } else if (ent == "apos") {
      out.push_back('\'');
    } else if (ent.size() > 1 && ent[0] == '#') {
      uint32_t cp = 0;
      const bool hex = ent[1] == 'x' || ent[1] == 'X';
      bool ok = ent.size() > (hex ? 2u : 1u);
      for (char c : ent.substr(hex ? 2 : 1)) {
        const int d = hex ? HexValue(c) : (c >= '0' && c <= '9' ? c - '0' : -1);
        if (d < 0 || cp > 0x10FFFF) {
          ok = false;
          break;
        }
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
      }
      if (!ok || cp > 0x10FFFF) {
        out.append(s.substr(i, semi - i + 1));
      } else {
        AppendUtf8(cp, &out);
      }
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi;
  }
  return out;
}

// The raw content of the first <tag>…</tag> (or <tag/>) at or after `from`; *end is set past it.
std::optional<std::string_view> XmlElement(std::string_view xml, std::string_view tag, size_t from,
                                           size_t* end) {
  const std::string open = "<" + std::string(tag);
  const std::string close = "</" + std::string(tag) + ">";
  size_t pos = from;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    const size_t after = pos + open.size();
    if (after >= xml.size()) return std::nullopt;
    const char c = xml[after];
    if (c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      pos = after;
      continue;
    }
    const size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) return std::nullopt;
    if (xml[gt - 1] == '/') {
      if (end != nullptr) *end = gt + 1;
      return std::string_view();
    }
    const size_t stop = xml.find(close, gt + 1);
    if (stop == std::string_view::npos) return std::nullopt;
    if (end != nullptr) *end = stop + close.size();
    return xml.substr(gt + 1, stop - gt - 1);
  }
  return std::nullopt;
}

std::string XmlText(std::string_view xml, std::string_view tag) {
  auto e = XmlElement(xml, tag, 0, nullptr);
  return e ? XmlUnescape(*e) : std::string();
}

// The document's root element is <Error> (S3 may answer 200 to CopyObject with one).
bool IsErrorDocument(std::string_view body) {
  size_t pos = 0;
  while ((pos = body.find('<', pos)) != std::string_view::npos) {
    if (pos + 1 < body.size() && (body[pos + 1] == '?' || body[pos + 1] == '!')) {
      ++pos;
      continue;
    }
    return body.substr(pos + 1, 5) == "Error" &&
           (pos + 6 >= body.size() || body[pos + 6] == '>' || body[pos + 6] == ' ');
  }
  return false;
}

// ---- one HTTP exchange ----------------------------------------------------------------------

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
    t->reply->headers[Lower(Trim(line.substr(0, colon)))] =
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

// "bytes 100-199/1000" -> start 100, total 1000 (-1 for "*").
bool ParseContentRange(std::string_view v, int64_t* start, int64_t* total) {
  v = Trim(v);
  if (v.substr(0, 6) != "bytes ") return false;
  v.remove_prefix(6);
  const size_t dash = v.find('-');
  const size_t slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return false;
  }
  if (!ParseInt64(v.substr(0, dash), start)) return false;
  const std::string_view t = v.substr(slash + 1);
  if (t == "*") {
    *total = -1;
    return true;
  }
  return ParseInt64(t, total);
}

}  // namespace

// ---- free functions -------------------------------------------------------------------------

Result<Credentials> ParseCredentialAnnotation(std::string_view json) {
  const nlohmann::json j = nlohmann::json::parse(json.begin(), json.end(), nullptr,
                                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return Result<Credentials>::Error("credential annotation: invalid JSON");
  if (!j.is_object()) {
    return Result<Credentials>::Error("credential annotation: not a JSON object");
  }
  auto field = [&](const char* key, bool required, std::string* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) {
      return required ? Status::Error(std::string("credential annotation: missing \"") + key + "\"")
                      : Status::Ok();
    }
    if (!it->is_string()) {
      return Status::Error(std::string("credential annotation: \"") + key + "\" is not a string");
    }
    *out = it->get<std::string>();
    if (required && out->empty()) {
      return Status::Error(std::string("credential annotation: \"") + key + "\" is empty");
    }
    return Status::Ok();
  };
  Credentials c;
  std::string use_https;
  for (Status s :
       {field("s3-endpoint", true, &c.endpoint), field("ACCESS_KEY_ID", true, &c.access_key),
        field("SECRET_ACCESS_KEY", true, &c.secret_key), field("s3-usehttps", false, &use_https)}) {
    if (!s.ok()) return s;
  }
  if (c.endpoint.find_first_of("/?# \t\r\n") != std::string::npos) {
    return Result<Credentials>::Error(
        "credential annotation: \"s3-endpoint\" must be host[:port], without scheme or path");
  }
  c.use_https = use_https != "0";
  return c;
}

Result<S3Url> ParseS3Url(std::string_view url) {
  const std::string text(url);
  if (url.size() < 5 || Lower(url.substr(0, 5)) != "s3://") {
    return Result<S3Url>::Error("invalid url(" + text + "), want s3://bucket/key");
  }
  std::string_view rest = url.substr(5);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Result<S3Url>::Error("invalid url(" + text + "): query or fragment not supported");
  }
  const size_t slash = rest.find('/');
  S3Url out;
  out.bucket = std::string(rest.substr(0, slash));
  if (out.bucket.empty()) return Result<S3Url>::Error("invalid url(" + text + "): empty bucket");
  if (out.bucket.find_first_of(":@%") != std::string::npos) {
    return Result<S3Url>::Error("invalid url(" + text + "): bad bucket name");
  }
  if (slash != std::string_view::npos) {
    auto key = PercentDecode(rest.substr(slash + 1), /*plus_is_space=*/false);
    if (!key) return Result<S3Url>::Error("invalid url(" + text + "): bad %-escape");
    out.key = std::move(*key);
  }
  return out;
}

std::string ToString(const S3Url& url) { return "s3://" + url.bucket + "/" + url.key; }

// ---- Client ---------------------------------------------------------------------------------

struct Client::Impl {
  Credentials creds;
  ClientOptions opts;
  SigningIdentity id;
  std::string base_url;  // "http://127.0.0.1:9000"
  CURL* curl = nullptr;
  const CurlApi* lib = nullptr;
  std::string load_error;  // libcurl or libcrypto could not be loaded
  char errbuf[CURL_ERROR_SIZE] = {};
  int64_t requests_sent = 0;

  Impl(Credentials c, ClientOptions o) : creds(std::move(c)), opts(o) {
    id = SigningIdentity{creds.access_key, creds.secret_key, creds.region, "s3"};
    base_url = (creds.use_https ? "https://" : "http://") + creds.endpoint;
    lib = LoadCrypto(&load_error) ? LoadCurl(&load_error) : nullptr;
    if (lib != nullptr) curl = lib->easy_init();
  }
  ~Impl() {
    if (curl != nullptr) lib->easy_cleanup(curl);
  }

  std::string Redact(std::string m) const {
    if (creds.secret_key.empty()) return m;
    for (size_t pos = 0; (pos = m.find(creds.secret_key, pos)) != std::string::npos;) {
      m.replace(pos, creds.secret_key.size(), "[secret]");
    }
    return m;
  }

  Reply PerformOnce(const Exchange& ex) {
    Reply reply;
    if (curl == nullptr) {
      reply.code = CURLE_FAILED_INIT;
      reply.transport_error = lib == nullptr ? load_error : "curl_easy_init failed";
      return reply;
    }
    lib->easy_reset(curl);  // keeps the connection cache
    errbuf[0] = '\0';
    Transfer t{&ex, &reply, curl, lib};

    std::string url = base_url + CanonicalUri(ex.path);
    const std::string query = CanonicalQueryString(ex.query);
    if (!query.empty()) url += "?" + query;
    RequestToSign to_sign{ex.method, ex.path, ex.query, ex.headers, ex.payload_sha256};
    const Params headers =
        SignS3Request(std::move(to_sign), creds.endpoint, id, std::chrono::system_clock::now());
    curl_slist* list = nullptr;
    for (const auto& [name, value] : headers) {
      list = lib->slist_append(list, (name + ": " + value).c_str());
    }

    const long timeout_ms = static_cast<long>(std::max<int64_t>(opts.timeout.count(), 1));
    lib->easy_setopt(curl, CURLOPT_URL, url.c_str());
    lib->easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    lib->easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    lib->easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    lib->easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    lib->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    lib->easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    lib->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    lib->easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    lib->easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, (timeout_ms + 999) / 1000));
    lib->easy_setopt(curl, CURLOPT_BUFFERSIZE, kDownloadBufferSize);
    lib->easy_setopt(curl, CURLOPT_HEADERFUNCTION, HeaderCallback);
    lib->easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    lib->easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteCallback);
    lib->easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    if (ex.method == "HEAD") {
      lib->easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (ex.method == "GET") {
      lib->easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    } else if (ex.method == "PUT") {
      const int64_t size = ex.fd >= 0 ? ex.fd_size : static_cast<int64_t>(ex.body.size());
      lib->easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      lib->easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
      lib->easy_setopt(curl, CURLOPT_READFUNCTION, ReadCallback);
      lib->easy_setopt(curl, CURLOPT_READDATA, &t);
      lib->easy_setopt(curl, CURLOPT_SEEKFUNCTION, SeekCallback);
      lib->easy_setopt(curl, CURLOPT_SEEKDATA, &t);
    } else {
      lib->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, ex.method.c_str());
    }

    ++requests_sent;
    reply.code = lib->easy_perform(curl);
    lib->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
    if (reply.code != CURLE_OK) {
      reply.transport_error = errbuf[0] != '\0' ? errbuf : lib->easy_strerror(reply.code);
    }
    lib->slist_free_all(list);
    return reply;
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
      return {Status::Error(ErrorCode::kUnavailable,
                            "connection to " + base_url + " failed: " + r.transport_error),
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
    if (lib == nullptr) return Status::Error(what + ": " + load_error);
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
      *reply = PerformOnce(ex);
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
    Reply r = impl_->PerformOnce(ex);
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
  if (impl_->lib == nullptr) return Status::Error(what + ": " + impl_->load_error);
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
  if (impl_->lib == nullptr) return Status::Error(what + ": " + impl_->load_error);
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
    const Reply r = impl_->PerformOnce(ex);
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
  if (impl_->lib == nullptr) return Status::Error("PUT s3://" + bucket + ": " + impl_->load_error);
  Exchange ex{"PUT", "/" + bucket};
  ex.payload_sha256 = Sha256Hex(body);
  ex.body = body;
  Reply r;
  return impl_->Run(what, ex, &r);
}

int64_t Client::requests_sent() const { return impl_->requests_sent; }

}  // namespace sedna::s3
