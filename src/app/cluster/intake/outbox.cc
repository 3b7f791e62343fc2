// The outbox pump, its acknowledgements and its bound (outbox.h).
#include "app/cluster/intake/outbox.h"

#include "adapters/log/log.h"

#include <boost/asio/post.hpp>

#include <cstddef>

namespace sedna::app {

namespace {

constexpr size_t kOutboxBatch = 64;
// A send batch stops before the frame that would take it over this (a larger frame goes alone).
constexpr size_t kSendBatchBytes = 256u << 10;
// Written frames are already recorded as sent (Store::OutboxAck); deleting their rows is
// housekeeping, done by a later transaction or after this delay.
constexpr auto kAckFlushDelay = std::chrono::milliseconds(50);

}  // namespace

Status Outbox::Append(store::Store::Tx& tx, const std::string& frame) {
  auto id = tx.OutboxAppend(frame);
  return id.ok() ? Status::Ok() : id.status();
}

Result<int64_t> Outbox::AppendId(store::Store::Tx& tx, const std::string& frame,
                                 std::optional<bool> informational) {
  return tx.OutboxAppend(frame, informational);
}

void Outbox::WhenWritten(int64_t id, std::function<void()> f) {
  if (ctx_.store->OutboxAckedThrough() >= id) {
    boost::asio::post(ctx_.io, std::move(f));
    return;
  }
  written_watchers_.emplace(id, std::move(f));
}

bool Outbox::Full() {
  auto st = ctx_.store->GetOutboxStats();
  const int64_t bytes = st.ok() ? st->bytes - st->informational_bytes : 0;
  const bool full = st.ok() && bytes > ctx_.cfg.outbox_max_bytes;
  if (full != full_) {
    full_ = full;
    if (full) {
      spdlog::warn(
          "outbox full ({} bytes > --outbox-max-bytes {}, informational frames not counted): "
          "sample ingestion paused, worker reports answered 503 until the GM link drains it",
          bytes, ctx_.cfg.outbox_max_bytes);
    } else {
      spdlog::info("outbox below its limit again: ingestion resumed");
      if (on_below_limit_) on_below_limit_();
    }
  }
  return full;
}

bool Outbox::InformationalFull() {
  const bool full = Full();
  auto st = ctx_.store->GetOutboxStats();
  const int64_t share = ctx_.cfg.outbox_max_bytes / kInformationalShareDivisor;
  const bool over = st.ok() && st->informational_bytes > share;
  if (over != informational_full_) {
    informational_full_ = over;
    if (over) {
      spdlog::warn(
          "outbox full for informational frames ({} bytes in {} > {}, a quarter of "
          "--outbox-max-bytes): inference results and other informational worker reports "
          "answered 503 until the GM link drains them; train and eval completions are still "
          "accepted",
          st->informational_bytes, st->informational_count, share);
    } else {
      spdlog::info("outbox: informational frames below their share again");
    }
  }
  return full || over;
}

void Outbox::PostPump() {
  if (pump_posted_) return;
  pump_posted_ = true;
  boost::asio::post(ctx_.io, [this] {
    pump_posted_ = false;
    Pump();
  });
}

void Outbox::Pump() {
  if (ctx_.stopped || !sink_ || !sink_->connected() || inflight_) return;
  if (queue_.empty()) {
    auto peek = ctx_.store->OutboxTake(kOutboxBatch, queued_through_);
    if (!peek.ok()) {
      spdlog::error("outbox: {}", peek.message());
      return;
    }
    if (peek->empty()) return;
    queued_through_ = peek->back().id;
    for (auto& e : *peek) queue_.push_back(std::move(e));
  }
  // The batch: the frames read ahead, in id order, up to kSendBatchBytes (at least one).
  batch_.clear();
  size_t bytes = 0;
  for (const store::OutboxEntry& e : queue_) {
    if (!batch_.empty() && bytes + e.frame.size() > kSendBatchBytes) break;
    batch_.emplace_back(e.frame);
    bytes += e.frame.size();
  }
  inflight_ = true;
  const size_t n = batch_.size();
  if (!sink_->Send(batch_, [this, n](size_t written) { OnWritten(n, written); })) {
    inflight_ = false;
    Requeue();
  }
}

void Outbox::OnWritten(size_t sent, size_t written) {
  inflight_ = false;
  int64_t last = 0;
  for (size_t i = 0; i < written && !queue_.empty(); ++i) {
    const store::OutboxEntry& e = queue_.front();
    last = e.id;
    ctx_.store->OutboxAck(e.id, static_cast<int64_t>(e.frame.size()));
    queue_.pop_front();
    ctx_.metrics.frames_sent++;
  }
  while (!written_watchers_.empty() && written_watchers_.begin()->first <= last) {
    boost::asio::post(ctx_.io, std::move(written_watchers_.begin()->second));
    written_watchers_.erase(written_watchers_.begin());
  }
  if (written > 0) ScheduleAckFlush();
  if (written < sent) {
    Requeue();
    return;  // the link calls Pump again when it reconnects
  }
  Pump();
}

void Outbox::Requeue() {
  queue_.clear();
  queued_through_ = ctx_.store->OutboxAckedThrough();
}

void Outbox::ScheduleAckFlush() {
  if (full_) Full();  // sent frames no longer count: ingestion may resume now
  if (informational_full_) InformationalFull();
  if (!ack_flush_timer_) ack_flush_timer_ = std::make_unique<boost::asio::steady_timer>(ctx_.io);
  if (ack_flush_armed_) return;
  ack_flush_armed_ = true;
  ack_flush_timer_->expires_after(kAckFlushDelay);
  ack_flush_timer_->async_wait([this](const boost::system::error_code& ec) {
    ack_flush_armed_ = false;
    if (!ec && !ctx_.stopped) FlushAcks();
  });
}

void Outbox::FlushAcks() {
  if (Status s = ctx_.store->OutboxFlushAcks(); !s.ok()) spdlog::error("outbox: {}", s.message());
  if (full_) Full();
}

void Outbox::Stop() {
  written_watchers_.clear();
  if (ack_flush_timer_) ack_flush_timer_->cancel();
  if (ctx_.store) FlushAcks();
}

}  // namespace sedna::app
