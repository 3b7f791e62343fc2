// Controller::Impl, the outbox: frames committed with each step are sent upstream (GM link or
// local manager) in id order, one in flight; each written frame is recorded in the store's sent
// mark at once, and its row deleted by a later transaction (64 at a time) or, at the latest,
// kAckFlushDelay later; its size bound pauses ingestion and worker reports (docs/durability.md).
#include "app/cluster/controller_impl.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include <cstddef>

namespace sedna::app {

namespace {

constexpr size_t kOutboxBatch = 64;
// Written frames are already recorded as sent (Store::OutboxAck); deleting their rows is
// housekeeping, done by a later transaction or after this delay.
constexpr auto kAckFlushDelay = std::chrono::milliseconds(50);

}  // namespace

bool Controller::Impl::OutboxFull() {
  auto st = store->GetOutboxStats();
  const bool full = st.ok() && st->bytes > cfg.outbox_max_bytes;
  if (full != outbox_full) {
    outbox_full = full;
    if (full) {
      spdlog::warn(
          "outbox full ({} bytes > --outbox-max-bytes {}): sample ingestion paused, "
          "worker reports answered 503 until the GM link drains it",
          st->bytes, cfg.outbox_max_bytes);
    } else {
      spdlog::info("outbox below its limit again: ingestion resumed");
      for (auto& [k, d] : datasets) PostRead(*d, false);
    }
  }
  return full;
}

void Controller::Impl::PostPump() {
  if (pump_posted) return;
  pump_posted = true;
  boost::asio::post(io, [this] {
    pump_posted = false;
    PumpOutbox();
  });
}

void Controller::Impl::PumpOutbox() {
  if (stopped || !sink || !sink->connected() || outbox_inflight) return;
  if (outbox_queue.empty()) {
    auto peek = store->OutboxPeek(kOutboxBatch, outbox_queued_through);
    if (!peek.ok()) {
      spdlog::error("outbox: {}", peek.message());
      return;
    }
    if (peek->empty()) return;
    outbox_queued_through = peek->back().id;
    for (auto& e : *peek) outbox_queue.push_back(std::move(e));
  }
  const int64_t id = outbox_queue.front().id;
  const int64_t bytes = static_cast<int64_t>(outbox_queue.front().frame.size());
  outbox_inflight = true;
  const bool more = outbox_queue.size() > 1;
  bool sent = sink->Send(
      std::move(outbox_queue.front().frame),
      [this, id, bytes](bool written) {
        outbox_inflight = false;
        if (!written) {
          RequeueOutbox();
          return;  // the link calls PumpOutbox again when it reconnects
        }
        outbox_queue.pop_front();
        store->OutboxAck(id, bytes);
        metrics.frames_sent++;
        ScheduleAckFlush();
        PumpOutbox();
      },
      more);
  if (!sent) {
    outbox_inflight = false;
    RequeueOutbox();
  }
}

void Controller::Impl::RequeueOutbox() {
  outbox_queue.clear();
  outbox_queued_through = store->OutboxAckedThrough();
}

void Controller::Impl::ScheduleAckFlush() {
  if (outbox_full) OutboxFull();  // sent frames no longer count: ingestion may resume now
  if (!ack_flush_timer) ack_flush_timer = std::make_unique<boost::asio::steady_timer>(io);
  if (ack_flush_timer->expiry() > std::chrono::steady_clock::now()) return;  // already armed
  ack_flush_timer->expires_after(kAckFlushDelay);
  ack_flush_timer->async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopped) FlushAcks();
  });
}

void Controller::Impl::FlushAcks() {
  if (Status s = store->OutboxFlushAcks(); !s.ok()) spdlog::error("outbox: {}", s.message());
  if (outbox_full) OutboxFull();
}

}  // namespace sedna::app
