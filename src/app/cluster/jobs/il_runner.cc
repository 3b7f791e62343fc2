// The IL kind runner (kind_runner.h): an IncrementalLearningJob, its deploy trigger and its
// core::il state machine.
#include <algorithm>

#include "app/cluster/jobs/decoded_runner.h"
#include "app/cluster/jobs/il_record.h"

namespace sedna::app {
namespace {

class IlRunner final : public DecodedRunner<core::IlJob, core::il::State> {
 public:
  using DecodedRunner::DecodedRunner;

  JobKind kind() const override { return JobKind::kIl; }
  const char* object_kind() const override { return "IncrementalLearningJob"; }
  const char* resource_kind() const override { return core::kKindIlJob; }
  json::ReportSpelling spelling() const override { return json::ReportSpelling::kIl; }
  std::vector<std::string> output_subdirs() const override {
    return {"data/train", "data/eval", "train", "eval"};
  }
  bool reads_model(const std::string& ns, const std::string& name) const override {
    const auto& sp = d_.object.spec;
    return meta().ns == ns && (sp.initial_model_name == name || sp.deploy_model_name == name);
  }
  bool has_hot_updates() const override { return true; }
  const std::string& deploy_trigger_text() const override { return deploy_trigger_.text; }

  Status Validate(core::Trigger* train) override {
    const auto& job = d_.object;
    auto t = core::CompileTrigger(job.spec.train_trigger);
    if (!t.ok()) return Status::Error("spec.trainSpec.trigger." + t.message());
    auto d = core::CompileTrigger(job.spec.deploy_trigger);
    if (!d.ok()) return Status::Error("spec.deploySpec.trigger." + d.message());
    *train = *t;
    deploy_trigger_ = *d;
    return ValidateJobCommon(job.spec.dataset_name, job.spec.train_prob, job.spec.output_dir);
  }
  void TakeObject(KindRunner& incoming) override {
    auto& in = static_cast<IlRunner&>(incoming);
    d_ = std::move(in.d_);
    deploy_trigger_ = in.deploy_trigger_;
  }
  std::string TriggersText(const core::Trigger& train) const override {
    return "train trigger: " + train.text + "; deploy trigger: " + deploy_trigger_.text;
  }

  std::string EncodeRecord(const dataset::IndexCursor& c) const override {
    return EncodeIlRecord({s_, c});
  }
  Result<std::string> LoadRecord(const std::string& record, dataset::IndexCursor* c) override {
    auto r = DecodeIlRecord(record);
    if (!r.ok()) return r.status();
    s_ = r->state;
    *c = r->cursor;
    return "resumed at round " + std::to_string(s_.round) + " (" + std::to_string(s_.samples_seen) +
           " samples seen, work " + core::il::WorkName(s_.work) + ")";
  }

  KindStep Plan(const KindWorld& w, const core::il::Event& ev, const core::il::Now& now) override {
    const core::il::Spec spec = Spec(w);
    core::il::Output out = core::il::Step(spec, s_, ev, now);
    const bool forward_recorded =
        !s_.eval_reported && out.state.eval_reported && out.state.eval_written_ms == 0;
    const int64_t next_wake_ms = core::il::NextWakeMs(spec, out.state);
    KindStep k = KeepPlanned(std::move(out));
    k.forward_recorded = forward_recorded;
    k.next_wake_ms = next_wake_ms;
    return k;
  }
  std::string EncodePlanned(const dataset::IndexCursor& c) const override {
    return EncodeIlRecord({planned(), c});
  }
  core::ReportScope ScopeOfReport(const KindWorld& w, const std::string& kind) const override {
    return core::il::ScopeOfReport(Spec(w), s_, kind);
  }
  bool RefusalEndsRound(const std::string& kind) const override {
    return kind == "eval" && s_.eval_outstanding;
  }
  void FillView(JobView& v) const override {
    FillIlView(s_, static_cast<int64_t>(conditions().size()) - 1, v);
  }

 private:
  core::il::Spec Spec(const KindWorld& w) const {
    core::il::Spec spec;
    const auto& sp = d_.object.spec;
    const std::string& ns = meta().ns;
    spec.job = &d_.object;
    spec.train_trigger = w.train_trigger;
    spec.deploy_trigger = &deploy_trigger_;
    spec.initial_model = w.models->RefFor(ns, sp.initial_model_name);
    spec.deploy_model = w.models->RefFor(ns, sp.deploy_model_name);
    spec.dataset_known = w.dataset != nullptr;
    spec.csv = w.dataset && w.dataset->format == dataset::IndexFormat::kCsv;
    spec.dataset_s3 = w.dataset && w.dataset->s3;
    spec.initial_eval_model = sp.initial_eval_model_name.empty()
                                  ? nullptr
                                  : w.models->RefFor(ns, sp.initial_eval_model_name);
    // A 2021 GM (g1, or auto once this connection's evidence says G1): the 2021 retrain rule,
    // and the decision follows the eval report after --deploy-report-delay (0: at once, i.e. as
    // soon as the forward is written; the core reads a 0 wait as "no timer"): such a GM never
    // sends the (Deploy, Waiting) the 30 s --deploy-wait leaves room for.
    spec.g1_rules = w.gm_is_g1;
    // Sample files: the 2021 layout for a 2021 GM, else (g2, and auto without G1 evidence) the
    // v0.7 one; a write in flight keeps the layout it started with (State::work_layout).
    spec.layout = w.gm_is_g1 ? core::il::Layout::k2021 : core::il::Layout::kV07;
    spec.deploy_wait_ms =
        w.gm_is_g1 ? std::max<int64_t>(w.deploy_report_delay_ms, 1) : w.deploy_wait_ms;
    spec.conditions_fresh = w.conditions_fresh;
    spec.job_received_ms = w.received_ms;
    return spec;
  }

  core::Trigger deploy_trigger_;
};

}  // namespace

std::unique_ptr<KindRunner> MakeIlRunner(json::Decoded<core::IlJob> d) {
  return std::make_unique<IlRunner>(std::move(d));
}

}  // namespace sedna::app
