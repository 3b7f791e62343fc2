// The status server of a running sedna-lc answers only Host names it serves and only GET and
// HEAD ([D:I21.8]: DNS rebinding let a web page read /api/dashboard, and POST, PUT and
// DELETE were answered 200). The kubelet's probe (Host 127.0.0.1:<port>) keeps working.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "lc_process.h"

namespace sedna::testing {
namespace {

// One raw request (as sent, `Connection: close` added) and the reply's status line and headers.
std::string Raw(uint16_t port, const std::string& head) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = head + "Connection: close\r\n\r\n";
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, n);
  }
  ::close(fd);
  return reply;
}

std::string StatusLine(const std::string& reply) { return reply.substr(0, reply.find("\r\n")); }

TEST(StatusServerTest, OnlyServedHostsAndOnlyGetAndHead) {
  const std::string tmp = MakeTempDir("sedna-status-");
  const uint16_t status = FreePort();
  const std::string port = std::to_string(status);
  LcProcess lc(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", {{"NODENAME", "edge"}},
               {"--db", tmp + "/database.db", "--status-port", port, "--bind-port",
                std::to_string(FreePort()), "--status-allowed-hosts", "lc.example"},
               tmp + "/lc.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (HttpRequest(status, "GET", "/healthz", "", {}).status != 200) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << ReadFile(tmp + "/lc.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling another process
  }
  // The kubelet's probes, the CLI's Host, and the listed name.
  EXPECT_EQ(StatusLine(Raw(status, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n")),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(Raw(status, "GET /healthz HTTP/1.0\r\nHost: localhost\r\n")),
            "HTTP/1.0 200 OK");
  EXPECT_EQ(StatusLine(Raw(status, "HEAD /api/dashboard HTTP/1.1\r\nHost: lc.example\r\n")),
            "HTTP/1.1 200 OK");
  // DNS rebinding: the page's own name.
  const std::string rebound =
      Raw(status, "GET /api/dashboard HTTP/1.1\r\nHost: evil.example:" + port + "\r\n");
  EXPECT_EQ(StatusLine(rebound), "HTTP/1.1 421 Misdirected Request");
  EXPECT_EQ(rebound.find("\"jobs\""), std::string::npos);
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    SCOPED_TRACE(method);
    const std::string r =
        Raw(status, std::string(method) + " /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + port +
                        "\r\nContent-Length: 0\r\n");
    EXPECT_EQ(StatusLine(r), "HTTP/1.1 405 Method Not Allowed");
    EXPECT_NE(r.find("Allow: GET, HEAD\r\n"), std::string::npos) << r;
  }
  EXPECT_EQ(lc.Stop(), 0);
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace sedna::testing
