#include "adapters/s3/sigv4.h"

#include "adapters/s3/lazy_libs.h"

#include <algorithm>
#include <ctime>
#include <map>
#include "core/ascii.h"

namespace sedna::s3 {
namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Trims and collapses every whitespace run to one space (botocore: ' '.join(value.split())).
std::string TrimAll(std::string_view v) {
  std::string out;
  bool pending_space = false;
  for (char c : v) {
    if (IsSpace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

// Lower-cased name -> values in arrival order, names sorted.
std::map<std::string, std::vector<std::string>> GroupHeaders(const Params& headers) {
  std::map<std::string, std::vector<std::string>> grouped;
  for (const auto& [name, value] : headers)
    grouped[core::AsciiLowered(TrimAll(name))].push_back(TrimAll(value));
  return grouped;
}

}  // namespace

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.FinalHex();
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const CryptoApi& c = Crypto();
  c.hmac(c.sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

Sha256::Sha256() : ctx_(Crypto().md_ctx_new()) {
  Crypto().digest_init_ex(ctx_, Crypto().sha256(), nullptr);
}

Sha256::~Sha256() {
  if (ctx_ != nullptr) Crypto().md_ctx_free(ctx_);
}

Sha256::Sha256(Sha256&& other) noexcept : ctx_(other.ctx_) { other.ctx_ = nullptr; }

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    if (ctx_ != nullptr) Crypto().md_ctx_free(ctx_);
    ctx_ = other.ctx_;
    other.ctx_ = nullptr;
  }
  return *this;
}

void Sha256::Update(std::string_view data) {
  Crypto().digest_update(ctx_, data.data(), data.size());
}

std::string Sha256::FinalHex() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  Crypto().digest_final_ex(ctx_, out, &len);
  Crypto().digest_init_ex(ctx_, Crypto().sha256(), nullptr);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(out), len));
}

std::string UriEncode(std::string_view s, bool encode_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (IsUnreserved(c) || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 0xf]);
    }
  }
  return out;
}

std::string CanonicalUri(std::string_view path) {
  if (path.empty()) return "/";
  std::string out = UriEncode(path, /*encode_slash=*/false);
  if (out.front() != '/') out.insert(out.begin(), '/');
  return out;
}

std::string CanonicalQueryString(const Params& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(UriEncode(name, true), UriEncode(value, true));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string SignedHeaders(const Params& headers) {
  std::string out;
  for (const auto& [name, values] : GroupHeaders(headers)) {
    if (!out.empty()) out.push_back(';');
    out += name;
  }
  return out;
}

std::string AmzDate(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string CanonicalRequest(const RequestToSign& request) {
  std::string out = request.method;
  out.push_back('\n');
  out += CanonicalUri(request.path);
  out.push_back('\n');
  out += CanonicalQueryString(request.query);
  out.push_back('\n');
  std::string signed_names;
  for (const auto& [name, values] : GroupHeaders(request.headers)) {
    out += name;
    out.push_back(':');
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += values[i];
    }
    out.push_back('\n');
    if (!signed_names.empty()) signed_names.push_back(';');
    signed_names += name;
  }
  out.push_back('\n');
  out += signed_names;
  out.push_back('\n');
  out += request.payload_sha256;
  return out;
}

std::string CredentialScope(std::string_view date, std::string_view region,
                            std::string_view service) {
  std::string out(date);
  out.push_back('/');
  out += region;
  out.push_back('/');
  out += service;
  out += "/aws4_request";
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  std::string out = "AWS4-HMAC-SHA256\n";
  out += amz_date;
  out.push_back('\n');
  out += scope;
  out.push_back('\n');
  out += Sha256Hex(canonical_request);
  return out;
}

std::string SigningKey(std::string_view secret_key, std::string_view date, std::string_view region,
                       std::string_view service) {
  std::string k = "AWS4";
  k += secret_key;
  std::string key = HmacSha256(k, date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  return HmacSha256(key, "aws4_request");
}

Signature SignV4(const RequestToSign& request, const SigningIdentity& id,
                 std::chrono::system_clock::time_point t) {
  const std::string amz_date = AmzDate(t);
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = CredentialScope(date, id.region, id.service);
  Signature s;
  s.canonical_request = CanonicalRequest(request);
  s.string_to_sign = StringToSign(amz_date, scope, s.canonical_request);
  s.signature = HexEncode(
      HmacSha256(SigningKey(id.secret_key, date, id.region, id.service), s.string_to_sign));
  s.authorization = "AWS4-HMAC-SHA256 Credential=" + id.access_key + "/" + scope +
                    ", SignedHeaders=" + SignedHeaders(request.headers) +
                    ", Signature=" + s.signature;
  return s;
}

Params SignS3Request(RequestToSign request, std::string_view host, const SigningIdentity& id,
                     std::chrono::system_clock::time_point t) {
  request.headers.emplace_back("host", std::string(host));
  request.headers.emplace_back("x-amz-content-sha256", request.payload_sha256);
  request.headers.emplace_back("x-amz-date", AmzDate(t));
  Signature s = SignV4(request, id, t);
  Params out = std::move(request.headers);
  out.emplace_back("Authorization", std::move(s.authorization));
  return out;
}

}  // namespace sedna::s3
