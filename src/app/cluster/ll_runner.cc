// The LL kind runner (kind_runner.h): a LifelongLearningJob and its core::ll state machine.
#include "app/cluster/il_record.h"
#include "app/cluster/kind_runner.h"

namespace sedna::app {
namespace {

class LlRunner final : public KindRunner {
 public:
  explicit LlRunner(json::Decoded<core::LlJob> d) : d_(std::move(d)) {}

  JobKind kind() const override { return JobKind::kLl; }
  const char* object_kind() const override { return "LifelongLearningJob"; }
  const char* resource_kind() const override { return core::kKindLlJob; }
  json::ReportSpelling spelling() const override { return json::ReportSpelling::kLl; }
  const core::ObjectMeta& meta() const override { return d_.object.meta; }
  const std::string& dataset_name() const override { return d_.object.spec.dataset_name; }
  double train_prob() const override { return d_.object.spec.train_prob; }
  const std::string& output_dir() const override { return d_.object.spec.output_dir; }
  const std::vector<core::JobCondition>& conditions() const override {
    return d_.object.conditions;
  }
  const std::optional<std::string>& credential_json() const override { return d_.credential_json; }
  StoredObject stored() const override {
    return {d_.type_meta_json, d_.object_meta_json, d_.spec_json, d_.status_json};
  }
  std::vector<std::string> output_subdirs() const override {
    return {"data/train", "data/eval", "train", "eval", "deploy"};
  }
  // The LL step reads no Model CR (its models come from the conditions and reports).
  bool reads_model(const std::string&, const std::string&) const override { return false; }
  bool has_hot_updates() const override { return false; }
  const std::string& deploy_trigger_text() const override {
    static const std::string kNone;
    return kNone;
  }

  Status Validate(core::Trigger* train) override {
    const auto& job = d_.object;
    auto t = core::CompileTrigger(job.spec.train_trigger);
    if (!t.ok()) return Status::Error("spec.trainSpec.trigger." + t.message());
    *train = *t;
    return ValidateJobCommon(job.spec.dataset_name, job.spec.train_prob, job.spec.output_dir);
  }
  void TakeObject(KindRunner& incoming) override {
    d_ = std::move(static_cast<LlRunner&>(incoming).d_);
  }
  std::string TriggersText(const core::Trigger& train) const override {
    return "train trigger: " + train.text;
  }

  int64_t samples_seen() const override { return s_.samples_seen; }
  int64_t train_committed() const override { return s_.train_pending.end; }
  int64_t eval_committed() const override { return s_.eval_open.end; }
  std::string EncodeRecord(const dataset::IndexCursor& c) const override {
    return EncodeLlRecord({s_, c});
  }
  Result<std::string> LoadRecord(const std::string& record, dataset::IndexCursor* c) override {
    auto r = DecodeLlRecord(record);
    if (!r.ok()) return r.status();
    s_ = r->state;
    *c = r->cursor;
    return "resumed at version " + std::to_string(s_.version) + " phase " +
           core::ll::PhaseName(s_.phase) + " (" + std::to_string(s_.samples_seen) +
           " samples seen)";
  }
  KindState Snapshot() const override { return s_; }
  void Restore(KindState s) override { s_ = std::get<core::ll::State>(std::move(s)); }

  KindStep Plan(const KindWorld& w, const core::il::Event& ev, const core::il::Now& now) override {
    core::ll::Output out = core::ll::Step(Spec(w), s_, ev, now);
    KindStep k;
    k.state_changed = !(out.state == s_);
    next_ = std::move(out.state);
    k.actions = std::move(out.actions);
    k.facts = std::move(out.facts);
    return k;
  }
  std::string EncodePlanned(const dataset::IndexCursor& c) const override {
    return EncodeLlRecord({next_, c});
  }
  void Adopt() override { s_ = std::move(next_); }
  int64_t NextWakeMs(const KindWorld&) const override { return s_.retry_after_ms; }
  core::ReportScope ScopeOfReport(const KindWorld& w, const std::string& kind) const override {
    return core::ll::ScopeOfReport(Spec(w), s_, kind);
  }
  // An LL round ends by the GM's conditions, never by a refused report.
  bool RefusalEndsRound(const std::string&) const override { return false; }
  void FillView(JobView& v) const override { FillLlView(s_, v); }

 private:
  core::ll::Spec Spec(const KindWorld& w) const {
    core::ll::Spec spec;
    spec.job = &d_.object;
    spec.train_trigger = w.train_trigger;
    spec.dataset_known = w.dataset != nullptr;
    spec.csv = w.dataset && w.dataset->format == dataset::IndexFormat::kCsv;
    spec.dataset_s3 = w.dataset && w.dataset->s3;
    spec.index_layout = w.gm_is_g1 ? core::il::Layout::k2021 : core::il::Layout::kV07;
    spec.job_received_ms = w.received_ms;
    return spec;
  }

  json::Decoded<core::LlJob> d_;
  core::ll::State s_;
  core::ll::State next_;
};

}  // namespace

std::unique_ptr<KindRunner> MakeLlRunner(json::Decoded<core::LlJob> d) {
  return std::make_unique<LlRunner>(std::move(d));
}

}  // namespace sedna::app
