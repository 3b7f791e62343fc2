// The HTTP server's admission policy (http::Admission: eviction at max_connections and the body
// budget), driven without sockets by a sequence of events from the input: connects, headers
// with a body length, body bytes, replies, drains, client closes and the passing of time, across
// several connections against small limits (from the input's first four bytes).
//
// Invariants, checked against a model after every event: open connections never exceed
// max_connections; a new connection is refused only when nothing is evictable; the victim is the
// connection closing longest, else the one waiting longest (and for at least eviction_grace),
// never one whose request is complete (busy); body bytes charged equal the model's and never
// exceed body_buffer_limit; small bodies are never charged nor queued; queued bodies are granted
// first come, first served, each exactly once; no queued body waits while nothing is charged
// (no deadlock: every queued body is eventually granted once the others finish); every request
// that completes is answered (busy until its reply, then waiting or draining).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "adapters/http/admission.h"
#include "fuzz_check.h"

namespace {

using sedna::http::Admission;
using State = Admission::State;

struct Model {
  State state = State::kWaiting;
  uint64_t seq = 0;  // order of entering the state
  Admission::Clock::time_point since;
  size_t length = 0;      // the body's length, once the header is complete
  size_t received = 0;    // body bytes received
  bool header = false;    // header complete
  bool may_read = false;  // granted (or small)
  size_t charged = 0;
  bool queued = false;
};

class Harness {
 public:
  explicit Harness(Admission::Limits limits) : adm_(limits), limits_(limits) {}

  void Connect() {
    const Admission::Room room = adm_.MakeRoom(now_);
    const uint64_t expected = ExpectedVictim();
    if (!Full()) {
      FUZZ_CHECK(room.admit && room.evict == 0, "room below max_connections");
    } else {
      FUZZ_CHECK(room.admit == (expected != 0), "refused only when nothing is evictable");
      FUZZ_CHECK(room.evict == expected, "the victim is the one closing or waiting longest");
    }
    if (!room.admit) return;
    if (room.evict != 0) {
      FUZZ_CHECK(model_.at(room.evict).state != State::kBusy, "a busy connection is evicted");
      Close(room.evict);
    }
    const Admission::Id id = adm_.Open(now_);
    FUZZ_CHECK(model_.count(id) == 0, "a fresh id");
    Model& m = model_[id];
    m.since = now_;
    m.seq = ++seq_;
    FUZZ_CHECK(limits_.max_connections == 0 || adm_.open() <= limits_.max_connections,
               "open connections within max_connections");
  }

  // The header of `id`'s request is complete, with a body of `length` bytes.
  void Header(Admission::Id id, size_t length) {
    Model& m = model_.at(id);
    if (m.state != State::kWaiting || m.header) return;
    m.header = true;
    m.length = length;
    m.received = 0;
    if (length == 0) return Complete(id);
    const bool now = adm_.AskBody(id, length);
    TakeGrants();
    if (length <= limits_.small_body) {
      FUZZ_CHECK(now, "a small body may always be read");
    } else if (now) {
      m.charged = length;
    } else {
      m.queued = true;
      queue_.push_back(id);
    }
    m.may_read = now;
  }

  void Body(Admission::Id id, size_t bytes) {
    Model& m = model_.at(id);
    if (m.state != State::kWaiting || !m.header || !m.may_read) return;
    m.received = std::min(m.length, m.received + bytes);
    if (m.received == m.length) Complete(id);
  }

  // The reply to a busy connection is written: keep-alive (wait) or close (drain).
  void Replied(Admission::Id id, bool keep_alive) {
    Model& m = model_.at(id);
    if (m.state != State::kBusy) return;
    if (keep_alive) {
      adm_.Wait(id, now_);
      Enter(m, State::kWaiting);
    } else {
      adm_.Drain(id, now_);
      Enter(m, State::kDraining);
    }
    TakeGrants();
  }

  // The server rejects `id` (a 408 at a deadline, or a 413/400): busy while the reply goes out.
  void Reject(Admission::Id id) {
    Model& m = model_.at(id);
    if (m.state != State::kWaiting) return;
    adm_.Busy(id);
    Unqueue(m, id);
    m.charged = 0;
    Enter(m, State::kBusy);
    TakeGrants();
  }

  void Close(Admission::Id id) {
    Model& m = model_.at(id);
    Unqueue(m, id);
    if (m.state == State::kBusy) ++answered_unfinished_;  // a client may close any time
    model_.erase(id);
    adm_.Close(id);
    TakeGrants();
  }

  void Advance(int ms) { now_ += std::chrono::milliseconds(ms); }

  Admission::Id Pick(uint8_t b) const {
    if (model_.empty()) return 0;
    auto it = model_.begin();
    std::advance(it, b % model_.size());
    return it->first;
  }

  void Check() {
    size_t charged = 0;
    for (const auto& [id, m] : model_) {
      charged += m.charged;
      FUZZ_CHECK(adm_.state(id) == m.state, "states agree");
    }
    FUZZ_CHECK(adm_.open() == model_.size(), "open count");
    FUZZ_CHECK(adm_.buffered_body_bytes() == charged, "charged bytes agree with the model");
    FUZZ_CHECK(charged <= limits_.body_buffer_limit, "charged within body_buffer_limit");
    FUZZ_CHECK(adm_.peak_body_bytes() <= limits_.body_buffer_limit, "peak within the limit");
    FUZZ_CHECK(adm_.body_queue() == queue_.size(), "queue length");
    FUZZ_CHECK(queue_.empty() || charged > 0, "a body waits while nothing is charged");
    FUZZ_CHECK(adm_.PopGranted() == 0, "every grant was taken");
  }

 private:
  bool Full() const {
    return limits_.max_connections != 0 && model_.size() >= limits_.max_connections;
  }

  uint64_t ExpectedVictim() const {
    uint64_t best = 0, best_seq = UINT64_MAX;
    for (const auto& [id, m] : model_) {
      if (m.state == State::kDraining && m.seq < best_seq) best = id, best_seq = m.seq;
    }
    if (best != 0) return best;
    for (const auto& [id, m] : model_) {
      if (m.state == State::kWaiting && m.seq < best_seq) best = id, best_seq = m.seq;
    }
    if (best == 0 || now_ - model_.at(best).since < limits_.eviction_grace) return 0;
    return best;
  }

  void Enter(Model& m, State s) {
    m.state = s;
    m.seq = ++seq_;
    m.since = now_;
    m.header = false;
    m.may_read = false;
  }

  void Complete(Admission::Id id) {
    Model& m = model_.at(id);
    adm_.Busy(id);
    m.charged = 0;
    Enter(m, State::kBusy);
    TakeGrants();
  }

  void Unqueue(Model& m, Admission::Id id) {
    if (!m.queued) return;
    m.queued = false;
    queue_.erase(std::find(queue_.begin(), queue_.end(), id));
  }

  // Grants come in queue order, each charged with the body's length.
  void TakeGrants() {
    for (Admission::Id id; (id = adm_.PopGranted()) != 0;) {
      FUZZ_CHECK(!queue_.empty() && queue_.front() == id, "grants first come, first served");
      queue_.pop_front();
      Model& m = model_.at(id);
      FUZZ_CHECK(m.queued && !m.may_read, "granted once, while queued");
      m.queued = false;
      m.may_read = true;
      m.charged = m.length;
    }
  }

  Admission adm_;
  const Admission::Limits limits_;
  std::map<Admission::Id, Model> model_;
  std::deque<Admission::Id> queue_;
  Admission::Clock::time_point now_{std::chrono::seconds(1)};
  uint64_t seq_ = 0;
  uint64_t answered_unfinished_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  Admission::Limits limits;
  limits.max_connections = data[0] % 9;  // 0 = no limit
  limits.body_buffer_limit = 64 * (1 + data[1] % 16);
  limits.small_body = std::min<size_t>(data[2] % 80, limits.body_buffer_limit);
  limits.eviction_grace = std::chrono::milliseconds(10 * (data[3] % 4));
  Harness h(limits);
  for (size_t i = 4; i + 1 < size; i += 2) {
    const uint8_t op = data[i], arg = data[i + 1];
    const Admission::Id id = h.Pick(arg);
    switch (op % 8) {
      case 0:
      case 1:
        h.Connect();
        break;
      case 2:  // a body of up to body_buffer_limit bytes
        if (id != 0) h.Header(id, (size_t{arg} * 7 + op) % (limits.body_buffer_limit + 1));
        break;
      case 3:
        if (id != 0) h.Body(id, size_t{op} * 3);
        break;
      case 4:
        if (id != 0) h.Replied(id, (op & 0x10) != 0);
        break;
      case 5:
        if (id != 0) h.Reject(id);
        break;
      case 6:
        if (id != 0) h.Close(id);
        break;
      case 7:
        h.Advance(op);
        break;
    }
    h.Check();
  }
  return 0;
}
