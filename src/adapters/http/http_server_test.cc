#include "adapters/http/http_server.h"

#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "adapters/http/worker_api.h"

namespace sedna::http {
namespace {

using namespace std::chrono_literals;

struct Reply {
  std::string status_line;
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A blocking raw-socket HTTP client; every connect, send and receive gives up after `timeout`
// (10 s) so a broken server fails the test instead of hanging it. `source` (e.g. "127.0.0.2")
// binds the client's address.
class Client {
 public:
  explicit Client(uint16_t port, const char* source = nullptr,
                  std::chrono::seconds timeout = std::chrono::seconds(10)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{static_cast<time_t>(timeout.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (source != nullptr && !BindSource(source)) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      connect_errno_ = errno;
  }
  ~Client() { Close(); }

  // Binds `source` with a port below the kernel's ephemeral range (32768-60999 by default), so
  // that a thousand held clients never take a port another test picked with bind(0) and is about
  // to listen on (tests run in parallel).
  bool BindSource(const char* source) {
    static uint16_t next = 0;
    if (next == 0) next = static_cast<uint16_t>(12000 + (::getpid() % 8) * 2500);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &local.sin_addr);
    for (int tries = 0; tries < 64; ++tries) {
      local.sin_port = htons(next++);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0) return true;
      if (errno != EADDRINUSE) break;
    }
    connect_errno_ = errno;
    return false;
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A small receive buffer (and no autotuning), so that a large reply cannot be buffered whole.
  void SmallReceiveBuffer() {
    int size = 64 * 1024;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }

  int connect_errno() const { return connect_errno_; }
  bool connected() const { return connect_errno_ == 0; }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends what the socket takes at once (non-blocking); the bytes sent.
  size_t SendSome(std::string_view data) {
    size_t sent = 0;
    while (sent < data.size()) {
      ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    return sent;
  }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response; `with_body` is false for replies to HEAD.
  std::optional<Reply> Read(bool with_body = true) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    Reply r;
    std::string head = buf_.substr(0, end + 2);
    buf_.erase(0, end + 4);
    size_t eol = head.find("\r\n");
    r.status_line = head.substr(0, eol);
    r.status = std::stoi(r.status_line.substr(9, 3));
    for (size_t pos = eol + 2; pos < head.size();) {
      size_t next = head.find("\r\n", pos);
      std::string line = head.substr(pos, next - pos);
      size_t colon = line.find(':');
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[Lower(line.substr(0, colon))] = value;
      pos = next + 2;
    }
    size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    if (!with_body) length = 0;
    while (buf_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    return r;
  }

  // True once the server has closed the connection (EOF or reset) with nothing more to read;
  // false if data arrives or the 10 s receive timeout expires.
  bool ReadsEof() {
    if (!buf_.empty()) return false;
    char c;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  // True once a reply byte or the server's close can be read; false after `limit`.
  bool WaitReadable(std::chrono::milliseconds limit) {
    if (!buf_.empty()) return true;
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, static_cast<int>(limit.count())) > 0;
  }

  // True while the server has neither closed the connection nor sent anything on it.
  bool Quiet() {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    return buf_.empty() && ::poll(&p, 1, 0) == 0;
  }

  // "127.0.0.1:port", as the server names this client's end.
  std::string LocalEndpoint() const {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(local.sin_port));
  }

 private:
  bool Fill() {
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  int connect_errno_ = 0;
  std::string buf_;
};

std::string Post(std::string_view target, std::string_view body, std::string_view extra = "") {
  std::string s = "POST ";
  s += target;
  s += " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ";
  s += std::to_string(body.size());
  s += "\r\n";
  s += extra;
  s += "\r\n";
  s += body;
  return s;
}

// Runs an io_context on a background thread, like the controller's loop thread.
class HttpServerTest : public ::testing::Test {
 protected:
  ~HttpServerTest() override {
    if (thread_.joinable()) {
      OnIo([&] { server_.reset(); });
      work_.reset();
      io_.stop();
      thread_.join();
    }
  }

  // Starts the server with `handler`; by default an echo of "METHOD TARGET BODY".
  void StartServer(HttpServerOptions options = {}, HttpHandler handler = {}) {
    options.address = "127.0.0.1";
    if (!handler) {
      handler = [this](const HttpRequest& req) {
        ++calls_;
        HttpResponse r;
        r.body = req.method + " " + req.target + " " + req.body;
        return r;
      };
    }
    auto started = HttpServer::Start(io_, options, std::move(handler));
    ASSERT_TRUE(started.ok()) << started.message();
    server_ = std::move(started).value();
    port_ = server_->port();
    ASSERT_NE(port_, 0);
    thread_ = std::thread([this] { io_.run(); });
  }

  // Runs f on the io thread and waits for it.
  template <class F>
  void OnIo(F f) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

  HttpServer::Stats Stats() {
    HttpServer::Stats st;
    OnIo([&] { st = server_->stats(); });
    return st;
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      io_.get_executor()};
  std::thread thread_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  std::atomic<int> calls_{0};
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::map<std::string, std::string> seen_headers;
  StartServer({}, [&](const HttpRequest& req) {
    ++calls_;
    seen_headers = req.headers;
    HttpResponse r;
    r.body = req.method + " " + req.target + " " + req.body;
    r.headers.emplace_back("X-Call", std::to_string(calls_.load()));
    return r;
  });
  Client c(port_);
  ASSERT_TRUE(c.connected());
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(c.Send(Post("/p" + std::to_string(i), "{}", "X-Mixed-Case: v\r\n")));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status_line, "HTTP/1.1 200 OK");
    EXPECT_EQ(r->body, "POST /p" + std::to_string(i) + " {}");
    EXPECT_EQ(r->headers["content-type"], "application/json");
    EXPECT_EQ(r->headers["content-length"], std::to_string(r->body.size()));
    EXPECT_EQ(r->headers["x-call"], std::to_string(i));
    EXPECT_EQ(r->headers.count("connection"), 0u);
  }
  EXPECT_EQ(calls_, 3);
  EXPECT_EQ(seen_headers["x-mixed-case"], "v");
  EXPECT_EQ(seen_headers["content-type"], "application/json");
  EXPECT_EQ(seen_headers["host"], "127.0.0.1");
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  Client c(port_);
  std::string batch = Post("/a", "1") + "GET /b HTTP/1.1\r\nHost: x\r\n\r\n" +
                      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" +
                      Post("/d", "4444") + Post("/e", "", "Connection: close\r\n") +
                      Post("/never", "x");
  ASSERT_TRUE(c.Send(batch));
  for (const char* want : {"POST /a 1", "GET /b ", "POST /c abcde", "POST /d 4444", "POST /e "}) {
    auto r = c.Read();
    ASSERT_TRUE(r) << want;
    EXPECT_EQ(r->body, want);
  }
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_EQ(calls_, 5);
}

TEST_F(HttpServerTest, ConnectionCloseGetsOneReplyThenClose) {
  StartServer();
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/x", "{}", "Connection: close\r\n")));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAliveAsked) {
  StartServer();
  {
    Client c(port_);
    ASSERT_TRUE(c.Send("GET /old HTTP/1.0\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status_line, "HTTP/1.0 200 OK");
    EXPECT_EQ(r->headers["connection"], "close");
    EXPECT_TRUE(c.ReadsEof());
  }
  Client c(port_);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.Send("GET /ka HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->headers["connection"], "keep-alive");
    EXPECT_EQ(r->body, "GET /ka ");
  }
}

TEST_F(HttpServerTest, BodyOverLimitGets413AndClose) {
  HttpServerOptions options;
  options.body_limit = 16;
  StartServer(options);
  {
    Client c(port_);
    ASSERT_TRUE(c.Send(Post("/ok", std::string(16, 'a'))));
    auto ok = c.Read();
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    ASSERT_TRUE(c.Send(Post("/big", std::string(100, 'a'))));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status_line, "HTTP/1.1 413 Payload Too Large");
    EXPECT_EQ(r->headers["content-type"], "text/plain");
    EXPECT_EQ(r->headers["connection"], "close");
    EXPECT_EQ(r->body, "413: Request Entity Too Large");
    EXPECT_TRUE(c.ReadsEof());
  }
  {  // chunked: the limit applies to the decoded body
    Client c(port_);
    ASSERT_TRUE(c.Send(
        "POST /chunked HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n"
        "1\r\nX\r\n0\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(r->body, "413: Request Entity Too Large");
    EXPECT_TRUE(c.ReadsEof());
  }
  EXPECT_EQ(calls_, 1);
}

TEST_F(HttpServerTest, LargeBodyArrivesWhole) {
  std::atomic<size_t> size{0};
  StartServer({}, [&](const HttpRequest& req) {
    size = req.body.size();
    bool intact = req.body == std::string(req.body.size(), 'z');
    HttpResponse r;
    r.body = intact ? "intact" : "corrupt";
    return r;
  });
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/big", std::string(900 * 1024, 'z'))));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "intact");
  EXPECT_EQ(size, 900u * 1024);
}

TEST_F(HttpServerTest, MalformedRequestGets400AndClose) {
  StartServer();
  for (std::string bad :
       {"NOT A REQUEST\r\n\r\n", "POST /x HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    SCOPED_TRACE(bad);
    Client c(port_);
    ASSERT_TRUE(c.Send(bad));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(r->headers["content-type"], "text/plain");
    EXPECT_EQ(r->headers["connection"], "close");
    EXPECT_EQ(r->body, "400: Bad Request");
    EXPECT_TRUE(c.ReadsEof());
  }
  EXPECT_EQ(calls_, 0);
}

TEST_F(HttpServerTest, OversizedHeaderGets431) {
  StartServer();
  Client c(port_);
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nX-Big: " + std::string(70 * 1024, 'h') + "\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpServerTest, StopClosesListenerAndConnections) {
  StartServer();
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/x", "{}")));
  ASSERT_TRUE(c.Read());
  Client idle(port_);
  ASSERT_TRUE(idle.connected());
  OnIo([&] { server_->Stop(); });
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_TRUE(idle.ReadsEof());
  Client late(port_);
  EXPECT_EQ(late.connect_errno(), ECONNREFUSED);
  OnIo([&] { server_->Stop(); });  // idempotent
  EXPECT_EQ(calls_, 1);
}

TEST_F(HttpServerTest, HandlerMayStopTheServer) {
  StartServer({}, [this](const HttpRequest&) {
    server_->Stop();
    return HttpResponse{};
  });
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/stop", "{}")));
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpServerTest, PortInUseIsReportedWithAddressAndReason) {
  StartServer();
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = port_;
  auto second = HttpServer::Start(io_, options, [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.message(),
            "listen 127.0.0.1:" + std::to_string(port_) + ": Address already in use");

  options.address = "not-an-ip";
  options.port = 9100;
  auto bad = HttpServer::Start(io_, options, [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "listen not-an-ip:9100: invalid address");

  options.address = "::1";
  auto no_handler = HttpServer::Start(io_, options, HttpHandler{});
  ASSERT_FALSE(no_handler.ok());
  EXPECT_EQ(no_handler.message(), "listen [::1]:9100: no handler");
}

// The handler must not throw; if it does, the client gets 500 and the connection lives on.
TEST_F(HttpServerTest, ThrowingHandlerIsAnswered500) {
  StartServer({}, [](const HttpRequest& req) -> HttpResponse {
    if (req.target == "/throw") throw std::runtime_error("boom");
    if (req.target == "/int") throw 42;
    HttpResponse r;
    r.body = "fine";
    return r;
  });
  Client c(port_);
  for (const char* target : {"/throw", "/int"}) {
    ASSERT_TRUE(c.Send(Post(target, "{}")));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status_line, "HTTP/1.1 500 Internal Server Error");
    EXPECT_EQ(r->headers["content-type"], "text/plain");
    EXPECT_EQ(r->body, "500: Internal Server Error");
  }
  ASSERT_TRUE(c.Send(Post("/next", "{}")));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "fine");
}

TEST_F(HttpServerTest, IdleConnectionIsClosedAfterTimeout) {
  HttpServerOptions options;
  options.idle_timeout = 1s;
  StartServer(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/x", "{}")));
  ASSERT_TRUE(c.Read());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
}

TEST_F(HttpServerTest, ExpectContinueGets100BeforeBody) {
  StartServer();
  Client c(port_);
  ASSERT_TRUE(
      c.Send("POST /e HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\n"
             "Expect: 100-continue\r\n\r\n"));
  auto interim = c.Read();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status_line, "HTTP/1.1 100 Continue");
  ASSERT_TRUE(c.Send("hello"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "POST /e hello");
}

TEST_F(HttpServerTest, HeadReplyHasLengthButNoBody) {
  StartServer();
  Client c(port_);
  ASSERT_TRUE(c.Send("HEAD /h HTTP/1.1\r\n\r\nGET /g HTTP/1.1\r\n\r\n"));
  auto head = c.Read(/*with_body=*/false);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->headers["content-length"], std::to_string(std::string("HEAD /h ").size()));
  auto get = c.Read();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(get->body, "GET /g ");
}

TEST_F(HttpServerTest, MaxConnectionsPausesAccepting) {
  HttpServerOptions options;
  options.max_connections = 1;
  options.eviction_grace = std::chrono::hours(1);  // `first` is never evictable here
  StartServer(options);
  Client first(port_);
  Client second(port_);  // completes in the listen backlog, not yet accepted
  ASSERT_TRUE(second.Send(Post("/second", "{}")));
  ASSERT_TRUE(first.Send(Post("/first", "{}")));
  auto r1 = first.Read();
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->body, "POST /first {}");
  EXPECT_EQ(calls_, 1);
  first.Close();
  auto r2 = second.Read();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->body, "POST /second {}");
}

TEST_F(HttpServerTest, ServesTheWorkerApi) {
  StartServer({}, [](const HttpRequest& req) {
    return RouteWorkerApi(req, [](std::string_view name, std::string_view) {
      HttpResponse r;
      r.body = name == "train-worker-h4k9q" ? "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}" : "";
      return r;
    });
  });
  Client c(port_);
  // What python-requests sends for requests.request("POST", url, json=message).
  ASSERT_TRUE(c.Send(Post("/sedna/workers/train-worker-h4k9q/info", R"({"name": "x"})",
                          "User-Agent: python-requests/2.31.0\r\nAccept-Encoding: gzip, "
                          "deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n")));
  auto ok = c.Read();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->headers["content-type"], "application/json");
  EXPECT_EQ(ok->body, "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}");
  ASSERT_TRUE(c.Send("GET /sedna/workers/w/info HTTP/1.1\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status_line, "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(r->headers["allow"], "POST");
  EXPECT_EQ(r->body, "405: Method Not Allowed");
}

// A reply larger than the socket buffer: the first send is partial, the rest is written
// asynchronously, and the connection goes on (here with a pipelined request) in order.
TEST_F(HttpServerTest, LargeReplyIsWrittenWholeAndTheConnectionGoesOn) {
  std::string big(8 << 20, ' ');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7 + i / 4093) % 26);
  StartServer({}, [&](const HttpRequest& req) {
    ++calls_;
    HttpResponse r;
    r.body = req.target == "/big" ? big : "small " + req.target;
    return r;
  });
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/big", "") + Post("/after", "")));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->headers["content-length"], std::to_string(big.size()));
  EXPECT_TRUE(r->body == big);
  auto r2 = c.Read();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->body, "small /after");
  ASSERT_TRUE(c.Send(Post("/again", "")));
  auto r3 = c.Read();
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->body, "small /again");
  EXPECT_EQ(calls_, 3);
}

TEST_F(HttpServerTest, ManyPipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  Client c(port_);
  std::string batch;
  for (int i = 0; i < 500; ++i) batch += Post("/p" + std::to_string(i), std::to_string(i));
  ASSERT_TRUE(c.Send(batch));
  for (int i = 0; i < 500; ++i) {
    auto r = c.Read();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->body, "POST /p" + std::to_string(i) + " " + std::to_string(i));
  }
  EXPECT_EQ(calls_, 500);
}

// Each request sees exactly its own header fields, however the previous ones looked.
TEST_F(HttpServerTest, HeadersOfOneRequestDoNotLeakIntoTheNext) {
  std::vector<std::map<std::string, std::string>> seen;
  StartServer({}, [&](const HttpRequest& req) {
    seen.push_back(req.headers);
    return HttpResponse{};
  });
  Client c(port_);
  const std::string long_value(1000, 'v');
  for (const std::string& request :
       {std::string("POST /1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-Rep: p\r\nX-REP: q\r\n"
                    "Content-Length: 0\r\n\r\n"),
        "GET /2 HTTP/1.1\r\nhost: b\r\nX-Long: " + long_value + "\r\n\r\n",
        std::string("GET /3 HTTP/1.1\r\nX-Rep: r\r\n\r\n"),
        "GET /4 HTTP/1.1\r\nX-Long: " + long_value + "\r\nX-Long: w\r\n\r\n",
        std::string("GET /5 HTTP/1.1\r\n\r\n")}) {
    ASSERT_TRUE(c.Send(request));
    ASSERT_TRUE(c.Read());
  }
  using Fields = std::map<std::string, std::string>;
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0],
            (Fields{{"host", "a"}, {"x-a", "1"}, {"x-rep", "p, q"}, {"content-length", "0"}}));
  EXPECT_EQ(seen[1], (Fields{{"host", "b"}, {"x-long", long_value}}));
  EXPECT_EQ(seen[2], (Fields{{"x-rep", "r"}}));
  EXPECT_EQ(seen[3], (Fields{{"x-long", long_value + ", w"}}));
  EXPECT_EQ(seen[4], Fields{});
}

// ------------------------------------------------------------------ hostile clients

// The part of a request header a slow client sends first; it never sends the empty line.
constexpr std::string_view kSlowStart = "POST /sedna/workers/w/info HTTP/1.1\r\nX-Slow: ";

// Makes room for `needed` descriptors in this process (the soft limit, up to the hard one).
void RaiseFdLimit(rlim_t needed) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur >= needed) return;
  limit.rlim_cur = std::min(needed, limit.rlim_max);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  ASSERT_GE(limit.rlim_cur, needed) << "the hard RLIMIT_NOFILE is too low for this test";
}

// Connections that each sent an incomplete header, from 127.0.0.2 .. 127.0.0.(1 + addresses)
// in turn (or from 127.0.0.1 when addresses is 0).
class SlowClients {
 public:
  SlowClients(uint16_t port, int count, int addresses) {
    for (int i = 0; i < count; ++i) {
      const std::string source =
          addresses == 0 ? "127.0.0.1" : "127.0.0." + std::to_string(2 + i % addresses);
      clients_.push_back(std::make_unique<Client>(port, source.c_str()));
      connected_ += clients_.back()->connected() ? 1 : 0;
      clients_.back()->Send(kSlowStart);
    }
  }
  int connected() const { return connected_; }
  Client& operator[](size_t i) { return *clients_[i]; }

  // One more header byte on each connection (sends to closed ones fail quietly).
  void Trickle() {
    for (auto& c : clients_) c->Send("a");
  }

  // How many the server still holds: neither closed nor answered.
  int Quiet() {
    int n = 0;
    for (auto& c : clients_) n += c->Quiet() ? 1 : 0;
    return n;
  }

 private:
  std::vector<std::unique_ptr<Client>> clients_;
  int connected_ = 0;
};

// Waits up to `limit` for `c` to become readable, calling `tick` every `every` meanwhile (a slow
// client's pace). True when readable.
bool AwaitReadable(Client& c, std::chrono::milliseconds limit, std::chrono::milliseconds every,
                   const std::function<void()>& tick) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (c.WaitReadable(every)) return true;
    tick();
  }
  return false;
}

// Records what the server reports through on_rejected and on_dropped (called on the io thread).
struct Reports {
  void Watch(HttpServerOptions& options) {
    options.on_rejected = [this](int status, const std::string& target) {
      std::lock_guard lock(mu);
      rejected.emplace_back(status, target);
    };
    options.on_dropped = [this](DropReason reason, const std::string& peer) {
      std::lock_guard lock(mu);
      dropped.emplace_back(reason, peer);
    };
  }
  std::vector<std::pair<int, std::string>> Rejected() {
    std::lock_guard lock(mu);
    return rejected;
  }
  std::vector<std::pair<DropReason, std::string>> Dropped() {
    std::lock_guard lock(mu);
    return dropped;
  }

  std::mutex mu;
  std::vector<std::pair<int, std::string>> rejected;
  std::vector<std::pair<DropReason, std::string>> dropped;
};

// [D:I15.4]: 1000 connections trickling a header byte a second, from 40 addresses (25 each,
// under the per-peer cap), and a real report still gets its 200 within a bounded time, with the
// server's default options. Before the fix the first 256 held every slot and the report waited
// in the listen backlog for good.
TEST_F(HttpServerTest, ARealReportGetsThroughWhileAThousandSlowClientsAreHeld) {
  RaiseFdLimit(4096);
  std::atomic<int> evicted{0};
  HttpServerOptions options;
  options.on_dropped = [&](DropReason reason, const std::string&) {
    if (reason == DropReason::kEvicted) ++evicted;
  };
  StartServer(options);
  SlowClients slow(port_, 1000, 40);
  ASSERT_EQ(slow.connected(), 1000);

  Client real(port_);
  ASSERT_TRUE(real.connected());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(real.Send(Post("/sedna/workers/w/info", R"({"name": "w"})")));
  ASSERT_TRUE(AwaitReadable(real, 10s, 1s, [&] { slow.Trickle(); }))
      << "no reply within 10 s while 1000 slow clients are held";
  auto r = real.Read();
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"(POST /sedna/workers/w/info {"name": "w"})");
  // The server was full of slow clients when it served the report: it evicted only to make room
  // and still holds the rest (max_connections 256, less the report's own connection).
  const int held = slow.Quiet();
  EXPECT_GE(held, 250);
  EXPECT_GE(evicted.load(), 700);
  std::printf(
      "real report answered after %lld ms; %d slow connections held, %d evicted\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()),
      held, evicted.load());
}

// The header deadline counts the whole header, however steadily its bytes arrive.
TEST_F(HttpServerTest, HeaderThatTricklesPastTheDeadlineGets408) {
  Reports reports;
  HttpServerOptions options;
  options.header_timeout = 1s;
  reports.Watch(options);
  StartServer(options);
  Client c(port_);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("GET /slow HTTP/1.1\r\nX-Slow: "));
  ASSERT_TRUE(AwaitReadable(c, 5s, 100ms, [&] { c.Send("a"); }));
  const auto waited = std::chrono::steady_clock::now() - start;
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status_line, "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_EQ(r->body, "408: Request Timeout");
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_GE(waited, 900ms);
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(reports.Rejected(), (std::vector<std::pair<int, std::string>>{{408, "/slow"}}));
}

// On a kept-alive connection the deadline of a later request starts with its first byte: time
// idle between requests is the idle timeout's business.
TEST_F(HttpServerTest, HeaderDeadlineOfALaterRequestStartsWithItsFirstByte) {
  HttpServerOptions options;
  options.header_timeout = 1s;
  StartServer(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/1", "{}")));
  ASSERT_TRUE(c.Read());
  // Nothing to await: the point is that this much idle time passes between requests.
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(c.Send(Post("/2", "{}")));
  auto r2 = c.Read();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 200);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("GET /3 HTTP/1.1\r\nX-Slow: "));
  ASSERT_TRUE(AwaitReadable(c, 5s, 100ms, [&] { c.Send("a"); }));
  auto r3 = c.Read();
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->status, 408);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
  EXPECT_EQ(calls_, 2);
}

// At max_connections a new connection evicts the one that has waited longest for its request to
// be complete, whether it is still sending its header or its body.
TEST_F(HttpServerTest, AtMaxConnectionsTheLongestWaitingRequestIsEvicted) {
  Reports reports;
  HttpServerOptions options;
  options.max_connections = 3;
  reports.Watch(options);
  StartServer(options);
  Client body(port_);  // oldest, in the body phase
  ASSERT_TRUE(
      body.Send("POST /body HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = body.Read();
  ASSERT_TRUE(interim);
  ASSERT_EQ(interim->status, 100);
  ASSERT_TRUE(body.Send("ab"));
  Client older(port_);
  ASSERT_TRUE(older.Send(kSlowStart));
  Client newer(port_);
  ASSERT_TRUE(newer.Send(kSlowStart));
  ASSERT_TRUE(newer.Quiet());

  // Each stays open, kept alive: then waiting for its next request, but since its reply only.
  std::vector<std::unique_ptr<Client>> fresh;
  for (const char* target : {"/fresh1", "/fresh2"}) {
    fresh.push_back(std::make_unique<Client>(port_));
    ASSERT_TRUE(fresh.back()->Send(Post(target, "{}")));
    auto r = fresh.back()->Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, std::string("POST ") + target + " {}");
  }
  EXPECT_TRUE(body.ReadsEof());
  EXPECT_TRUE(older.ReadsEof());
  EXPECT_TRUE(newer.Quiet());
  using Drop = std::pair<DropReason, std::string>;
  EXPECT_EQ(reports.Dropped(), (std::vector<Drop>{{DropReason::kEvicted, body.LocalEndpoint()},
                                                  {DropReason::kEvicted, older.LocalEndpoint()}}));
  EXPECT_EQ(calls_, 2);
}

// A connection closing after its final reply makes room before any that waits for a request.
TEST_F(HttpServerTest, AtMaxConnectionsAClosingConnectionIsEvictedFirst) {
  Reports reports;
  HttpServerOptions options;
  options.max_connections = 2;
  reports.Watch(options);
  StartServer(options);
  Client waiting(port_);  // older, waits for its header
  ASSERT_TRUE(waiting.Send(kSlowStart));
  Client closing(port_);
  ASSERT_TRUE(closing.Send("NOT HTTP\r\n\r\n"));
  auto bad = closing.Read();
  ASSERT_TRUE(bad);
  ASSERT_EQ(bad->status, 400);  // and the server drains it for up to 500 ms
  Client fresh(port_);
  ASSERT_TRUE(fresh.Send(Post("/fresh", "{}")));
  auto r = fresh.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(waiting.Quiet());
  using Drop = std::pair<DropReason, std::string>;
  EXPECT_EQ(reports.Dropped(),
            (std::vector<Drop>{{DropReason::kEvicted, closing.LocalEndpoint()}}));
}

// A connection whose reply is being written is never evicted: at max_connections with nothing
// else, the next connection waits in the backlog until the reply is read.
TEST_F(HttpServerTest, AReplyBeingWrittenIsNeverEvicted) {
  Reports reports;
  HttpServerOptions options;
  options.max_connections = 1;
  reports.Watch(options);
  // More than the socket buffers hold (4 MiB + 128 KiB). Static: the handler may still be
  // copying it on the server thread when a failed assertion returns from here.
  static const std::string big(16 << 20, 'x');
  StartServer(options, [&](const HttpRequest& req) {
    HttpResponse r;
    r.body = req.target == "/big" ? big : "small";
    return r;
  });
  Client reader(port_);
  reader.SmallReceiveBuffer();
  ASSERT_TRUE(reader.Send("GET /big HTTP/1.1\r\n\r\n"));
  // The reply has begun and fills the socket buffers (copying the body takes seconds under TSan).
  ASSERT_TRUE(reader.WaitReadable(30s));
  Client next(port_);
  ASSERT_TRUE(next.Send(Post("/next", "{}")));
  // Nothing to await: the point is that nothing happens to either for this long.
  EXPECT_FALSE(next.WaitReadable(300ms));
  auto r = reader.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body.size(), big.size());
  // Now `reader` waits for its next request: the next connection evicts it.
  auto rn = next.Read();
  ASSERT_TRUE(rn);
  EXPECT_EQ(rn->body, "small");
  using Drop = std::pair<DropReason, std::string>;
  EXPECT_EQ(reports.Dropped(), (std::vector<Drop>{{DropReason::kEvicted, reader.LocalEndpoint()}}));
}

// With nobody waiting for a header, the connection reading a body longest makes room.
TEST_F(HttpServerTest, AtMaxConnectionsASlowBodyIsEvictedWhenNoHeaderWaits) {
  HttpServerOptions options;
  options.max_connections = 1;
  StartServer(options);
  Client body(port_);
  ASSERT_TRUE(
      body.Send("POST /body HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = body.Read();
  ASSERT_TRUE(interim);
  ASSERT_EQ(interim->status, 100);
  Client fresh(port_);
  ASSERT_TRUE(fresh.Send(Post("/fresh", "{}")));
  auto r = fresh.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "POST /fresh {}");
  EXPECT_TRUE(body.ReadsEof());
  EXPECT_EQ(calls_, 1);
}

// [D:I15.10]: only `chunked` frames a body; anything else is refused, never guessed at.
TEST_F(HttpServerTest, TransferCodingOtherThanChunkedGets501) {
  Reports reports;
  HttpServerOptions options;
  reports.Watch(options);
  StartServer(options);
  for (std::string coding :
       {"gzip, chunked", "identity", "chunked, gzip", "x-unknown", "chunked;q=1", "gzip"}) {
    SCOPED_TRACE(coding);
    Client c(port_);
    ASSERT_TRUE(c.Send("POST /te HTTP/1.1\r\nTransfer-Encoding: " + coding +
                       "\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status_line, "HTTP/1.1 501 Not Implemented");
    EXPECT_EQ(r->headers["content-type"], "text/plain");
    EXPECT_EQ(r->headers["connection"], "close");
    EXPECT_EQ(r->body, "501: Not Implemented");
    EXPECT_TRUE(c.ReadsEof());
  }
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(reports.Rejected().size(), 6u);
  for (const auto& [status, target] : reports.Rejected()) {
    EXPECT_EQ(status, 501);
    EXPECT_EQ(target, "/te");
  }
  {  // twice, even both chunked: 400
    Client c(port_);
    ASSERT_TRUE(
        c.Send("POST /te HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
               "\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
  }
  Client c(port_);  // the name and value are case-insensitive; spaces around it are not part
  ASSERT_TRUE(
      c.Send("POST /te HTTP/1.1\r\ntransfer-encoding:  Chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /te abc");
}

// Trailer fields are read within 8 KiB and dropped; so is a chunk-size line.
TEST_F(HttpServerTest, TrailersAreBoundedAndNeverMergedIntoTheHeader) {
  Reports reports;
  std::vector<std::map<std::string, std::string>> seen;
  HttpServerOptions options;
  reports.Watch(options);
  StartServer(options, [&](const HttpRequest& req) {
    seen.push_back(req.headers);
    HttpResponse r;
    r.body = req.body;
    return r;
  });
  const std::string head = "POST /t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
  {
    Client c(port_);
    const std::string trailers = "X-Trailer: t\r\nContent-Type: text/evil\r\n";
    ASSERT_TRUE(c.Send(head + "0\r\n" + trailers + "\r\n" + Post("/next", "n")));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "abc");
    auto next = c.Read();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "n");
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0], (std::map<std::string, std::string>{{"transfer-encoding", "chunked"}}));
  }
  const std::string big(9 * 1024, 'v');
  for (std::string tail : {"0\r\nX-Big: " + big + "\r\n\r\n",         // trailer section
                           "0\r\nX-Big: " + big,                      // and one that never ends
                           "1;ext=" + big + "\r\nx\r\n0\r\n\r\n"}) {  // a chunk-size line
    SCOPED_TRACE(tail.substr(0, 12));
    Client c(port_);
    ASSERT_TRUE(c.Send(head + tail));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431);
    EXPECT_EQ(r->headers["connection"], "close");
    EXPECT_TRUE(c.ReadsEof());
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(reports.Rejected(),
            (std::vector<std::pair<int, std::string>>{{431, "/t"}, {431, "/t"}, {431, "/t"}}));
}

// ------------------------------------------------------------------ [D:I21]: admission attacks

// A worker's report as Sedna's lib/sedna client sends it: connect, the whole POST at once, read
// the reply; up to `tries` tries, each given `per_try` for its reply. The try that got a 200,
// or 0.
int ReportWithRetries(uint16_t port, const std::string& request, int tries,
                      std::chrono::milliseconds per_try, const char* source = nullptr) {
  for (int t = 1; t <= tries; ++t) {
    Client c(port, source, std::chrono::seconds(2));  // connect within 2 s too
    if (c.connected() && c.Send(request) && c.WaitReadable(per_try)) {
      auto r = c.Read();
      if (r && r->status == 200) return t;
    }
  }
  return 0;
}

long RssKb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb;
}

// Attack 5a: every worker of a node posts from 127.0.0.1, so a per-address cap is what a local
// attacker exhausts. 40 idle connections from 127.0.0.1, reopened as the server closes them
// (408 at the header deadline), and 40 real reports from 127.0.0.1 all get their 200 at once.
// Before: the 32-per-peer cap closed every report's connection unread.
TEST_F(HttpServerTest, IdleConnectionsFromTheWorkersAddressDoNotLockReportsOut) {
  HttpServerOptions options;
  options.header_timeout = 1s;
  StartServer(options);
  constexpr int kIdle = 40;
  std::vector<std::unique_ptr<Client>> idle;
  auto open_idle = [&] {
    auto c = std::make_unique<Client>(port_, "127.0.0.1");
    c->Send(kSlowStart);
    return c;
  };
  for (int i = 0; i < kIdle; ++i) idle.push_back(open_idle());
  int reopened = 0, reports = 0, first_try = 0;
  const std::string report = Post("/sedna/workers/w/info", std::string(1000, ' ') + "{}");
  // Until every idle connection was closed by the server and reopened at least once: each
  // round waits (up to 100 ms) for the server to close the first idle one.
  for (int round = 0; round < 200 && (reopened < kIdle || reports < 40); ++round) {
    idle.front()->WaitReadable(100ms);
    for (auto& c : idle) {
      if (!c->Quiet()) {  // answered 408 and closed: reopen, as the attacker does
        c = open_idle();
        ++reopened;
      }
    }
    if (reports < 40) {
      ++reports;
      const int t = ReportWithRetries(port_, report, 3, 2s, "127.0.0.1");
      ASSERT_NE(t, 0) << "report " << reports << " got no 200 in 3 tries";
      first_try += t == 1 ? 1 : 0;
    }
  }
  EXPECT_GE(reopened, kIdle);
  EXPECT_EQ(first_try, 40);
  EXPECT_EQ(calls_, 40);
  std::printf("%d of 40 reports on the first try; %d idle connections reopened\n", first_try,
              reopened);
}

// A flood of connections that each send an incomplete header and hold it, from 127.0.0.2 ..
// 127.0.0.251 in turn, at `per_second`, on a thread of its own until Stop().
class Flood {
 public:
  Flood(uint16_t port, int per_second) {
    thread_ = std::thread([this, port, per_second] { Run(port, per_second); });
  }
  ~Flood() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int opened() const { return opened_; }
  // Waits (up to `limit`) until the flood has opened `n` connections in all; true if it has.
  bool AwaitOpened(int n, std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return opened_ >= n; });
  }

 private:
  void Run(uint16_t port, int per_second) {
    std::deque<int> held;
    const auto every = std::chrono::microseconds(1000000 / per_second);
    auto next = std::chrono::steady_clock::now();
    // Source ports below the ephemeral range (see Client::BindSource), each (address, port)
    // pair used once.
    const int base = 12000 + (::getpid() % 8) * 2500;
    // A random start, so that a rerun does not meet the previous run's TIME_WAIT pairs.
    const uint64_t start = std::random_device()() % (250 * 2500);
    for (uint64_t i = start; !stop_; ++i) {
      next += every;
      std::this_thread::sleep_until(next);  // the flood's pace, not a wait for an event
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) continue;
      timeval tv{0, 200000};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      sockaddr_in local{};
      local.sin_family = AF_INET;
      local.sin_addr.s_addr = htonl(0x7f000002 + static_cast<uint32_t>(i % 250));
      local.sin_port = htons(static_cast<uint16_t>(base + (i / 250) % 2500));
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
          ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        continue;
      }
      ::send(fd, kSlowStart.data(), kSlowStart.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      {
        std::lock_guard lock(mu_);
        ++opened_;
      }
      cv_.notify_all();
      held.push_back(fd);
      // Held until the server closes them (the attacker's aim), up to 7500 (3.75 s' worth).
      if (held.size() > 7500) {
        ::close(held.front());
        held.pop_front();
      }
    }
    for (int fd : held) ::close(fd);
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> opened_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

// Attack 5b: new connections from rotating 127.x addresses at 2000 a second (the attack seen
// ran ~850 a second), each holding an incomplete header: the server stays full, and real
// reports and GETs still get their reply, within Sedna's 3 tries 2 s apart. Before: a 1 s
// eviction grace let the full server accept only 256 connections a second, so real clients
// queued in the listen backlog behind thousands of the flood's.
TEST_F(HttpServerTest, AFloodFromRotatingAddressesDoesNotLockReportsOut) {
  RaiseFdLimit(10000);
  std::atomic<int> evicted{0};
  HttpServerOptions options;
  options.on_dropped = [&](DropReason reason, const std::string&) {
    if (reason == DropReason::kEvicted) ++evicted;
  };
  StartServer(options);
  Flood flood(port_, 2000);
  // Await a full server (bounded). The flood holds every slot from here on.
  for (int i = 0; i < 1000 && Stats().connections < options.max_connections - 1; ++i) {
    flood.AwaitOpened(flood.opened() + 10, 100ms);  // each connection of the flood may fill it
  }
  ASSERT_GE(Stats().connections, options.max_connections - 1);
  const int evicted_before = evicted.load();
  const std::string report = Post("/sedna/workers/w/info", std::string(1000, ' ') + "{}");
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  int tries[6] = {};
  std::chrono::milliseconds slowest{0};
  for (int i = 0; i < 6; ++i) {
    // Each request after another 1000 of the flood's connections (half a second), bounded.
    flood.AwaitOpened(flood.opened() + 1000, 5s);
    const auto sent = std::chrono::steady_clock::now();
    tries[i] = ReportWithRetries(port_, i % 2 == 0 ? report : get, 3, 2s);
    slowest = std::max(slowest, std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - sent));
  }
  const int flood_opened = flood.opened();
  flood.Stop();
  const int evicted_during = evicted.load() - evicted_before;
  std::printf(
      "tries needed (0 = failed): report %d %d %d, GET %d %d %d, the slowest %lld ms; flood %d "
      "connections, %d evicted meanwhile\n",
      tries[0], tries[2], tries[4], tries[1], tries[3], tries[5],
      static_cast<long long>(slowest.count()), flood_opened, evicted_during);
  for (int i = 0; i < 6; ++i) EXPECT_NE(tries[i], 0) << "request " << i;
  EXPECT_GT(evicted_during, 0);  // the server was full and evicted the flood's connections
}

// Attack 6: 64 connections each send a 1,040,000-byte body's first 1,000,000 bytes and then
// nothing: the body budget (4 MiB here) keeps what the server buffers under it, the rest wait
// unread; each is answered 408 at its body deadline; a real report gets through meanwhile.
// Before: every body was buffered (about 64 MB) and held for as long as the client trickled.
TEST_F(HttpServerTest, SlowBodiesStayWithinTheBodyBudgetAndEndAtTheBodyDeadline) {
  RaiseFdLimit(4096);
  Reports reports;
  HttpServerOptions options;
  options.body_timeout = 2s;
  options.body_buffer_limit = 4 << 20;
  reports.Watch(options);
  StartServer(options);
  const long rss_before = RssKb();
  constexpr int kSlow = 64;
  constexpr size_t kLength = 1040000;
  const std::string head =
      "POST /slow HTTP/1.1\r\nContent-Length: " + std::to_string(kLength) + "\r\n\r\n";
  const std::string body(1000000, 'b');
  std::vector<std::unique_ptr<Client>> slow;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<Client>(port_));
    ASSERT_TRUE(slow.back()->Send(head));
    slow.back()->SendSome(body);  // what the socket buffers take, without blocking
  }
  // Await the budget being full (bounded).
  for (int i = 0; i < 200 && Stats().bodies_waiting == 0; ++i) slow.back()->WaitReadable(10ms);
  const HttpServer::Stats full = Stats();
  const long rss_full = RssKb();
  EXPECT_GT(full.bodies_waiting, 0u);
  EXPECT_LE(full.body_bytes, options.body_buffer_limit);

  const int t = ReportWithRetries(port_, Post("/sedna/workers/w/info", R"({"name": "w"})"), 1, 2s);
  EXPECT_EQ(t, 1) << "a real report waited behind the slow bodies";

  int timed_out = 0;
  for (auto& c : slow) {
    auto r = c->Read();  // within the 10 s receive timeout
    if (r && r->status == 408) ++timed_out;
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  const HttpServer::Stats after = Stats();
  EXPECT_EQ(timed_out, kSlow);
  EXPECT_GE(waited, 2s);
  EXPECT_LE(after.peak_body_bytes, options.body_buffer_limit);
  EXPECT_EQ(calls_, 1);
  std::printf(
      "budget %zu: %zu bytes charged and %zu bodies waiting when full, peak %zu; RSS %ld "
      "-> %ld kB; %d of %d slow bodies 408 after %lld ms\n",
      options.body_buffer_limit, full.body_bytes, full.bodies_waiting, after.peak_body_bytes,
      rss_before, rss_full, timed_out, kSlow,
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
}

// A body the budget cannot take yet waits unread, without a 100 Continue, and goes on when
// room frees.
TEST_F(HttpServerTest, ABodyOverTheBudgetWaitsForRoomThenCompletes) {
  HttpServerOptions options;
  options.body_limit = 64 << 10;
  options.body_buffer_limit = 64 << 10;
  StartServer(options);
  const std::string head =
      "POST /b HTTP/1.1\r\nContent-Length: 40000\r\nExpect: 100-continue\r\n\r\n";
  const std::string body(40000, 'x');
  Client a(port_);
  ASSERT_TRUE(a.Send(head));
  auto ca = a.Read();
  ASSERT_TRUE(ca);
  ASSERT_EQ(ca->status, 100);
  Client b(port_);
  ASSERT_TRUE(b.Send(head));
  for (int i = 0; i < 200 && Stats().bodies_waiting == 0; ++i) b.WaitReadable(10ms);
  EXPECT_EQ(Stats().bodies_waiting, 1u);
  EXPECT_EQ(Stats().body_bytes, 40000u);
  EXPECT_TRUE(b.Quiet());  // no 100 Continue yet
  ASSERT_TRUE(a.Send(body));
  auto ra = a.Read();
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->status, 200);
  auto cb = b.Read();
  ASSERT_TRUE(cb);
  ASSERT_EQ(cb->status, 100);
  ASSERT_TRUE(b.Send(body));
  auto rb = b.Read();
  ASSERT_TRUE(rb);
  EXPECT_EQ(rb->status, 200);
  EXPECT_EQ(rb->body.size(), 8 + 40000u);  // "POST /b " and the body
  EXPECT_EQ(Stats().body_bytes, 0u);
  EXPECT_EQ(Stats().peak_body_bytes, 40000u);
}

// The body deadline counts the whole body, however steadily its bytes arrive.
TEST_F(HttpServerTest, BodyThatTricklesPastTheDeadlineGets408) {
  Reports reports;
  HttpServerOptions options;
  options.body_timeout = 1s;
  reports.Watch(options);
  StartServer(options);
  Client c(port_);
  ASSERT_TRUE(c.Send("POST /slow HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(AwaitReadable(c, 5s, 100ms, [&] { c.Send("a"); }));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status_line, "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(reports.Rejected(), (std::vector<std::pair<int, std::string>>{{408, "/slow"}}));
}

}  // namespace
}  // namespace sedna::http
