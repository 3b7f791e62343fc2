// Why this node cannot hold a GM link, step by step (`sedna-lc doctor`, and the daemon's log on its
// first failed connect): the address parses, DNS resolves it, TCP connects, the websocket upgrade
// succeeds, and the GM keeps the connection after the LC's first frame. Plain sockets and blocking
// calls, each bounded by a timeout: call it from a thread that may block (never the event loop).
// Depends only on checks.h and adapters/gm (probe_socket.h: the blocking socket steps; ws_accept.h,
// ws_wire.h: the handshake and frames).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "app/cli/checks.h"

namespace sedna::app {

struct GmProbeOptions {
  std::string address;      // GM_ADDRESS: "host:port", IPv6 as "[::1]:9000"
  std::string node_name;    // sent as Node-Name, as the LC does
  std::string first_frame;  // the LC's first text frame (json::EncodeBareHeader({})); empty = none
  std::chrono::milliseconds timeout{3000};  // per step: DNS, each TCP connect, the upgrade
  std::chrono::milliseconds hold{2000};     // the GM must keep the connection this long
  std::string etc_dir = "/etc";             // where resolv.conf and hosts are read (reported only)
  // false: stop after the TCP connect ("websocket" and "first frame" are kSkip). For the daemon's
  // own log: a second websocket with this node's name could make the GM drop the LC's real link.
  bool websocket = true;
};

// Five checks, in this order: "address", "dns", "tcp", "websocket", "first frame". After the first
// kFail the remaining ones are kSkip. Takes at most about 3 timeouts + hold (+ one timeout per
// extra resolved address). Never throws.
std::vector<Check> DiagnoseGmConnect(const GmProbeOptions& options);

// For the daemon's log on its first failed connect: DiagnoseGmConnect up to the TCP connect
// (websocket = false), one line per step that ran, e.g.
// "FAIL tcp: 10.0.0.5:9000 refused; fix: nothing listens on port 9000 there: ...". Blocking (about
// 2 timeouts, plus one per extra resolved address): run it on the pool, never on the loop.
std::vector<std::string> DiagnoseGmForLog(const std::string& address, const std::string& node_name,
                                          std::chrono::milliseconds timeout);

}  // namespace sedna::app
