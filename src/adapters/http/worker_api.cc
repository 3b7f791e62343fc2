#include "adapters/http/worker_api.h"

#include <optional>
#include <string>
#include <utility>

#include "core/ascii.h"

namespace sedna::http {
namespace {

using core::AsciiLower;
using core::EqualsIgnoreCase;

constexpr std::string_view kPathPrefix = "/sedna/workers/";
constexpr std::string_view kPathSuffix = "/info";

HttpResponse TextReply(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX-decodes a URL path ('+' stays '+'); nullopt on a malformed escape.
std::optional<std::string> DecodePath(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    int hi = HexDigit(in[i + 1]);
    int lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// The worker name addressed by `target`, or nullopt when the path is not the worker route. The
// name views `target`, or `storage` when the path has %-escapes.
std::optional<std::string_view> WorkerName(std::string_view target, std::string& storage) {
  std::string_view p = target.substr(0, target.find('?'));
  if (p.find('%') != std::string_view::npos) {
    std::optional<std::string> path = DecodePath(p);
    if (!path) return std::nullopt;
    storage = std::move(*path);
    p = storage;
  }
  if (p.size() <= kPathPrefix.size() + kPathSuffix.size() || !p.starts_with(kPathPrefix) ||
      !p.ends_with(kPathSuffix)) {
    return std::nullopt;
  }
  std::string_view name =
      p.substr(kPathPrefix.size(), p.size() - kPathPrefix.size() - kPathSuffix.size());
  if (name.find('/') != std::string_view::npos) return std::nullopt;
  return name;
}

// Calls f(item) for each comma-separated item until f returns true; returns whether one did.
template <class F>
bool AnyListItem(std::string_view list, F&& f) {
  for (;;) {
    size_t comma = list.find(',');
    if (f(list.substr(0, comma))) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

bool IsConsumable(std::string_view content_type) {
  return AnyListItem(content_type, [](std::string_view item) {
    std::string_view type = Trim(item.substr(0, item.find(';')));
    return EqualsIgnoreCase(type, "application/json") || EqualsIgnoreCase(type, "application/xml");
  });
}

// True for "0", "0.", "0.0", "0.00", "0.000": the weights that exclude a media range.
bool IsZeroWeight(std::string_view q) {
  if (q.empty() || q[0] != '0') return false;
  q.remove_prefix(1);
  if (q.empty()) return true;
  if (q[0] != '.') return false;
  return q.find_first_not_of('0', 1) == std::string_view::npos;
}

bool IsAcceptable(std::string_view accept) {
  if (Trim(accept).empty()) return true;  // same as absent: */*
  return AnyListItem(accept, [](std::string_view item) {
    size_t semi = item.find(';');
    std::string_view range = Trim(item.substr(0, semi));
    if (!EqualsIgnoreCase(range, "*/*") && !EqualsIgnoreCase(range, "application/*") &&
        !EqualsIgnoreCase(range, "application/json") &&
        !EqualsIgnoreCase(range, "application/xml")) {
      return false;
    }
    while (semi != std::string_view::npos) {
      item.remove_prefix(semi + 1);
      semi = item.find(';');
      std::string_view param = Trim(item.substr(0, semi));
      if (param.size() >= 2 && AsciiLower(param[0]) == 'q' && param[1] == '=' &&
          IsZeroWeight(Trim(param.substr(2)))) {
        return false;
      }
    }
    return true;
  });
}

const std::string* FindHeader(const HttpRequest& req, const std::string& name) {
  auto it = req.headers.find(name);
  return it == req.headers.end() ? nullptr : &it->second;
}

}  // namespace

HttpResponse RouteWorkerApi(const HttpRequest& req, const WorkerMessageHandler& on_message) {
  try {
    std::string decoded;
    std::optional<std::string_view> name = WorkerName(req.target, decoded);
    if (!name) return TextReply(404, "404: Page Not Found");
    if (req.method != "POST") {
      HttpResponse r = TextReply(405, "405: Method Not Allowed");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    if (!req.body.empty()) {
      const std::string* content_type = FindHeader(req, "content-type");
      if (content_type == nullptr || !IsConsumable(*content_type)) {
        return TextReply(415, "415: Unsupported Media Type");
      }
    }
    if (const std::string* accept = FindHeader(req, "accept");
        accept != nullptr && !IsAcceptable(*accept)) {
      return TextReply(406,
                       "406: Not Acceptable\n\nAvailable representations: application/json, "
                       "application/xml");
    }
    return on_message(*name, req.body);
  } catch (...) {
    return TextReply(500, "500: Internal Server Error");
  }
}

}  // namespace sedna::http
