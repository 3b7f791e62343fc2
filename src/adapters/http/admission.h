// The admission policy of http::HttpServer: which connection makes room for a new one when the
// server is full, and how many request-body bytes the connections may buffer at once. No sockets
// and no clock (times are passed in), so that the policy can be tested and fuzzed alone
// (admission_test.cc, fuzz/http_admission_fuzz.cc).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>

namespace sedna::http {

class Admission {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = uint64_t;  // 0 is never a connection's id
  static constexpr Clock::time_point kNever = Clock::time_point::max();

  struct Limits {
    size_t max_connections = 256;  // open at once; 0 = no limit
    // A waiting connection is evictable once it has waited this long.
    Clock::duration eviction_grace{0};
    // Body bytes charged at once across all connections. A single body larger than this is
    // granted alone (while nothing else is charged).
    size_t body_buffer_limit = size_t{32} << 20;
    // A body of at most this many bytes is never charged nor queued: each connection may hold
    // this much body on its own.
    size_t small_body = size_t{16} << 10;
  };

  // A connection is in exactly one state from Open() to Close():
  //  kWaiting:  waiting for a complete request (its header, then its body), from Open() or the
  //             last Wait() (the end of its previous reply); evictable;
  //  kBusy:     its request is complete (in the handler, or its reply being written), or it was
  //             rejected and its reply is being written: never evicted;
  //  kDraining: its final reply is written and it is closing: evicted before any waiting one.
  enum class State { kWaiting, kBusy, kDraining };

  explicit Admission(Limits limits) : limits_(limits) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // What to do with a new connection at `now`:
  //  * below max_connections: admit (evict == 0);
  //  * full: admit after closing `evict`: the draining connection that started draining first,
  //    else the connection that has waited longest (from any peer), provided it has waited at
  //    least eviction_grace;
  //  * full and nothing evictable: admit == false (no room).
  struct Room {
    bool admit = false;
    Id evict = 0;
  };
  Room MakeRoom(Clock::time_point now) const;
  // The earliest time at which MakeRoom() admits, absent other changes: Clock::time_point::min()
  // when it would now, kNever when only a Close() or a state change can make room.
  Clock::time_point RoomAt() const;

  // Registers a new connection, kWaiting since `now`, and returns its id. The caller has made
  // room (MakeRoom()). Throws only std::bad_alloc, and then registers nothing.
  Id Open(Clock::time_point now);
  // Forgets `id` (unknown ids are ignored); releases its body charge, which may grant queued
  // bodies (PopGranted()).
  void Close(Id id) noexcept;
  // kWaiting from `now`, at the back of the eviction order (the next request of a kept-alive
  // connection). Any body charge is released. `now` never decreases between calls.
  void Wait(Id id, Clock::time_point now) noexcept;
  // kBusy. Any body charge is released, a queued body request withdrawn.
  void Busy(Id id) noexcept;
  // kDraining from `now`. Any body charge is released, a queued body request withdrawn.
  void Drain(Id id, Clock::time_point now) noexcept;

  // A kWaiting connection whose header is complete asks to read a body of up to `bytes`. True
  // when it may read it now: a small body (never charged), or `bytes` charged to the budget
  // because they fit and no earlier request is queued. False: queued (first come, first
  // served); it is granted, and charged, when room frees, and then returned by PopGranted().
  // The charge is released by Wait(), Busy(), Drain() or Close(). One request per connection
  // at a time: asking again first releases the previous charge or queued request.
  bool AskBody(Id id, size_t bytes) noexcept;
  // The connection granted longest ago whose grant the caller has not taken yet, or 0.
  Id PopGranted() noexcept;

  State state(Id id) const;  // of an open connection
  size_t open() const { return entries_.size(); }
  size_t buffered_body_bytes() const { return charged_; }   // charged now
  size_t peak_body_bytes() const { return peak_charged_; }  // the most ever charged at once
  size_t body_queue() const { return queue_.size(); }       // body requests waiting for room
  const Limits& limits() const { return limits_; }

 private:
  struct Entry {
    State state = State::kWaiting;
    Clock::time_point since;  // of the current state
    size_t charge = 0;        // bytes charged to the body budget
    size_t asked = 0;         // of a queued or granted-but-not-taken request
    bool queued = false;      // in queue_
    bool granted = false;     // in granted_
    // The entry's node in waiting_ / draining_ / own (kBusy), and in queue_ / granted_ /
    // spare: moved between lists by splice, so that state changes never allocate.
    std::list<Id> own;
    std::list<Id>::iterator pos;
    std::list<Id> spare;
    std::list<Id>::iterator qpos;
  };

  std::list<Id>& StateList(Entry& e);
  void SetState(Entry& e, State s, Clock::time_point now) noexcept;
  void Release(Entry& e) noexcept;  // the charge, a queued request, an untaken grant
  bool Fits(size_t bytes) const {
    return charged_ == 0 || charged_ + bytes <= limits_.body_buffer_limit;
  }
  void Charge(Entry& e, size_t bytes) noexcept;
  void GrantQueued() noexcept;

  const Limits limits_;
  std::unordered_map<Id, Entry> entries_;
  std::list<Id> waiting_;   // kWaiting, oldest first
  std::list<Id> draining_;  // kDraining, oldest first
  std::list<Id> queue_;     // body requests waiting for room, first first
  std::list<Id> granted_;   // granted from queue_, not yet taken by PopGranted()
  size_t charged_ = 0;
  size_t peak_charged_ = 0;
  Id next_id_ = 1;
};

}  // namespace sedna::http
