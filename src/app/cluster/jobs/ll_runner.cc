// The LL kind runner (kind_runner.h): a LifelongLearningJob and its core::ll state machine.
#include "app/cluster/jobs/decoded_runner.h"
#include "app/cluster/jobs/il_record.h"

namespace sedna::app {
namespace {

class LlRunner final : public DecodedRunner<core::LlJob, core::ll::State> {
 public:
  using DecodedRunner::DecodedRunner;

  JobKind kind() const override { return JobKind::kLl; }
  const char* object_kind() const override { return "LifelongLearningJob"; }
  const char* resource_kind() const override { return core::kKindLlJob; }
  json::ReportSpelling spelling() const override { return json::ReportSpelling::kLl; }
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

  KindStep Plan(const KindWorld& w, const core::il::Event& ev, const core::il::Now& now) override {
    KindStep k = KeepPlanned(core::ll::Step(Spec(w), s_, ev, now));
    k.next_wake_ms = planned().retry_after_ms;
    return k;
  }
  std::string EncodePlanned(const dataset::IndexCursor& c) const override {
    return EncodeLlRecord({planned(), c});
  }
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
};

}  // namespace

std::unique_ptr<KindRunner> MakeLlRunner(json::Decoded<core::LlJob> d) {
  return std::make_unique<LlRunner>(std::move(d));
}

}  // namespace sedna::app
