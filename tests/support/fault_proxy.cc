#include "fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace sedna::testing {

using namespace std::chrono_literals;

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("FreeLoopbackPort");  // no port to hand out: the test cannot run
    std::abort();
  }
  close(fd);
  return ntohs(a.sin_port);
}

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

namespace {

bool SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

FaultProxy::FaultProxy(int upstream_port) : FaultProxy(upstream_port, [](int) { return Plan{}; }) {}

FaultProxy::FaultProxy(int upstream_port, std::function<Plan(int)> plan)
    : upstream_port_(upstream_port), plan_(std::move(plan)) {
  OpenListener();
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  acceptor_.join();
  for (auto& t : handlers_) t.join();
}

std::string FaultProxy::endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

std::string FaultProxy::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int FaultProxy::request_count() const {
  const std::string r = requests();
  int n = 0;
  for (size_t pos = 0; (pos = r.find(" HTTP/1.1\r\n", pos)) != std::string::npos; ++pos) ++n;
  return n;
}

void FaultProxy::DropConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
}

void FaultProxy::SetMode(Mode mode) { SetModeUntil(mode, std::chrono::steady_clock::time_point{}); }

void FaultProxy::SetModeFor(Mode mode, std::chrono::milliseconds duration) {
  SetModeUntil(mode, std::chrono::steady_clock::now() + duration);
}

void FaultProxy::SetModeUntil(Mode mode, std::chrono::steady_clock::time_point until) {
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mode_ = mode;
    mode_until_ = until;
    epoch = ++mode_epoch_;
  }
  // Wait until the accept thread applied it (closed or reopened the listener): ~10 ms.
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (applied_epoch_ < epoch && !stop_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
}

FaultProxy::Mode FaultProxy::mode() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mode_;
}

void FaultProxy::OpenListener() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));  // 0 the first time: any free port
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0) {
    close(fd);
    return;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  listen_fd_ = fd;
}

void FaultProxy::AcceptLoop() {
  std::vector<int> parked;  // blackholed connections
  uint64_t parked_generation = generation_;
  auto close_parked = [&] {
    for (int fd : parked) close(fd);
    parked.clear();
  };
  while (!stop_) {
    Mode mode;
    uint64_t epoch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (mode_until_ != std::chrono::steady_clock::time_point{} &&
          std::chrono::steady_clock::now() >= mode_until_) {
        mode_ = Mode::kNormal;
        mode_until_ = {};
      }
      mode = mode_;
      epoch = mode_epoch_;
    }
    if (mode != Mode::kBlackhole || parked_generation != generation_) close_parked();
    parked_generation = generation_;
    if (mode == Mode::kRefuse) {
      if (listen_fd_ >= 0) {
        close(listen_fd_);
        listen_fd_ = -1;
      }
      applied_epoch_ = epoch;
      std::this_thread::sleep_for(5ms);
      continue;
    }
    if (listen_fd_ < 0) OpenListener();  // the same port again
    if (listen_fd_ < 0) {                // taken meanwhile: keep trying
      std::this_thread::sleep_for(20ms);
      continue;
    }
    applied_epoch_ = epoch;
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int index = connections_++;
    if (mode == Mode::kBlackhole) {
      parked.push_back(fd);
      continue;
    }
    const Plan plan = plan_(index);
    const uint64_t generation = generation_;
    handlers_.emplace_back([this, fd, plan, generation] { Handle(fd, plan, generation); });
  }
  close_parked();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void FaultProxy::Record(const char* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.append(data, n);
}

void FaultProxy::Register(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.push_back(fd);
}

void FaultProxy::Unregister(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  shutdown(fd, SHUT_RDWR);
  close(fd);
}

void FaultProxy::Handle(int client, const Plan& plan, uint64_t generation) {
  Register(client);
  if (plan.kind == Plan::kCanned || plan.kind == Plan::kCannedKeepAlive) {
    std::string pending;
    char buf[4096];
    bool open = true;
    while (open && !Dropped(generation)) {
      size_t end;
      while ((end = pending.find("\r\n\r\n")) != std::string::npos) {
        pending.erase(0, end + 4);
        open = SendAll(client, plan.canned.data(), plan.canned.size()) &&
               plan.kind == Plan::kCannedKeepAlive;
        bytes_to_client_ += static_cast<int64_t>(plan.canned.size());
        if (!open) break;
      }
      if (!open) break;
      pollfd p{client, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const ssize_t r = recv(client, buf, sizeof(buf), 0);
      if (r <= 0) break;
      pending.append(buf, static_cast<size_t>(r));
      Record(buf, static_cast<size_t>(r));
    }
    Unregister(client);
    return;
  }
  const int server = ConnectLoopback(upstream_port_);
  if (server < 0) {
    Unregister(client);
    return;
  }
  Register(server);
  size_t to_client = 0;
  char buf[16384];
  bool open = true;
  while (open && !Dropped(generation)) {
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (poll(p, 2, 20) <= 0) continue;
    if (Dropped(generation)) break;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t r = recv(client, buf, sizeof(buf), 0);
      if (r <= 0 || !SendAll(server, buf, static_cast<size_t>(r))) break;
      Record(buf, static_cast<size_t>(r));
    }
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = recv(server, buf, sizeof(buf), 0);
      if (r <= 0 || Dropped(generation)) break;
      if (plan.kind == Plan::kCutAfter && to_client + static_cast<size_t>(r) >= plan.cut_after) {
        r = static_cast<ssize_t>(plan.cut_after - to_client);
        open = false;
      }
      if (!SendAll(client, buf, static_cast<size_t>(r))) break;
      to_client += static_cast<size_t>(r);
      const int64_t total = bytes_to_client_ += r;
      if (on_relay) on_relay(total);
    }
  }
  Unregister(client);
  Unregister(server);
}

}  // namespace sedna::testing
