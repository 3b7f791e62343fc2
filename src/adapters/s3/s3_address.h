// Where an S3 object is and who may reach it: the credentials of the sedna.io/credential
// annotation (docs/protocol.md §P2.5) and s3:// URLs. Pure: no IO.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace sedna::s3 {

struct Credentials {
  std::string endpoint;  // host[:port], no scheme
  bool use_https = true;
  std::string access_key, secret_key;
  std::string region = "us-east-1";
};

// Parses the value of the sedna.io/credential annotation: a JSON object of strings (§P2.5).
// Required: "s3-endpoint" (host[:port], no scheme or path), "ACCESS_KEY_ID", "SECRET_ACCESS_KEY",
// all non-empty strings. Optional "s3-usehttps": "0" -> http, any other value or absent -> https.
// Other keys are ignored. Errors name the offending key, never a value, e.g.
// `credential annotation: missing "SECRET_ACCESS_KEY"`.
Result<Credentials> ParseCredentialAnnotation(std::string_view json);

struct S3Url {
  std::string bucket, key;
};

// "s3://bucket/dir/key" -> {"bucket", "dir/key"}, like Go's url.Parse then host / path minus the
// leading '/': %XX escapes in the key are decoded ('+' stays '+'); the scheme is
// case-insensitive. The key may be empty ("s3://bucket", "s3://bucket/"). Errors: another scheme,
// an empty bucket, a bucket with ':' or '@', a '?' or '#' anywhere, a malformed %-escape.
Result<S3Url> ParseS3Url(std::string_view url);

// "s3://bucket/key" (the key as is, unescaped).
std::string ToString(const S3Url& url);

}  // namespace sedna::s3
