#include "adapters/json/k8s_names.h"

#include <string>

#include "adapters/json/go_json.h"

namespace sedna::json {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxSubdomain = 253;
constexpr size_t kQuoted = 80;  // at most this many bytes of a bad value go into the message

bool Alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One DNS-1123 label without its length bound: [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool LabelChars(std::string_view s) {
  if (s.empty() || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-') return false;
  }
  return true;
}

std::string Quoted(std::string_view v) {
  if (v.size() <= kQuoted) return GoString(v);
  return GoString(v.substr(0, kQuoted)) + "... (" + std::to_string(v.size()) + " bytes)";
}

Status Bad(std::string_view field, std::string_view value, const std::string& why) {
  return Status::Error(std::string(field) + ": " + Quoted(value) + " " + why);
}

}  // namespace

Status CheckNamespace(std::string_view field, std::string_view value) {
  if (value.empty()) return Status::Error(std::string(field) + ": missing");
  if (value.find('/') != std::string_view::npos) return Bad(field, value, "must not contain '/'");
  if (value.size() > kMaxLabel || !LabelChars(value)) {
    return Bad(field, value,
               "is not a valid namespace: a DNS-1123 label is at most 63 lower case alphanumeric "
               "characters or '-', starting and ending with an alphanumeric character");
  }
  return Status::Ok();
}

Status CheckObjectName(std::string_view field, std::string_view value) {
  if (value.empty()) return Status::Error(std::string(field) + ": missing");
  if (value.find('/') != std::string_view::npos) return Bad(field, value, "must not contain '/'");
  bool ok = value.size() <= kMaxSubdomain;
  for (size_t start = 0; ok;) {
    const size_t dot = value.find('.', start);
    ok = LabelChars(value.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (!ok) {
    return Bad(field, value,
               "is not a valid name: a DNS-1123 subdomain is at most 253 lower case alphanumeric "
               "characters, '-' or '.', each '.'-separated part starting and ending with an "
               "alphanumeric character");
  }
  return Status::Ok();
}

}  // namespace sedna::json
