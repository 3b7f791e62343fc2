// Credentials and s3:// URLs (s3_address.h).
#include "adapters/s3/s3_address.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "adapters/s3/s3_text.h"
#include "core/ascii.h"

namespace sedna::s3 {

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
  if (url.size() < 5 || core::AsciiLowered(url.substr(0, 5)) != "s3://") {
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

}  // namespace sedna::s3
