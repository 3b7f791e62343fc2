#include "adapters/http/admission.h"

#include <algorithm>

namespace sedna::http {

Admission::Room Admission::MakeRoom(Clock::time_point now) const {
  if (limits_.max_connections == 0 || entries_.size() < limits_.max_connections) {
    return {true, 0};
  }
  if (!draining_.empty()) return {true, draining_.front()};
  if (!waiting_.empty()) {
    const Entry& e = entries_.at(waiting_.front());
    if (now - e.since >= limits_.eviction_grace) return {true, waiting_.front()};
  }
  return {false, 0};
}

Admission::Clock::time_point Admission::RoomAt() const {
  if (limits_.max_connections == 0 || entries_.size() < limits_.max_connections ||
      !draining_.empty()) {
    return Clock::time_point::min();
  }
  if (waiting_.empty()) return kNever;
  const Clock::time_point since = entries_.at(waiting_.front()).since;
  return since > kNever - limits_.eviction_grace ? kNever : since + limits_.eviction_grace;
}

Admission::Id Admission::Open(Clock::time_point now) {
  const Id id = next_id_;
  auto [it, inserted] = entries_.try_emplace(id);
  Entry& e = it->second;
  try {
    e.own.push_back(id);
    e.spare.push_back(id);
  } catch (...) {
    entries_.erase(it);
    throw;
  }
  ++next_id_;
  e.pos = e.own.begin();
  e.qpos = e.spare.begin();
  e.state = State::kBusy;  // in `own`, so that SetState moves it
  SetState(e, State::kWaiting, now);
  return id;
}

void Admission::Close(Id id) noexcept {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  Release(e);
  StateList(e).erase(e.pos);
  entries_.erase(it);
  GrantQueued();
}

void Admission::Wait(Id id, Clock::time_point now) noexcept {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Release(it->second);
  SetState(it->second, State::kWaiting, now);
  GrantQueued();
}

void Admission::Busy(Id id) noexcept {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Release(it->second);
  SetState(it->second, State::kBusy, it->second.since);
  GrantQueued();
}

void Admission::Drain(Id id, Clock::time_point now) noexcept {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Release(it->second);
  SetState(it->second, State::kDraining, now);
  GrantQueued();
}

bool Admission::AskBody(Id id, size_t bytes) noexcept {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  Release(e);
  GrantQueued();  // the released charge may let others in first
  if (bytes <= limits_.small_body) return true;
  if (queue_.empty() && Fits(bytes)) {
    Charge(e, bytes);
    return true;
  }
  e.asked = bytes;
  e.queued = true;
  queue_.splice(queue_.end(), e.spare, e.qpos);
  return false;
}

Admission::Id Admission::PopGranted() noexcept {
  if (granted_.empty()) return 0;
  const Id id = granted_.front();
  Entry& e = entries_.at(id);
  e.granted = false;
  e.spare.splice(e.spare.end(), granted_, e.qpos);
  return id;
}

Admission::State Admission::state(Id id) const { return entries_.at(id).state; }

std::list<Admission::Id>& Admission::StateList(Entry& e) {
  switch (e.state) {
    case State::kWaiting:
      return waiting_;
    case State::kDraining:
      return draining_;
    case State::kBusy:
      break;
  }
  return e.own;
}

void Admission::SetState(Entry& e, State s, Clock::time_point now) noexcept {
  std::list<Id>& from = StateList(e);
  e.state = s;
  e.since = now;
  std::list<Id>& to = StateList(e);
  to.splice(to.end(), from, e.pos);
}

void Admission::Release(Entry& e) noexcept {
  charged_ -= e.charge;
  e.charge = 0;
  e.asked = 0;
  if (e.queued) {
    e.queued = false;
    e.spare.splice(e.spare.end(), queue_, e.qpos);
  }
  if (e.granted) {
    e.granted = false;
    e.spare.splice(e.spare.end(), granted_, e.qpos);
  }
}

void Admission::Charge(Entry& e, size_t bytes) noexcept {
  e.charge = bytes;
  charged_ += bytes;
  peak_charged_ = std::max(peak_charged_, charged_);
}

void Admission::GrantQueued() noexcept {
  while (!queue_.empty()) {
    Entry& e = entries_.at(queue_.front());
    if (!Fits(e.asked)) return;
    Charge(e, e.asked);
    e.asked = 0;
    e.queued = false;
    e.granted = true;
    granted_.splice(granted_.end(), queue_, e.qpos);
  }
}

}  // namespace sedna::http
