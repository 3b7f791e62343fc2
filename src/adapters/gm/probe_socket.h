// Blocking socket steps, each bounded by a timeout or a deadline, for code that must see every
// step of a connect to say where it fails: `sedna-lc doctor`'s probe of the GM
// (app/cli/gm_diagnosis.h). GmLink (gm_link.h) uses Asio instead. Call these from a thread that
// may block, never from the event loop. Errors are errno values (0: none), never exceptions.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sedna::gm {

using ProbeClock = std::chrono::steady_clock;

// What getaddrinfo answered for a host and port (TCP): at most 16 addresses, in its order.
struct Resolved {
  int error = 0;  // getaddrinfo's code (gai_strerror), 0 on success
  std::vector<sockaddr_storage> addrs;
  std::vector<socklen_t> lens;
};

// getaddrinfo(host, port) on a thread of its own; nullopt when it has not answered within
// `timeout` (the thread is then abandoned: getaddrinfo cannot be cancelled).
std::optional<Resolved> ResolveWithin(const std::string& host, uint16_t port,
                                      std::chrono::milliseconds timeout);

// The numeric form of an address ("10.0.0.5", "::1"); "?" if it has none.
std::string NumericHost(const sockaddr_storage& addr, socklen_t len);

// Connects a non-blocking, close-on-exec TCP socket (TCP_NODELAY) to `addr` within `timeout`.
// 0 and the socket in `fd_out` (the caller closes it), or the errno: ETIMEDOUT for the timeout.
int ConnectWithin(const sockaddr_storage& addr, socklen_t len, std::chrono::milliseconds timeout,
                  int& fd_out);

// Sends all of `data` on the non-blocking `fd` by `deadline` (no SIGPIPE). False on an error
// (errno says which) or at the deadline.
bool SendAllBy(int fd, std::string_view data, ProbeClock::time_point deadline);

// What RecvSomeBy got.
inline constexpr ssize_t kRecvEof = 0;
inline constexpr ssize_t kRecvError = -1;  // errno says which
inline constexpr ssize_t kRecvTimeout = -2;

// Appends the bytes that arrive on the non-blocking `fd` first, at most 4 KiB, waiting until
// `deadline`: the count (> 0), kRecvEof, kRecvError or kRecvTimeout.
ssize_t RecvSomeBy(int fd, std::string& buf, ProbeClock::time_point deadline);

// `n` bytes from std::random_device (websocket keys and masks).
std::string RandomBytes(size_t n);

}  // namespace sedna::gm
