// What the two kind runners (il_runner.cc, ll_runner.cc) share: the decoded object and the core
// state of one job, and the accessors that read them the same way for both kinds. Job is
// core::IlJob or core::LlJob (both have meta, spec.dataset_name/train_prob/output_dir and
// conditions); State is core::il::State or core::ll::State (both have samples_seen, train_pending
// and eval_open).
//
// Owns: the job's object (json::Decoded<Job>), its state, and the planned next state (from Plan
// to Adopt).
// Calls: nothing.
// Called by: the job runner, through KindRunner (kind_runner.h).
#pragma once

#include <memory>
#include <utility>

#include "app/cluster/jobs/kind_runner.h"

namespace sedna::app {

template <class Job, class State>
class DecodedRunner : public KindRunner {
 public:
  explicit DecodedRunner(json::Decoded<Job> d) : d_(std::move(d)) {}

  const core::ObjectMeta& meta() const final { return d_.object.meta; }
  const std::string& dataset_name() const final { return d_.object.spec.dataset_name; }
  double train_prob() const final { return d_.object.spec.train_prob; }
  const std::string& output_dir() const final { return d_.object.spec.output_dir; }
  const std::vector<core::JobCondition>& conditions() const final { return d_.object.conditions; }
  const std::optional<std::string>& credential_json() const final { return d_.credential_json; }
  StoredObject TakeStored() final {
    return {std::exchange(d_.type_meta_json, {}), std::exchange(d_.object_meta_json, {}),
            std::exchange(d_.spec_json, {}), std::exchange(d_.status_json, {})};
  }

  int64_t samples_seen() const final { return s_.samples_seen; }
  int64_t train_committed() const final { return s_.train_pending.end; }
  int64_t eval_committed() const final { return s_.eval_open.end; }
  KindState Snapshot() const final { return s_; }
  void Restore(KindState s) final { s_ = std::get<State>(std::move(s)); }
  void Adopt() final {
    if (!next_) return;  // nothing planned
    s_ = std::move(*next_);
    next_.reset();
  }

 protected:
  // Keeps `out`'s state as the planned one and returns its actions and facts; state_changed says
  // whether it differs from the current state.
  template <class Output>
  KindStep KeepPlanned(Output out) {
    KindStep k;
    k.state_changed = !(out.state == s_);
    if (next_) {
      *next_ = std::move(out.state);
    } else {
      next_ = std::make_unique<State>(std::move(out.state));
    }
    k.actions = std::move(out.actions);
    k.facts = std::move(out.facts);
    return k;
  }

  // The planned state, or the current one when nothing is planned (for EncodePlanned).
  const State& planned() const { return next_ ? *next_ : s_; }

  json::Decoded<Job> d_;
  State s_;
  // Held from Plan to Adopt only: an idle job keeps one state, not two (a state is ~1 KB inline).
  std::unique_ptr<State> next_;
};

}  // namespace sedna::app
