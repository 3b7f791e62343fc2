#include "ws_test_server.h"

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <algorithm>
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <string_view>
#include <thread>
#include <type_traits>

#include "adapters/gm/ws_wire.h"

namespace sedna::testing {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

using gm::kOpBinary;
using gm::kOpClose;
using gm::kOpContinuation;
using gm::kOpPing;
using gm::kOpPong;
using gm::kOpText;

// An unmasked (server-to-client) frame with FIN set.
std::string MakeFrame(uint8_t opcode, const std::string& payload) {
  return gm::EncodeFrame(opcode, payload);
}

}  // namespace

struct WsTestServer::Impl {
  struct Session;

  explicit Impl(WsTestServer* o) : owner(o) {}

  // Runs fn on the server thread and waits for it; a default result once stopped.
  template <class F>
  auto OnServer(F fn) -> decltype(fn()) {
    using R = decltype(fn());
    if (std::this_thread::get_id() == thread.get_id()) return fn();
    {
      std::lock_guard<std::mutex> lock(stop_mu);
      if (stopped || !thread.joinable()) {
        if constexpr (std::is_void_v<R>) {
          return;
        } else {
          return R{};
        }
      }
    }
    std::packaged_task<R()> task(std::move(fn));
    auto result = task.get_future();
    asio::post(io, [&task] { task(); });
    return result.get();
  }

  void Accept();
  void Adopt(const std::shared_ptr<Session>& s, const http::request<http::string_body>& req);
  void Deliver(const std::string& frame, const std::string& node);
  void Forget(Session* s);
  std::shared_ptr<Session> OfNode(const std::string& node);
  void PublishNodes();

  // Declared first: destroyed last, after everything that holds a socket.
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  WsTestServer* owner;
  uint16_t port = 0;
  bool stopped = false;  // guarded by stop_mu
  std::mutex stop_mu;

  // Server thread only.
  std::shared_ptr<Session> current;
  std::vector<std::weak_ptr<Session>> sessions;
  bool unresponsive = false;
  bool multi_node = false;
  std::vector<std::shared_ptr<Session>> by_node;  // multi-node mode: the open connections

  // Shared with callers.
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<Frame> frames;
  std::vector<std::string> open_nodes;  // sorted
  int connections = 0;
  int connections_seen = 0;
  int pings = 0;
  std::string node_name;
  std::string target;
  std::vector<std::string> headers;
};

struct WsTestServer::Impl::Session : std::enable_shared_from_this<Session> {
  Session(Impl* server, tcp::socket socket) : srv(server), sock(std::move(socket)) {}

  void Handshake() {
    http::async_read(sock, hbuf, req, [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec || !self->open) return self->Close();
      self->OnRequest();
    });
  }

  void OnRequest() {
    const auto key = req[http::field::sec_websocket_key];
    if (req.method() != http::verb::get || !beast::websocket::is_upgrade(req) || key.empty()) {
      Queue("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      close_after_write = true;
      return;
    }
    beast::websocket::detail::sec_ws_accept_type accept;
    beast::websocket::detail::make_sec_ws_accept(accept, key);
    Queue(std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n") +
          "Connection: Upgrade\r\nSec-WebSocket-Accept: " + std::string(accept) + "\r\n\r\n");
    // Bytes the HTTP parser read past the request belong to the first frames.
    in = beast::buffers_to_string(hbuf.data());
    hbuf.consume(hbuf.size());
    upgraded = true;
    srv->Adopt(shared_from_this(), req);
    req = {};
    if (!srv->unresponsive) Parse();
    Read();
  }

  void Read() {
    if (!open || reading || srv->unresponsive) return;
    reading = true;
    sock.async_read_some(asio::buffer(chunk),
                         [self = shared_from_this()](error_code ec, std::size_t n) {
                           self->reading = false;
                           if (ec || !self->open) return self->Close();
                           self->in.append(self->chunk.data(), n);
                           if (self->srv->unresponsive) return;  // keep the bytes, answer nothing
                           self->Parse();
                           self->Read();
                         });
  }

  void Resume() {
    if (!open || !upgraded) return;
    Parse();
    Read();
  }

  // Consumes every complete frame in `in`.
  void Parse() {
    while (open) {
      const std::size_t avail = in.size() - pos;
      if (avail < 2) break;
      const auto head = gm::ParseFrameHead(std::string_view(in).substr(pos));
      if (!head) break;
      if (!head->masked) return Close();  // RFC 6455 §5.1: client frames are masked
      if (avail - head->size < head->length) break;
      std::string payload(in.data() + pos + head->size, head->length);
      gm::Unmask(*head, payload);
      pos += head->size + head->length;
      OnFrame(head->fin, head->opcode, std::move(payload));
    }
    if (pos == in.size()) {
      in.clear();
      pos = 0;
    } else if (pos > (1u << 20) && pos > in.size() / 2) {
      in.erase(0, pos);
      pos = 0;
    }
  }

  void OnFrame(bool fin, uint8_t opcode, std::string payload) {
    switch (opcode) {
      case kOpText:
      case kOpBinary:
        if (in_message) return Close();
        if (fin) return srv->Deliver(payload, node);
        message = std::move(payload);
        in_message = true;
        return;
      case kOpContinuation:
        if (!in_message) return Close();
        message += payload;
        if (fin) {
          in_message = false;
          srv->Deliver(message, node);
          message.clear();
        }
        return;
      case kOpPing: {
        {
          std::lock_guard<std::mutex> lock(srv->mu);
          ++srv->pings;
        }
        srv->cv.notify_all();
        Queue(MakeFrame(kOpPong, payload));
        return;
      }
      case kOpPong:
        return;
      case kOpClose:
        Queue(MakeFrame(kOpClose, payload.substr(0, 2)));
        close_after_write = true;
        return;
      default:
        return Close();
    }
  }

  void Queue(std::string bytes) {
    if (!open) return;
    out.push_back(std::move(bytes));
    if (!writing) Write();
  }

  void Write() {
    writing = true;
    asio::async_write(sock, asio::buffer(out.front()),
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        self->writing = false;
                        if (ec || !self->open) return self->Close();
                        self->out.pop_front();
                        if (!self->out.empty()) return self->Write();
                        if (self->close_after_write) self->Close();
                      });
  }

  void Close() {
    if (!open) return;
    auto keep = shared_from_this();
    open = false;
    error_code ignored;
    sock.close(ignored);
    out.clear();
    srv->Forget(this);
  }

  Impl* srv;
  tcp::socket sock;
  beast::flat_buffer hbuf;
  http::request<http::string_body> req;
  std::array<char, 64 * 1024> chunk;
  std::string in;  // received, unparsed from `pos` on
  std::size_t pos = 0;
  std::string message;  // a fragmented message being reassembled
  bool in_message = false;
  std::deque<std::string> out;
  bool open = true;
  bool upgraded = false;
  bool reading = false;
  bool writing = false;
  bool close_after_write = false;
  std::string node;  // the Node-Name header of its upgrade request
};

void WsTestServer::Impl::Accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      auto s = std::make_shared<Session>(this, std::move(socket));
      sessions.push_back(s);
      s->Handshake();
    }
    Accept();
  });
}

void WsTestServer::Impl::Adopt(const std::shared_ptr<Session>& s,
                               const http::request<http::string_body>& req) {
  s->node = std::string(req["Node-Name"]);
  if (multi_node) {
    if (auto same = OfNode(s->node)) same->Close();
  } else if (current) {
    current->Close();
  }
  current = s;
  if (multi_node) by_node.push_back(s);
  std::erase_if(sessions, [](const std::weak_ptr<Session>& w) { return w.expired(); });
  std::vector<std::string> lines;
  for (const auto& field : req) {
    lines.push_back(std::string(field.name_string()) + ": " + std::string(field.value()));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    ++connections;
    node_name = std::string(req["Node-Name"]);
    target = std::string(req.target());
    headers = std::move(lines);
  }
  PublishNodes();  // after the count: a WaitForNode that returns sees this connection counted
}

void WsTestServer::Impl::Deliver(const std::string& frame, const std::string& node) {
  const auto received = std::chrono::steady_clock::now();
  if (owner->on_frame) owner->on_frame(frame);
  {
    std::lock_guard<std::mutex> lock(mu);
    frames.push_back(Frame{frame, node, received});
  }
  cv.notify_all();
}

void WsTestServer::Impl::Forget(Session* s) {
  if (current.get() == s) current.reset();
  std::erase_if(by_node, [s](const std::shared_ptr<Session>& p) { return p.get() == s; });
  PublishNodes();
}

std::shared_ptr<WsTestServer::Impl::Session> WsTestServer::Impl::OfNode(const std::string& node) {
  if (!multi_node) return current && current->node == node ? current : nullptr;
  for (auto it = by_node.rbegin(); it != by_node.rend(); ++it) {
    if ((*it)->node == node) return *it;
  }
  return nullptr;
}

void WsTestServer::Impl::PublishNodes() {
  std::vector<std::string> nodes;
  if (multi_node) {
    for (const auto& p : by_node) nodes.push_back(p->node);
  } else if (current) {
    nodes.push_back(current->node);
  }
  std::sort(nodes.begin(), nodes.end());
  {
    std::lock_guard<std::mutex> lock(mu);
    open_nodes = std::move(nodes);
  }
  cv.notify_all();
}

WsTestServer::WsTestServer() : impl_(std::make_unique<Impl>(this)) {}

WsTestServer::~WsTestServer() { Stop(); }

std::unique_ptr<WsTestServer> WsTestServer::Start(uint16_t port) {
  std::unique_ptr<WsTestServer> server(new WsTestServer());
  Impl& impl = *server->impl_;
  error_code ec;
  const tcp::endpoint endpoint(asio::ip::address_v4::loopback(), port);
  impl.acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl.acceptor.bind(endpoint, ec);
  if (!ec) impl.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "WsTestServer: cannot listen on 127.0.0.1:%u: %s\n", port,
                 ec.message().c_str());
    return nullptr;
  }
  impl.port = impl.acceptor.local_endpoint(ec).port();
  impl.Accept();
  impl.thread = std::thread([&impl] {
    for (;;) {
      try {
        impl.io.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "WsTestServer: handler threw: %s\n", e.what());
      }
    }
  });
  return server;
}

void WsTestServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  Impl& impl = *impl_;
  if (!impl.thread.joinable()) return;
  asio::post(impl.io, [&impl] {
    error_code ignored;
    impl.acceptor.close(ignored);
    for (auto& w : impl.sessions) {
      if (auto s = w.lock()) s->Close();
    }
    impl.sessions.clear();
    impl.by_node.clear();
    impl.current.reset();
    impl.io.stop();
  });
  impl.thread.join();
}

uint16_t WsTestServer::port() const { return impl_->port; }

std::string WsTestServer::address() const { return "127.0.0.1:" + std::to_string(impl_->port); }

bool WsTestServer::WaitForConnection(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (!impl_->cv.wait_for(lock, timeout,
                          [&] { return impl_->connections > impl_->connections_seen; })) {
    return false;
  }
  impl_->connections_seen = impl_->connections;
  return true;
}

std::string WsTestServer::last_node_name() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->node_name;
}

std::string WsTestServer::last_request_target() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->target;
}

std::vector<std::string> WsTestServer::last_request_headers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->headers;
}

std::optional<std::string> WsTestServer::WaitForFrame(std::chrono::milliseconds timeout) {
  auto f = WaitForNodeFrame(timeout);
  if (!f) return std::nullopt;
  return std::move(f->text);
}

std::optional<WsTestServer::Frame> WsTestServer::WaitForNodeFrame(
    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (!impl_->cv.wait_for(lock, timeout, [&] { return !impl_->frames.empty(); })) {
    return std::nullopt;
  }
  Frame frame = std::move(impl_->frames.front());
  impl_->frames.pop_front();
  return frame;
}

void WsTestServer::SetMultiNode(bool multi_node) {
  Impl& impl = *impl_;
  impl.OnServer([&impl, multi_node] {
    impl.multi_node = multi_node;
    impl.by_node.clear();
    if (multi_node && impl.current) impl.by_node.push_back(impl.current);
    impl.PublishNodes();
  });
}

bool WsTestServer::SendTo(const std::string& node, const std::string& text) {
  Impl& impl = *impl_;
  return impl.OnServer([&impl, &node, &text] {
    auto s = impl.OfNode(node);
    if (!s) return false;
    s->Queue(MakeFrame(kOpText, text));
    return true;
  });
}

bool WsTestServer::WaitForNode(const std::string& node, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] {
    return std::find(impl_->open_nodes.begin(), impl_->open_nodes.end(), node) !=
           impl_->open_nodes.end();
  });
}

bool WsTestServer::WaitForNodeGone(const std::string& node, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] {
    return std::find(impl_->open_nodes.begin(), impl_->open_nodes.end(), node) ==
           impl_->open_nodes.end();
  });
}

void WsTestServer::DropNode(const std::string& node) {
  Impl& impl = *impl_;
  impl.OnServer([&impl, &node] {
    if (auto s = impl.OfNode(node)) s->Close();
  });
}

std::vector<std::string> WsTestServer::connected_nodes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->open_nodes;
}

bool WsTestServer::Send(const std::string& text) {
  Impl& impl = *impl_;
  return impl.OnServer([&impl, &text] {
    if (!impl.current) return false;
    impl.current->Queue(MakeFrame(kOpText, text));
    return true;
  });
}

void WsTestServer::DropConnection() {
  Impl& impl = *impl_;
  impl.OnServer([&impl] {
    if (impl.current) impl.current->Close();
  });
}

void WsTestServer::CloseConnection(uint16_t code, const std::string& reason) {
  Impl& impl = *impl_;
  impl.OnServer([&impl, code, &reason] {
    if (!impl.current) return;
    std::string payload{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
    impl.current->Queue(MakeFrame(kOpClose, payload + reason));
    impl.current->close_after_write = true;
  });
}

void WsTestServer::SetUnresponsive(bool unresponsive) {
  Impl& impl = *impl_;
  impl.OnServer([&impl, unresponsive] {
    impl.unresponsive = unresponsive;
    if (unresponsive) return;
    for (auto& w : impl.sessions) {
      if (auto s = w.lock()) s->Resume();
    }
  });
}

bool WsTestServer::WaitForPings(int count, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] { return impl_->pings >= count; });
}

int WsTestServer::connection_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->connections;
}

}  // namespace sedna::testing
