#include "app/cli/gm_diagnosis.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "adapters/gm/probe_socket.h"
#include "adapters/gm/ws_accept.h"
#include "adapters/gm/ws_wire.h"

namespace sedna::app {
namespace {

using Clock = gm::ProbeClock;
using std::chrono::milliseconds;

std::string Seconds(milliseconds d) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", static_cast<double>(d.count()) / 1000.0);
  return b;
}

Check Fail(std::string name, std::string detail, std::string fix) {
  return {std::move(name), Verdict::kFail, std::move(detail), std::move(fix)};
}

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// ---------------------------------------------------------------- address

Check ParseAddress(const std::string& a, HostPort& hp) {
  const std::string want =
      "set GM_ADDRESS (or --gm-address) to the GM's websocket host:port, e.g. gm.sedna:9000 or "
      "192.168.1.10:9000 (no scheme, no path)";
  if (a.empty()) return Fail("address", "GM_ADDRESS is not set", want);
  if (a.find("://") != std::string::npos) {
    return Fail("address", "\"" + a + "\" has a scheme",
                "drop \"" + a.substr(0, a.find("://") + 3) + "\": " + want);
  }
  if (a.find('/') != std::string::npos) {
    return Fail("address", "\"" + a + "\" has a path", "the LC always dials \"/\": " + want);
  }
  std::string port;
  if (a[0] == '[') {
    const auto close = a.find(']');
    if (close == std::string::npos || close + 1 >= a.size() || a[close + 1] != ':') {
      return Fail("address", "\"" + a + "\" is not [IPv6]:port", want);
    }
    hp.host = a.substr(1, close - 1);
    port = a.substr(close + 2);
  } else {
    const auto colon = a.rfind(':');
    if (colon == std::string::npos) return Fail("address", "\"" + a + "\" has no port", want);
    hp.host = a.substr(0, colon);
    port = a.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) {
      return Fail("address", "\"" + a + "\": an IPv6 address needs brackets",
                  "write it as [" + hp.host + "]:" + port);
    }
  }
  unsigned v = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (hp.host.empty() || port.empty() || ec != std::errc() || p != port.data() + port.size() ||
      v == 0 || v > 65535) {
    return Fail("address", "\"" + a + "\": host or port (1-65535) is missing or not a number",
                want);
  }
  hp.port = static_cast<uint16_t>(v);
  return {"address", Verdict::kOk, "host " + hp.host + ", port " + port, ""};
}

// ---------------------------------------------------------------- dns

std::vector<std::string> ReadWords(const std::string& path, const std::string& key) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  for (int n = 0; n < 1000 && std::getline(in, line); ++n) {
    std::istringstream ls(line);
    std::string k, v;
    if (!(ls >> k) || k != key) continue;
    while (ls >> v && v[0] != '#') out.push_back(v);
  }
  return out;
}

// The /etc/hosts address of `host`, if it has a line there.
std::optional<std::string> HostsEntry(const std::string& path, const std::string& host) {
  std::ifstream in(path);
  std::string line;
  for (int n = 0; n < 10000 && std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream ls(line);
    std::string addr, name;
    if (!(ls >> addr)) continue;
    while (ls >> name) {
      if (strcasecmp(name.c_str(), host.c_str()) == 0) return addr;
    }
  }
  return std::nullopt;
}

Check CheckDns(const GmProbeOptions& o, const HostPort& hp, gm::Resolved& out) {
  in6_addr a6;
  const bool literal = ::inet_pton(AF_INET, hp.host.c_str(), &a6) == 1 ||
                       ::inet_pton(AF_INET6, hp.host.c_str(), &a6) == 1;
  const auto hosts = HostsEntry(o.etc_dir + "/hosts", hp.host);
  auto ns = ReadWords(o.etc_dir + "/resolv.conf", "nameserver");
  auto search = ReadWords(o.etc_dir + "/resolv.conf", "search");
  std::string resolver;
  if (literal) {
    resolver = "an IP address, no lookup";
  } else if (hosts) {
    resolver = o.etc_dir + "/hosts has " + *hosts;
  } else {
    resolver = "no " + o.etc_dir + "/hosts entry; nameservers";
    if (ns.empty()) resolver += " (none in " + o.etc_dir + "/resolv.conf)";
    for (const auto& n : ns) resolver += " " + n;
    if (!search.empty()) {
      resolver += ", search";
      for (const auto& s : search) resolver += " " + s;
    }
  }
  auto r = gm::ResolveWithin(hp.host, hp.port, o.timeout);
  const std::string fix =
      "check the host in GM_ADDRESS; `getent hosts " + hp.host +
      "` on this node must print its address. A cluster service name (gm.sedna) resolves only "
      "through the cluster DNS: a hostNetwork pod needs dnsPolicy: ClusterFirstWithHostNet; on a "
      "node outside the cluster use the GM's node IP and NodePort";
  if (!r) {
    return Fail("dns", hp.host + ": no answer within " + Seconds(o.timeout) + " (" + resolver + ")",
                "the nameservers do not answer: check " + o.etc_dir +
                    "/resolv.conf and that this node reaches them (UDP/TCP port 53); " + fix);
  }
  if (r->error != 0 || r->addrs.empty()) {
    return Fail("dns",
                hp.host + ": " + (r->error ? ::gai_strerror(r->error) : "no addresses") + " (" +
                    resolver + ")",
                fix);
  }
  std::string got;
  for (size_t i = 0; i < r->addrs.size(); ++i) {
    const std::string n = gm::NumericHost(r->addrs[i], r->lens[i]);
    if (got.find(n) == std::string::npos) got += (got.empty() ? "" : ", ") + n;
  }
  out = std::move(*r);
  return {"dns", Verdict::kOk, hp.host + " -> " + got + " (" + resolver + ")", ""};
}

// ---------------------------------------------------------------- tcp

std::string ConnectError(int err, milliseconds timeout) {
  switch (err) {
    case ECONNREFUSED:
      return "refused";
    case ETIMEDOUT:
      return "timed out after " + Seconds(timeout);
    case ENETUNREACH:
      return "network unreachable";
    case EHOSTUNREACH:
      return "host unreachable";
    default:
      return std::strerror(err);
  }
}

Check CheckTcp(const GmProbeOptions& o, const HostPort& hp, const gm::Resolved& r, int& fd) {
  std::string tried;
  int first_err = 0;
  for (size_t i = 0; i < r.addrs.size(); ++i) {
    const std::string ip = gm::NumericHost(r.addrs[i], r.lens[i]);
    const std::string where =
        (r.addrs[i].ss_family == AF_INET6 ? "[" + ip + "]" : ip) + ":" + std::to_string(hp.port);
    const auto start = Clock::now();
    const int err = gm::ConnectWithin(r.addrs[i], r.lens[i], o.timeout, fd);
    if (err == 0) {
      const auto ms = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
      return {"tcp", Verdict::kOk,
              "connected to " + where + " in " + std::to_string(ms) + " ms" +
                  (tried.empty() ? "" : " (after " + tried + ")"),
              ""};
    }
    if (!first_err) first_err = err;
    tried += (tried.empty() ? "" : "; ") + where + " " + ConnectError(err, o.timeout);
  }
  std::string fix;
  if (first_err == ECONNREFUSED) {
    fix = "nothing listens on port " + std::to_string(hp.port) +
          " there: is the GM running (kubectl -n sedna get pods -o wide) and is " +
          std::to_string(hp.port) + " its websocket port (Sedna's default: 9000)?";
  } else if (first_err == ETIMEDOUT) {
    fix =
        "no answer at all: a firewall or security group drops the packets, or the host is "
        "down; check that TCP port " +
        std::to_string(hp.port) + " is open from this node to the GM";
  } else if (first_err == ENETUNREACH || first_err == EHOSTUNREACH) {
    fix = "this node has no route to the GM: check its network and routes (ip route get <address>)";
  } else {
    fix = "check this node's network towards the GM";
  }
  return Fail("tcp", tried, fix);
}

// ---------------------------------------------------------------- websocket

// A client frame (ws_wire.h) with a fresh random mask.
std::string ClientFrame(uint8_t opcode, const std::string& payload) {
  return gm::ClientFrame(opcode, payload, gm::RandomBytes(4));
}

std::string Printable(std::string s, size_t max) {
  if (s.size() > max) s = s.substr(0, max) + "...";
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return s;
}

// `rest`: bytes received after the response head (the first frames).
Check CheckUpgrade(const GmProbeOptions& o, const HostPort& hp, int fd, std::string& rest) {
  const std::string key = gm::Base64(gm::RandomBytes(16));
  const std::string req = gm::UpgradeRequest(hp.host, hp.port, key, o.node_name, "sedna-lc doctor");
  const auto deadline = Clock::now() + o.timeout;
  const std::string not_gm =
      "GM_ADDRESS reaches a server that is not the GM's websocket endpoint (or a proxy that drops "
      "the Upgrade header): point it at the GM's websocket port (Sedna's gm service, port 9000)";
  if (!gm::SendAllBy(fd, req, deadline)) {
    return Fail("websocket",
                std::string("sending the upgrade request failed: ") + std::strerror(errno), not_gm);
  }
  std::string in;
  size_t end;
  while ((end = in.find("\r\n\r\n")) == std::string::npos) {
    if (in.size() > 16384) {
      return Fail("websocket",
                  "the answer's HTTP head exceeds 16 KiB: \"" +
                      Printable(in.substr(0, in.find('\n')), 120) + "\"",
                  not_gm);
    }
    const ssize_t n = gm::RecvSomeBy(fd, in, deadline);
    if (n == gm::kRecvTimeout) {
      return Fail("websocket",
                  "no complete HTTP answer to the upgrade within " + Seconds(o.timeout) +
                      (in.empty() ? "" : " (got \"" + Printable(in, 80) + "\")"),
                  "the port accepts TCP but does not speak HTTP (a TLS port?): " + not_gm);
    }
    if (n <= 0) {
      return Fail("websocket",
                  std::string("the server closed the connection before answering the upgrade") +
                      (in.empty() ? "" : " (got \"" + Printable(in, 80) + "\")"),
                  not_gm);
    }
  }
  const std::string head = in.substr(0, end + 2);
  rest = in.substr(end + 4);
  std::string status_line = head.substr(0, head.find("\r\n"));
  if (status_line.rfind("HTTP/1.1 101", 0) != 0) {
    return Fail("websocket",
                "answered \"" + Printable(status_line, 120) +
                    "\" instead of \"101 Switching "
                    "Protocols\"",
                not_gm);
  }
  const std::string accept = gm::HeaderValue(head, "Sec-WebSocket-Accept");
  const std::string want = gm::WebSocketAccept(key);
  if (accept != want) {
    return Fail("websocket",
                "101, but Sec-WebSocket-Accept is \"" + Printable(accept, 80) + "\", expected \"" +
                    want + "\"",
                "something between this node and the GM rewrites the handshake (a proxy that is "
                "not websocket-aware, or not the GM at all): connect directly or fix the proxy");
  }
  return {"websocket", Verdict::kOk, Printable(status_line, 120) + ", accept key matches", ""};
}

// ---------------------------------------------------------------- first frame

Check CheckFirstFrame(const GmProbeOptions& o, int fd, std::string buf) {
  const std::string fix =
      "the GM dropped this node right after its first message: look for node \"" + o.node_name +
      "\" in the GM's log (kubectl -n sedna logs deploy/gm); another LC with the same NODENAME, "
      "or a GM that speaks another protocol version, can cause this";
  if (!o.first_frame.empty() &&
      !gm::SendAllBy(fd, ClientFrame(gm::kOpText, o.first_frame), Clock::now() + o.timeout)) {
    return Fail("first frame",
                std::string("writing the first frame failed: ") + std::strerror(errno), fix);
  }
  const auto deadline = Clock::now() + o.hold;
  int frames = 0;
  uint64_t skip = 0;
  for (;;) {
    while (skip > 0 && !buf.empty()) {
      const uint64_t n = std::min<uint64_t>(skip, buf.size());
      buf.erase(0, n);
      skip -= n;
    }
    while (skip == 0) {
      auto f = gm::TakeFrame(buf, skip);
      if (!f) break;
      if (f->opcode == gm::kOpClose) {
        std::string why = "the GM closed the websocket after the first frame";
        if (f->payload.size() >= 2) {
          const int code = (static_cast<unsigned char>(f->payload[0]) << 8) |
                           static_cast<unsigned char>(f->payload[1]);
          why += ": close code " + std::to_string(code);
          if (f->payload.size() > 2) why += " \"" + Printable(f->payload.substr(2), 120) + "\"";
        } else {
          why += " (close frame without a code)";
        }
        return Fail("first frame", why, fix);
      }
      if (f->opcode == gm::kOpPing)
        gm::SendAllBy(fd, ClientFrame(gm::kOpPong, f->payload), deadline);
      if (f->opcode == gm::kOpText || f->opcode == gm::kOpBinary) ++frames;
    }
    const ssize_t n = gm::RecvSomeBy(fd, buf, deadline);
    if (n == gm::kRecvTimeout) break;
    if (n == gm::kRecvEof) {
      return Fail("first frame",
                  "the GM closed the TCP connection (no close frame) after the first frame", fix);
    }
    if (n < 0) {
      return Fail(
          "first frame",
          std::string("the connection failed after the first frame: ") + std::strerror(errno), fix);
    }
  }
  gm::SendAllBy(fd, ClientFrame(gm::kOpClose, std::string("\x03\xe8", 2)),
                Clock::now() + milliseconds(200));
  return {"first frame", Verdict::kOk,
          "the GM kept the connection " + Seconds(o.hold) + " after the first frame (" +
              std::to_string(frames) + " frame(s) received)",
          ""};
}

}  // namespace

std::vector<Check> DiagnoseGmConnect(const GmProbeOptions& o) {
  static const char* kSteps[] = {"address", "dns", "tcp", "websocket", "first frame"};
  std::vector<Check> out;
  HostPort hp;
  gm::Resolved resolved;
  int fd = -1;
  std::string rest;
  for (const char* step : kSteps) {
    if (AnyFailed(out)) {
      out.push_back({step, Verdict::kSkip, "(not tried: an earlier step failed)", ""});
      continue;
    }
    const std::string s = step;
    if (!o.websocket && (s == "websocket" || s == "first frame")) {
      out.push_back({step, Verdict::kSkip, "(not probed: the LC's own link reports it)", ""});
      continue;
    }
    if (s == "address") {
      out.push_back(ParseAddress(o.address, hp));
    } else if (s == "dns") {
      out.push_back(CheckDns(o, hp, resolved));
    } else if (s == "tcp") {
      out.push_back(CheckTcp(o, hp, resolved, fd));
    } else if (s == "websocket") {
      out.push_back(CheckUpgrade(o, hp, fd, rest));
    } else {
      out.push_back(CheckFirstFrame(o, fd, rest));  // the last step: a copy
    }
  }
  if (fd >= 0) ::close(fd);
  return out;
}

std::vector<std::string> DiagnoseGmForLog(const std::string& address, const std::string& node_name,
                                          std::chrono::milliseconds timeout) {
  GmProbeOptions o;
  o.address = address;
  o.node_name = node_name;
  o.timeout = timeout;
  o.websocket = false;
  std::vector<std::string> lines;
  for (const auto& c : DiagnoseGmConnect(o)) {
    if (c.verdict == Verdict::kSkip) continue;
    std::string line = std::string(VerdictName(c.verdict)) + " " + c.name + ": " + c.detail;
    if (c.verdict != Verdict::kOk && !c.fix.empty()) line += "; fix: " + c.fix;
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace sedna::app
