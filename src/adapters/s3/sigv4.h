// AWS Signature Version 4 (header-based, "AWS4-HMAC-SHA256") as S3 expects it for path-style
// requests. Pure functions: no clock, no IO; the signing time is a parameter.
//
// S3 rules applied: the canonical URI is the unnormalised path with each segment URI-encoded once
// ('/' kept); query names and values are URI-encoded ('/' too) and sorted by name, then value;
// header names are lower-cased, values trimmed with inner whitespace runs collapsed to one space,
// repeated names joined with ',' in order. The payload hash is always a real SHA-256 (hex).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace sedna::s3 {

// SHA-256 of the empty string, hex.
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Lower-case hex of `bytes`.
std::string HexEncode(std::string_view bytes);
// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);
// Raw (32-byte) HMAC-SHA256.
std::string HmacSha256(std::string_view key, std::string_view data);

// Incremental SHA-256, for hashing a file without holding it in memory. Move-only.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view data);
  // Lower-case hex digest of everything passed to Update; the object is then reset to empty.
  std::string FinalHex();

 private:
  evp_md_ctx_st* ctx_;
};

// RFC 3986 percent-encoding as SigV4 defines it: A-Z a-z 0-9 - . _ ~ are kept, every other byte
// becomes %XX (upper-case hex); '/' is kept only when !encode_slash.
std::string UriEncode(std::string_view s, bool encode_slash);

// "/" + path segments encoded with UriEncode(…, false); "" -> "/". `path` is unencoded and used
// as-is (no "."/".." or "//" normalisation, as S3 requires).
std::string CanonicalUri(std::string_view path);

using Params = std::vector<std::pair<std::string, std::string>>;

// "a=1&b=2": names and values UriEncode(…, true)d, sorted by encoded name then encoded value.
// A parameter without a value is "name=". This is also the query string to send.
std::string CanonicalQueryString(const Params& query);

// "host;x-amz-date": the distinct lower-cased header names, sorted.
std::string SignedHeaders(const Params& headers);

// YYYYMMDD'T'HHMMSS'Z' (UTC) of `t`, the x-amz-date format.
std::string AmzDate(std::chrono::system_clock::time_point t);

// One request, as signed.
struct RequestToSign {
  std::string method;          // "GET"
  std::string path;            // unencoded, e.g. "/bucket/dir/a b.txt"
  Params query;                // unencoded names and values, any order
  Params headers;              // every header to sign (names any case), host included
  std::string payload_sha256;  // hex SHA-256 of the body
};

std::string CanonicalRequest(const RequestToSign& request);

// "20150830/us-east-1/service/aws4_request".
std::string CredentialScope(std::string_view date, std::string_view region,
                            std::string_view service);

// "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(canonical_request)>".
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);

// HMAC chain "AWS4"+secret -> date (YYYYMMDD) -> region -> service -> "aws4_request"; raw bytes.
std::string SigningKey(std::string_view secret_key, std::string_view date, std::string_view region,
                       std::string_view service);

struct SigningIdentity {
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  std::string service = "s3";
};

// Every intermediate, so tests can say which stage differs.
struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;      // hex
  std::string authorization;  // the Authorization header value
};

// Signs `request` at time `t`. The caller is responsible for `request.headers` carrying an
// x-amz-date equal to AmzDate(t) (SignS3Request does that).
Signature SignV4(const RequestToSign& request, const SigningIdentity& id,
                 std::chrono::system_clock::time_point t);

// S3 request signing: adds host (`host` exactly as sent in the Host header, e.g.
// "127.0.0.1:9000"), x-amz-date = AmzDate(t) and x-amz-content-sha256 = request.payload_sha256
// to request.headers, signs, and returns every header to send, Authorization last. `request`
// must not already carry those four headers.
Params SignS3Request(RequestToSign request, std::string_view host, const SigningIdentity& id,
                     std::chrono::system_clock::time_point t);

}  // namespace sedna::s3
