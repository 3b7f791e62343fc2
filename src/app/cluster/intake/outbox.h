// The outbox: upstream frames (to the GM link or, in standalone mode, the local manager) that were
// committed to the store together with the state that produced them, sent in id order.
//
// Owns: the upstream sink it sends to, the frames read ahead from SQLite, the one batch in flight,
//   the acknowledgement flush timer, and whether the outbox is over its bound.
// Calls: the store (peek, acknowledge, flush acknowledgements, stats) and the sink.
// Called by: every part that commits frames (it appends them with Append, inside its own
//   transaction, then calls PostPump or Pump); the GM link's connect/disconnect callbacks; the
//   worker endpoint and the dataset registry (Full, before they take more in).
// Emits: on_below_limit, once the outbox drains below --outbox-max-bytes after being over it
//   (the composition root resumes dataset reads).
//
// Contract (docs/durability.md): one batch in flight (the frames read ahead, up to 64 and 256 KiB,
// written in one send); the frames written are recorded as sent as soon as the write completes
// (Store::OutboxAck) and their rows deleted by a later transaction or kAckFlushDelay later, so
// the at-least-once window is that record (a crash in it repeats that batch); unsent frames are
// read again from the first unacknowledged one after a lost write.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/store/store.h"
#include "app/cluster/context.h"
#include "app/cluster/intake/upstream_sink.h"

namespace sedna::app {

class Outbox {
 public:
  explicit Outbox(Context& ctx) : ctx_(ctx) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Appends `frame` in the caller's transaction: it is sent only once that commits.
  static Status Append(store::Store::Tx& tx, const std::string& frame);
  // As Append; returns the frame's outbox id.
  static Result<int64_t> AppendId(store::Store::Tx& tx, const std::string& frame,
                                  std::optional<bool> informational = std::nullopt);
  // Runs `f` on the loop once the frame with outbox id `id` (committed) has been written to the
  // sink (at once if it already was). Pending callbacks are dropped on Stop.
  void WhenWritten(int64_t id, std::function<void()> f);

  void SetSink(UpstreamSink* sink) { sink_ = sink; }
  bool has_sink() const { return sink_ != nullptr; }
  bool connected() const { return sink_ && sink_->connected(); }
  void set_on_below_limit(std::function<void()> f) { on_below_limit_ = std::move(f); }

  // The outbox bound (docs/durability.md): above it, sources that can wait are paused. Counts the
  // frames that are not informational (json::IsInformationalFrame), so that informational frames
  // never pause ingestion or refuse a train/eval completion. Logs when the answer changes.
  bool Full();
  // The informational quota: informational frames over a quarter of --outbox-max-bytes (their
  // share, on top of the bound), or Full(). Informational worker reports are refused (503) while
  // this holds. Logs when the answer changes.
  bool InformationalFull();
  // The informational share of --outbox-max-bytes.
  static constexpr int64_t kInformationalShareDivisor = 4;
  // Sends the outbox in id order, one batch in flight.
  void Pump();
  // Pump after the current handler (a worker's HTTP reply goes out first); coalesced.
  void PostPump();
  // The link lost its connection: the frame in flight is not delivered.
  void OnDisconnected() { inflight_ = false; }
  // Deletes the rows of the frames already sent.
  void FlushAcks();
  // No more sends or timers; acknowledgements are flushed.
  void Stop();

 private:
  // The sink wrote the first `written` of the `sent` frames of the batch in flight.
  void OnWritten(size_t sent, size_t written);
  void Requeue();
  void ScheduleAckFlush();

  Context& ctx_;
  UpstreamSink* sink_ = nullptr;
  std::function<void()> on_below_limit_;
  bool inflight_ = false;
  bool pump_posted_ = false;
  bool full_ = false;
  bool informational_full_ = false;
  std::unique_ptr<boost::asio::steady_timer> ack_flush_timer_;
  bool ack_flush_armed_ = false;  // the timer is armed: acks wait deletion
  std::multimap<int64_t, std::function<void()>> written_watchers_;
  std::deque<store::OutboxEntry> queue_;  // read ahead from SQLite, not yet written
  std::vector<std::string_view> batch_;   // the front of queue_ handed to the sink
  int64_t queued_through_ = 0;
};

}  // namespace sedna::app
