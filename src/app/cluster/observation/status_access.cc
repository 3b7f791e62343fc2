#include "app/cluster/observation/status_access.h"

#include <algorithm>
#include "core/ascii.h"

namespace sedna::app {
namespace {

// An IPv6 literal in brackets, as it appears in a Host header; anything else as it is.
std::string HostForm(std::string_view name) {
  std::string n = core::AsciiLowered(name);
  if (n.find(':') != std::string::npos && n.front() != '[') n = "[" + n + "]";
  return n;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<std::string> StatusHosts(const std::string& bind_address,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> hosts = {"127.0.0.1", "localhost", "[::1]"};
  if (!bind_address.empty()) hosts.push_back(HostForm(bind_address));
  for (const std::string& h : extra) {
    if (!h.empty()) hosts.push_back(HostForm(h));
  }
  return hosts;
}

bool StatusHostAllowed(std::string_view host, const std::vector<std::string>& hosts) {
  std::string_view name = host;
  if (!name.empty() && name.front() == '[') {  // [v6] or [v6]:port
    const size_t close = name.find(']');
    if (close == std::string_view::npos) return false;
    std::string_view rest = name.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !AllDigits(rest.substr(1)))) return false;
    name = name.substr(0, close + 1);
  } else if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    if (!AllDigits(name.substr(colon + 1))) return false;
    name = name.substr(0, colon);
  }
  if (name.empty()) return false;
  const std::string lower = core::AsciiLowered(name);
  return std::find(hosts.begin(), hosts.end(), lower) != hosts.end();
}

std::optional<http::HttpResponse> RefuseStatusRequest(const http::HttpRequest& req,
                                                      const std::vector<std::string>& hosts) {
  if (req.method != "GET" && req.method != "HEAD") {
    return http::HttpResponse{405,
                              "text/plain",
                              "405: Method Not Allowed: the status server is read-only\n",
                              {{"Allow", "GET, HEAD"}}};
  }
  auto h = req.headers.find("host");
  if (h == req.headers.end() || !StatusHostAllowed(h->second, hosts)) {
    return http::HttpResponse{
        421,
        "text/plain",
        "421: Misdirected Request: the Host header names no host this server answers to "
        "(--status-allowed-hosts)\n",
        {}};
  }
  return std::nullopt;
}

}  // namespace sedna::app
