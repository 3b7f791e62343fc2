// Controller::Impl, the outbox: frames committed with each step are sent upstream (GM link or
// local manager) in id order, one in flight, and deleted once written; its size bound pauses
// ingestion and worker reports (docs/durability.md).
#include "app/controller_impl.h"

#include <spdlog/spdlog.h>

#include <cstddef>

namespace sedna::app {

namespace {

constexpr size_t kOutboxBatch = 64;

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
  outbox_inflight = true;
  bool sent = sink->Send(std::move(outbox_queue.front().frame), [this, id](bool written) {
    outbox_inflight = false;
    if (!written) {
      RequeueOutbox();
      return;  // the link calls PumpOutbox again when it reconnects
    }
    outbox_queue.pop_front();
    store->OutboxAck(id);
    metrics.frames_sent++;
    FlushAcks();
    PumpOutbox();
  });
  if (!sent) {
    outbox_inflight = false;
    RequeueOutbox();
  }
}

void Controller::Impl::RequeueOutbox() {
  outbox_queue.clear();
  outbox_queued_through = store->OutboxAckedThrough();
}

void Controller::Impl::FlushAcks() {
  if (Status s = store->OutboxFlushAcks(); !s.ok()) spdlog::error("outbox: {}", s.message());
  if (outbox_full) OutboxFull();
}

}  // namespace sedna::app
