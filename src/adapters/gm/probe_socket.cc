#include "adapters/gm/probe_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace sedna::gm {
namespace {

using std::chrono::milliseconds;

// Waits for `events` on fd until `deadline`; false at the deadline. An error of poll itself
// counts as ready: the send or recv that follows reports it.
bool WaitFd(int fd, short events, ProbeClock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - ProbeClock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;
  }
}

}  // namespace

std::optional<Resolved> ResolveWithin(const std::string& host, uint16_t port,
                                      milliseconds timeout) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Resolved> result;
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, host, port = std::to_string(port)] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    Resolved r;
    r.error = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    for (addrinfo* ai = res; r.error == 0 && ai && r.addrs.size() < 16; ai = ai->ai_next) {
      sockaddr_storage ss{};
      std::memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
      r.addrs.push_back(ss);
      r.lens.push_back(ai->ai_addrlen);
    }
    if (res) ::freeaddrinfo(res);
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->result = std::move(r);
    shared->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait_for(lock, timeout, [&] { return shared->result.has_value(); });
  return shared->result;
}

std::string NumericHost(const sockaddr_storage& addr, socklen_t len) {
  char host[NI_MAXHOST] = {0};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, nullptr, 0,
                    NI_NUMERICHOST) != 0) {
    return "?";
  }
  return host;
}

int ConnectWithin(const sockaddr_storage& addr, socklen_t len, milliseconds timeout, int& fd_out) {
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      if (!WaitFd(fd, POLLOUT, ProbeClock::now() + timeout)) {
        err = ETIMEDOUT;
      } else {
        socklen_t l = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0) err = errno;
      }
    }
  }
  if (err != 0) {
    ::close(fd);
    return err;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fd_out = fd;
  return 0;
}

bool SendAllBy(int fd, std::string_view data, ProbeClock::time_point deadline) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFd(fd, POLLOUT, deadline)) {
        errno = ETIMEDOUT;
        return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

ssize_t RecvSomeBy(int fd, std::string& buf, ProbeClock::time_point deadline) {
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      return n;
    }
    if (n == 0) return kRecvEof;
    if (errno != EAGAIN && errno != EINTR) return kRecvError;
    if (!WaitFd(fd, POLLIN, deadline)) return kRecvTimeout;
  }
}

std::string RandomBytes(size_t n) {
  std::random_device rd;
  std::string s;
  s.reserve(n);
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(rd() & 0xFF));
  return s;
}

}  // namespace sedna::gm
