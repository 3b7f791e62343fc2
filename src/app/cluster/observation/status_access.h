// Which requests the status server answers at all ([D:I21.8]). It serves read-only pages
// to local clients, so it answers only GET and HEAD, and only when the Host header names it:
// a web page whose own name an attacker rebinds to 127.0.0.1 (DNS rebinding) sends its own name
// as Host and gets a refusal instead of the dashboard's data.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http/http_server.h"

namespace sedna::app {

// The host names the status server answers to: 127.0.0.1, localhost, [::1], the bind address
// (an IPv6 one in brackets) and `extra` (--status-allowed-hosts), lower-cased.
std::vector<std::string> StatusHosts(const std::string& bind_address,
                                     const std::vector<std::string>& extra);

// True when `host` (a Host header's value) is one of `hosts`, with or without a port (":" and
// digits after the name). Names compare case-insensitively; an empty value is no name.
bool StatusHostAllowed(std::string_view host, const std::vector<std::string>& hosts);

// nullopt when the status server may answer `req`; otherwise the refusal to send instead:
// 405 (with `Allow: GET, HEAD`) for any other method, 421 for a missing Host header or a Host
// not in `hosts`. Both text/plain, with a one-line reason.
std::optional<http::HttpResponse> RefuseStatusRequest(const http::HttpRequest& req,
                                                      const std::vector<std::string>& hosts);

}  // namespace sedna::app
