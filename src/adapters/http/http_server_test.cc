#include "adapters/http/http_server.h"

#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <optional>
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

// A blocking raw-socket HTTP client; every receive gives up after 10 s so a broken server fails
// the test instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      connect_errno_ = errno;
  }
  ~Client() { Close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  int connect_errno() const { return connect_errno_; }
  bool connected() const { return connect_errno_ == 0; }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
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

// Records what the server reports through on_rejected (called on the io thread).
struct Reports {
  void Watch(HttpServerOptions& options) {
    options.on_rejected = [this](int status, const std::string& target) {
      std::lock_guard lock(mu);
      rejected.emplace_back(status, target);
    };
  }
  std::vector<std::pair<int, std::string>> Rejected() {
    std::lock_guard lock(mu);
    return rejected;
  }

  std::mutex mu;
  std::vector<std::pair<int, std::string>> rejected;
};

// Issue 15 item 10: only `chunked` frames a body; anything else is refused, never guessed at.
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

}  // namespace
}  // namespace sedna::http
