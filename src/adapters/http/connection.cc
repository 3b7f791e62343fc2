// A connection of the HTTP server (connection.h): its state machine on the socket and timer.
#include "adapters/http/connection.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "adapters/http/response_head.h"

namespace sedna::http {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
constexpr std::chrono::milliseconds kDrainTime{500};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// Header map nodes a connection keeps between requests, and the largest name or value kept.
constexpr size_t kSpareHeaders = 32;
constexpr size_t kSpareHeaderBytes = 256;
// A body, read buffer or reply whose capacity grew past this is freed once its request is done,
// so that an idle connection holds little memory.
constexpr size_t kKeepBytes = 32 * 1024;

}  // namespace

template <class F>
void Connection::Guard(F&& f) {
  try {
    f();
  } catch (...) {
    Close();
  }
}

Connection::~Connection() {
  if (!closed_) Leave();
}

void Connection::Start() {
  id_ = core_->Register(this);
  registered_ = true;
  error_code ec;
  socket_.non_blocking(true, ec);  // for the first, synchronous send of each reply
  non_blocking_ = !ec;
  last_activity_ = Clock::now();
  head_.reserve(256);
  NextRequest();
  // The first request's header deadline counts from accept.
  header_started_ = true;
  if (core_->options.header_timeout.count() > 0) {
    header_deadline_ = last_activity_ + core_->options.header_timeout;
  }
  ArmTimer();
  // A client that sent its request at once (a worker's report) has it complete now, before
  // this connection could become anyone's eviction victim.
  if (non_blocking_) {
    const std::span<char> room = reader_.Prepare(kReadChunk);
    const size_t n = socket_.read_some(net::buffer(room.data(), room.size()), ec);
    if (ec != net::error::would_block && ec != net::error::try_again) {
      reading_ = true;
      return OnRead(ec, n);
    }
  }
  ParseBuffered();
}

void Connection::Close() noexcept {
  if (closed_) return;
  closed_ = true;
  error_code ec;
  socket_.close(ec);
  try {
    timer_.cancel();
  } catch (...) {
  }
  Leave();
}

void Connection::OnBodyGranted() noexcept {
  Guard([&] {
    if (closed_ || !body_waiting_) return;
    body_waiting_ = false;
    if (Clock::now() >= body_deadline_) {  // its timer has yet to run: no reading meanwhile
      body_deadline_ = kNever;
      return Reject(408, "408: Request Timeout");
    }
    ReserveBody();
    ParseBuffered();
  });
}

void Connection::AdmitWaiting() noexcept {
  core_->admission.Wait(id_, Clock::now());
  core_->ResumeGranted();
  core_->Accept();
}

void Connection::AdmitBusy() noexcept {
  body_waiting_ = false;
  core_->admission.Busy(id_);
  core_->ResumeGranted();
}

void Connection::AdmitDraining() noexcept {
  body_waiting_ = false;
  core_->admission.Drain(id_, Clock::now());
  core_->ResumeGranted();
  core_->Accept();
}

void Connection::Leave() noexcept {
  if (registered_) {
    registered_ = false;
    core_->Unregister(id_);
  }
}

void Connection::StartBody() {
  body_started_ = true;
  if (core_->options.body_timeout.count() > 0) {
    body_deadline_ = Clock::now() + core_->options.body_timeout;
    if (body_deadline_ < timer_expiry_) ArmTimer();
  }
  const std::optional<uint64_t> length = reader_.content_length();
  body_asked_ = length ? static_cast<size_t>(*length) : core_->options.body_limit;
  body_known_ = static_cast<bool>(length);
  const bool granted = core_->admission.AskBody(id_, body_asked_);
  body_waiting_ = !granted;
  if (granted) ReserveBody();
  core_->ResumeGranted();  // asking may have granted others (it releases this one's charge)
}

void Connection::ReserveBody() {
  if (body_known_) request_.body.reserve(body_asked_);  // within body_limit
}

void Connection::NextRequest() {
  request_.method.clear();
  request_.target.clear();
  // Keep the header nodes, unless large, for the next request (clients send the same fields
  // each time).
  while (!request_.headers.empty() && spare_headers_.size() < kSpareHeaders) {
    auto node = request_.headers.extract(request_.headers.begin());
    if (node.key().capacity() <= kSpareHeaderBytes &&
        node.mapped().capacity() <= kSpareHeaderBytes) {
      spare_headers_.push_back(std::move(node));
    }
  }
  request_.headers.clear();
  request_.body.clear();
  if (request_.body.capacity() > kKeepBytes) std::string().swap(request_.body);
  reader_.ShrinkIfEmpty(kKeepBytes);
  reader_.Begin(request_, spare_headers_, core_->options.body_limit);
  continue_sent_ = false;
  header_started_ = false;  // the deadline starts with the request's first byte
  header_deadline_ = kNever;
  body_started_ = false;
  body_waiting_ = false;
  body_deadline_ = kNever;
  AdmitWaiting();
}

void Connection::StartHeaderClock() {
  header_started_ = true;
  if (core_->options.header_timeout.count() == 0) return;
  header_deadline_ = Clock::now() + core_->options.header_timeout;
  if (header_deadline_ < timer_expiry_) ArmTimer();
}

void Connection::ParseBuffered() {
  for (;;) {
    if (reader_.buffered() > 0) {
      if (!header_started_) StartHeaderClock();
      const RequestReader::Parsed parsed = reader_.Parse();
      const bool more = parsed.error == RequestReader::Error::kNeedMore;
      if (parsed.error != RequestReader::Error::kNone && !more) return ParseError(parsed.error);
      if (!body_started_ && reader_.header_done()) {
        header_deadline_ = kNever;
        if (!reader_.done()) StartBody();
      }
      // After the header, only a chunk-size line or the trailer section stays unconsumed.
      if (more && reader_.header_done() && reader_.buffered() > kChunkLineLimit) {
        return Reject(431, "431: Request Header Fields Too Large");
      }
      if (!more && reader_.done()) {
        if (!HandleRequest()) return;  // the reply is still being written, or closing
        // The reply went out at once and the next request has begun.
        if (reader_.buffered() > 0) return PostParse();  // pipelined: after other handlers
        continue;
      }
      if (!more && parsed.used > 0 && reader_.buffered() > 0) continue;
    }
    if (body_waiting_) return;  // OnBodyGranted() reads on
    if (reader_.header_done() && reader_.expects_continue() && !continue_sent_ &&
        reader_.version() >= 11) {
      continue_sent_ = true;
      return WriteContinue();
    }
    return Read();
  }
}

void Connection::PostParse() {
  net::post(socket_.get_executor(), [self = shared_from_this()] {
    self->Guard([&] {
      if (!self->closed_ && !self->draining_) self->ParseBuffered();
    });
  });
}

void Connection::Read() {
  reading_ = true;
  const std::span<char> room = reader_.Prepare(kReadChunk);
  socket_.async_read_some(net::buffer(room.data(), room.size()),
                          [self = shared_from_this()](const error_code& ec, size_t n) {
                            self->Guard([&] { self->OnRead(ec, n); });
                          });
}

void Connection::OnRead(const error_code& ec, size_t n) {
  reading_ = false;
  if (closed_) return;
  last_activity_ = Clock::now();
  if (ec) return Close();  // EOF or error; a partial request gets no reply
  reader_.Commit(n);
  if (draining_) {
    reader_.DiscardBuffered();
    return Read();
  }
  ParseBuffered();
}

void Connection::ParseError(RequestReader::Error error) {
  switch (error) {
    case RequestReader::Error::kBodyLimit:
      return Reject(413, "413: Request Entity Too Large");
    case RequestReader::Error::kHeaderLimit:
      return Reject(431, "431: Request Header Fields Too Large");
    case RequestReader::Error::kUnsupportedCoding:
      return Reject(501, "501: Not Implemented");
    case RequestReader::Error::kNone:
    case RequestReader::Error::kNeedMore:
    case RequestReader::Error::kBad:
      break;
  }
  Reject(400, "400: Bad Request");
}

void Connection::Reject(int status, std::string body) {
  header_deadline_ = kNever;
  body_deadline_ = kNever;
  AdmitBusy();
  if (core_->options.on_rejected) {
    core_->options.on_rejected(status, request_.target);  // "" until the request line is read
  }
  Reply(TextResponse(status, std::move(body)), /*keep_alive=*/false);
}

bool Connection::HandleRequest() {
  if (core_->stopped) {
    Close();
    return false;
  }
  body_deadline_ = kNever;
  AdmitBusy();
  bool keep_alive = reader_.keep_alive();
  HttpResponse response = [&] {
    try {
      return core_->handler(request_);
    } catch (...) {
      return TextResponse(500, "500: Internal Server Error");
    }
  }();
  if (closed_) return false;  // the handler stopped the server
  return Reply(std::move(response), keep_alive);
}

bool Connection::Reply(HttpResponse response, bool keep_alive) {
  response_ = std::move(response);
  if (response_.status < 200 || response_.status > 999) {
    response_ = TextResponse(500, "500: Internal Server Error");
  }
  const bool head_only = request_.method == "HEAD";
  keep_alive = FormatResponseHead(response_, reader_.version(), keep_alive, head_);

  close_after_write_ = !keep_alive;
  std::array<net::const_buffer, 2> buffers{
      net::buffer(head_), head_only ? net::const_buffer() : net::buffer(response_.body)};
  // One non-blocking send first: a reply nearly always fits the socket buffer, and then no
  // write operation, completion handler or reactor round trip is needed.
  error_code write_ec;
  size_t sent = 0;
  if (non_blocking_) {
    sent = socket_.write_some(buffers, write_ec);
    if (write_ec == net::error::would_block || write_ec == net::error::try_again) {
      write_ec = {};
      sent = 0;
    }
    if (write_ec || sent == net::buffer_size(buffers)) return AfterWrite(write_ec);
  }
  if (sent < head_.size()) {
    buffers[0] += sent;
  } else {
    buffers[1] += sent - head_.size();
    buffers[0] = net::const_buffer();
  }
  net::async_write(socket_, buffers, [self = shared_from_this()](const error_code& ec, size_t) {
    self->Guard([&] {
      if (self->closed_) return;
      if (self->AfterWrite(ec)) self->ParseBuffered();
    });
  });
  return false;
}

bool Connection::AfterWrite(const error_code& ec) {
  last_activity_ = Clock::now();
  if (ec) {
    Close();
    return false;
  }
  if (response_.body.capacity() > kKeepBytes) std::string().swap(response_.body);
  if (close_after_write_) {
    Drain();
    return false;
  }
  NextRequest();
  return true;
}

void Connection::WriteContinue() {
  net::async_write(socket_, net::buffer(kContinue.data(), kContinue.size()),
                   [self = shared_from_this()](const error_code& ec, size_t) {
                     self->Guard([&] {
                       if (self->closed_) return;
                       self->last_activity_ = Clock::now();
                       if (ec) return self->Close();
                       self->Read();
                     });
                   });
}

void Connection::Drain() {
  AdmitDraining();
  error_code ignored;
  socket_.shutdown(Socket::shutdown_send, ignored);
  draining_ = true;
  drain_deadline_ = Clock::now() + kDrainTime;
  if (idle_.count() > 0) drain_deadline_ = std::min(drain_deadline_, last_activity_ + idle_);
  ArmTimer();
  // After a 408 a read is still pending; its completion drains (OnRead).
  if (reading_) return;
  reader_.DiscardBuffered();
  Read();
}

Clock::time_point Connection::Deadline() const {
  if (draining_) return drain_deadline_;
  Clock::time_point d = std::min(header_deadline_, body_deadline_);
  if (idle_.count() > 0) d = std::min(d, last_activity_ + idle_);
  return d;
}

void Connection::ArmTimer() {
  Clock::time_point deadline = Deadline();
  const std::chrono::seconds header_timeout = core_->options.header_timeout;
  if (!draining_ && header_timeout.count() > 0) {
    deadline = std::min(deadline, Clock::now() + header_timeout);
  }
  timer_expiry_ = deadline;
  if (deadline == kNever) return;
  timer_.expires_at(deadline);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    self->Guard([&] {
      if (ec || self->closed_) return;
      const Clock::time_point now = Clock::now();
      if (now < self->Deadline()) return self->ArmTimer();
      self->timer_expiry_ = kNever;
      if (!self->draining_ && now >= self->header_deadline_) {
        self->header_deadline_ = kNever;
        return self->Reject(408, "408: Request Timeout");
      }
      if (!self->draining_ && now >= self->body_deadline_) {
        self->body_deadline_ = kNever;
        return self->Reject(408, "408: Request Timeout");
      }
      self->Close();
    });
  });
}

}  // namespace sedna::http
