// The reply's head (response_head.h). Beast only for its table of reason phrases.
#include "adapters/http/response_head.h"

#include <cstdint>
#include <string_view>
#include <utility>

#include <boost/beast/http/status.hpp>

#include "adapters/http/http_text.h"

namespace sedna::http {

HttpResponse TextResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

bool FormatResponseHead(const HttpResponse& response, int version, bool keep_alive,
                        std::string& head) {
  namespace bhttp = boost::beast::http;
  head.assign(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  AppendNumber(head, static_cast<uint64_t>(response.status));
  head += ' ';
  std::string_view reason = bhttp::obsolete_reason(static_cast<bhttp::status>(response.status));
  if (reason != "<unknown-status>") head += reason;
  head += "\r\n";
  if (!response.content_type.empty() && !HasLineBreak(response.content_type)) {
    head += "Content-Type: ";
    head += response.content_type;
    head += "\r\n";
  }
  for (const auto& [name, value] : response.headers) {
    if (name.empty() || HasLineBreak(name) || HasLineBreak(value) ||
        EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding")) {
      continue;
    }
    if (EqualsIgnoreCase(name, "connection")) {
      if (ContainsIgnoreCase(value, "close")) keep_alive = false;
      continue;
    }
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += "Content-Length: ";
  AppendNumber(head, response.body.size());
  head += "\r\n";
  if (!keep_alive) {
    head += "Connection: close\r\n";
  } else if (version == 10) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return keep_alive;
}

}  // namespace sedna::http
