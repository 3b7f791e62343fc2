// One client connection of http::HttpServer (not for its users): it reads requests
// (request_reader.h) under the server's deadlines, hands each complete one to the handler, writes
// the reply (response_head.h), keeps alive or drains and closes, as "Behaviour on the wire" in
// http_server.h says. Owned by its pending completion handlers; registered with the Core while
// open so that Stop() can close it, and with the Core's Admission, which may evict it and grants
// its body reads (admission.h). All on the io_context's thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "adapters/http/request_reader.h"
#include "adapters/http/server_core.h"

namespace sedna::http {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<HttpServer::Core> core, Socket socket, tcp::endpoint peer)
      : core_(std::move(core)),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        idle_(core_->options.idle_timeout),
        peer_(std::move(peer)) {}

  ~Connection();

  // Registers with the Core, starts the first request's header deadline (from accept) and tries
  // the first read at once, so that a request sent with the connect is complete before this
  // connection could be evicted.
  void Start();

  // Hard close: pending operations complete with operation_aborted and do nothing more.
  void Close() noexcept;

  // The body budget granted this connection's queued body (Core::ResumeGranted()): it reads on.
  void OnBodyGranted() noexcept;

  const tcp::endpoint& peer() const { return peer_; }

 private:
  // Runs `f` as the body of a completion handler: nothing may escape into io_context::run().
  template <class F>
  void Guard(F&& f);

  // Admission states (admission.h). Wait and Drain make the connection evictable, so the Core
  // re-checks for room.
  void AdmitWaiting() noexcept;
  void AdmitBusy() noexcept;
  void AdmitDraining() noexcept;

  void Leave() noexcept;

  // The header is complete and the body is not: starts the body deadline and asks the body
  // budget for the body's length (chunked: body_limit). Without a grant, reading pauses until
  // Core::ResumeGranted() calls OnBodyGranted(); the deadline runs meanwhile.
  void StartBody();

  void ReserveBody();

  void NextRequest();

  // Starts the header deadline of a later request (its first byte has arrived).
  void StartHeaderClock();

  void ParseBuffered();

  // ParseBuffered() from a fresh handler, as after an asynchronous write.
  void PostParse();

  void Read();

  void OnRead(const error_code& ec, size_t n);

  void ParseError(RequestReader::Error error);

  // Answers a request the handler never sees with `status` (text/plain `body`), then closes.
  void Reject(int status, std::string body);

  // Answers the parsed request. True when the reply is already written and the next request
  // has begun (see Reply()).
  bool HandleRequest();

  // Sends the reply. True when it was written at once and the next request has begun: the
  // caller continues with ParseBuffered(). Otherwise the write completes later (then parsing
  // resumes from its handler) or the connection is closing.
  bool Reply(HttpResponse response, bool keep_alive);

  // The reply is written (or failed). True when the connection goes on with the next request,
  // already begun, and the caller is to call ParseBuffered().
  bool AfterWrite(const error_code& ec);

  void WriteContinue();

  // Half-closes and discards input until the client closes or kDrainTime passes, so that unread
  // request bytes do not turn the close into a reset that would destroy the final reply.
  void Drain();

  // The earliest of the idle, header, body and drain deadlines that apply, or kNever.
  Clock::time_point Deadline() const;

  // One wait is pending at a time (at timer_expiry_); it re-arms itself until the deadline has
  // really passed. It never waits longer than header_timeout, so that a header deadline
  // starting later (StartHeaderClock()) is never earlier than the pending wait: no re-arm per
  // request.
  void ArmTimer();

  std::shared_ptr<HttpServer::Core> core_;
  Socket socket_;
  Timer timer_;
  const std::chrono::seconds idle_;
  const tcp::endpoint peer_;
  Admission::Id id_ = 0;
  RequestReader reader_;  // the input buffer and the request parser
  HttpRequest request_;
  std::vector<RequestReader::HeaderNode> spare_headers_;
  HttpResponse response_;
  std::string head_;
  Clock::time_point last_activity_;
  Clock::time_point drain_deadline_;
  Clock::time_point header_deadline_ = kNever;
  Clock::time_point body_deadline_ = kNever;
  size_t body_asked_ = 0;  // the body's length (chunked: body_limit), as asked of the budget
  Clock::time_point timer_expiry_ = kNever;  // of the pending timer wait, kNever if none
  bool registered_ = false;
  bool closed_ = false;
  bool non_blocking_ = false;  // the socket is in non-blocking mode (see Reply())
  bool reading_ = false;       // an async_read_some is pending
  bool header_started_ = false;
  bool body_started_ = false;  // the header is complete: the body (if any) is being read
  bool body_known_ = false;    // body_asked_ is the Content-Length
  bool body_waiting_ = false;  // for the body budget's grant: nothing is read meanwhile
  bool draining_ = false;
  bool continue_sent_ = false;
  bool close_after_write_ = false;
};

}  // namespace sedna::http
