// A minimal blocking HTTP/1.0 GET to the daemon's own status server (`status`, `doctor`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sedna::app {

// The body of a 200 answer from address:port (0.0.0.0 means loopback), path e.g. "/status";
// nullopt when nothing answers or the answer is not 200. Bounded: 2 s per connect and read.
std::optional<std::string> LoopbackGet(const std::string& address, uint16_t port,
                                       const std::string& path);

}  // namespace sedna::app
