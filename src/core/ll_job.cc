#include "core/ll_job.h"

#include <algorithm>
#include <cctype>
#include <type_traits>

namespace sedna::core::ll {
namespace {

constexpr int64_t kWriteRetryMs = 10'000;
constexpr int64_t kFailureRetryCapMs = 60'000;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

ModelRef WithoutMetrics(const ModelRef& m) { return ModelRef{m.format, m.url, {}}; }

struct Stepper {
  const Spec& spec;
  const Now& now;
  State s;
  std::vector<Action> actions;

  void Info(std::string t) { actions.push_back(Log{Log::Level::kInfo, std::move(t)}); }
  void Warn(std::string t) { actions.push_back(Log{Log::Level::kWarn, std::move(t)}); }
  void Error(std::string t) { actions.push_back(Log{Log::Level::kError, std::move(t)}); }
  // Records a blocking problem once: logged when it first appears or changes, not on every check.
  void Blocked(const std::string& t) {
    if (s.last_error != t) Warn(t);
    s.last_error = t;
  }
  void Report(StatusReport r) { actions.push_back(SendReport{std::move(r)}); }

  std::string Out() const { return OutputRoot(spec.job->spec.output_dir); }
  std::string V() const { return std::to_string(s.version); }

  // The version the in-flight work belongs to.
  int64_t WorkVersion() const { return s.work == Work::kWriteTrain ? s.version + 1 : s.version; }

  std::vector<SpoolRange> EvalRanges() const {
    std::vector<SpoolRange> r;
    for (const auto& w : s.eval_windows) {
      if (w.count > 0) r.push_back(w);
    }
    return r;
  }

  void IssueWork() {
    switch (s.work) {
      case Work::kNone:
        return;
      case Work::kWriteTrain: {
        std::string url = TrainDataUrl(Out(), s.version + 1, spec.csv);
        std::string index = il::DataIndexUrl(url, spec.dataset_s3, spec.csv);
        actions.push_back(WriteSamples{Stage::kTrain,
                                       s.version + 1,
                                       std::move(url),
                                       SpoolKind::kTrain,
                                       {s.train_range},
                                       spec.csv,
                                       std::move(index)});
        return;
      }
      case Work::kWriteEval: {
        std::string url = EvalDataUrl(Out(), s.version, spec.csv);
        std::string index = il::DataIndexUrl(url, spec.dataset_s3, spec.csv);
        actions.push_back(WriteSamples{Stage::kEval, s.version, std::move(url), SpoolKind::kEval,
                                       EvalRanges(), spec.csv, std::move(index)});
        return;
      }
      case Work::kDeploy:
        if (!s.eval_result) {  // unreachable by the invariants; never copy from nowhere
          Error("deploy of version " + V() + " has no eval result; back to train");
          s.work = Work::kNone;
          ToTrain();
          return;
        }
        actions.push_back(CopyModel{s.eval_result->url, DeployModelUrl(Out())});
        return;
      case Work::kHotUpdate:  // IL only
        return;
    }
  }

  void ToTrain() {
    s.phase = Phase::kTrain;
    s.worker_awaited = false;
  }

  // The awaited train worker failed: its samples return to the pending set and its eval window
  // is reopened (both are contiguous with what accumulated since), then back to train.
  void TrainFailed() {
    s.train_pending = SpoolRange{s.train_range.begin, s.train_pending.end,
                                 s.train_range.count + s.train_pending.count};
    s.train_range = {};
    if (!s.eval_windows.empty()) {
      const SpoolRange last = s.eval_windows.back();
      s.eval_windows.pop_back();
      s.eval_open = SpoolRange{last.begin, s.eval_open.end, last.count + s.eval_open.count};
    }
    ToTrain();
  }

  void WorkerFailed() {
    // The first failure retries at once; consecutive ones wait 1 s, 2 s, 4 s ... 60 s.
    s.consecutive_failures++;
    if (s.consecutive_failures >= 2) {
      const int shift = static_cast<int>(std::min<int64_t>(s.consecutive_failures - 2, 6));
      s.retry_after_ms = now.unix_ms + std::min<int64_t>(1000LL << shift, kFailureRetryCapMs);
    }
    if (s.phase == Phase::kTrain) {
      TrainFailed();
    } else {
      ToTrain();
    }
  }

  // Starts the work the phase needs next, if nothing is in flight or awaited.
  void Advance() {
    if (s.work != Work::kNone || s.worker_awaited) return;
    switch (s.phase) {
      case Phase::kTrain:
        MaybeStartTrain();
        return;
      case Phase::kEval:
        StartEval();
        return;
      case Phase::kDeploy:
        s.work = Work::kDeploy;
        IssueWork();
        return;
    }
  }

  bool DatasetReady() {
    if (spec.dataset_known) return true;
    Blocked("waiting for Dataset " + spec.job->meta.ns + "/" + spec.job->spec.dataset_name);
    return false;
  }

  void MaybeStartTrain() {
    if (now.unix_ms < s.retry_after_ms || !DatasetReady()) return;
    Metrics stats{
        {"num_of_samples", MetricValue::Number(static_cast<double>(s.train_pending.count))}};
    TriggerDecision d = EvaluateTrigger(*spec.train_trigger, stats, now.minute_of_day);
    if (!d.fired) return;
    s.last_error.clear();
    Info("train trigger fired for version " + std::to_string(s.version + 1) + ": " + d.reason);
    s.work = Work::kWriteTrain;
    s.train_range = s.train_pending;
    IssueWork();
  }

  void StartEval() {
    if (now.unix_ms < s.retry_after_ms || !DatasetReady()) return;
    if (!s.train_model) {  // unreachable by the invariants
      Error("eval of version " + V() + " has no trained model; back to train");
      ToTrain();
      return;
    }
    s.last_error.clear();
    int64_t n = 0;
    for (const auto& w : s.eval_windows) n += w.count;
    if (n == 0) Warn("eval set of version " + V() + " is empty (no eval samples yet)");
    s.work = Work::kWriteEval;
    IssueWork();
  }

  void OnIngested(const SamplesIngested& e) {
    s.samples_seen = e.samples_seen;
    s.train_pending.end = e.train_end;
    s.train_pending.count += e.train_added;
    s.eval_open.end = e.eval_end;
    s.eval_open.count += e.eval_added;
  }

  void OnFileWritten(const FileWritten& e) {
    if ((e.work != Work::kWriteTrain && e.work != Work::kWriteEval) || e.work != s.work ||
        e.round != WorkVersion()) {
      return;  // stale completion (e.g. re-issued after a restart and already handled)
    }
    const bool train = e.work == Work::kWriteTrain;
    if (!e.ok) {
      Error(std::string("writing ") + (train ? "train" : "eval") + " samples of version " +
            std::to_string(e.round) + " failed: " + e.error + "; retrying in 10 s");
      s.last_error = e.error;
      s.work = Work::kNone;
      if (train) s.train_range = {};  // L5: the version stays uncommitted, the samples pending
      s.retry_after_ms = now.unix_ms + kWriteRetryMs;
      return;
    }
    const std::string out = Out();
    s.work = Work::kNone;
    s.worker_awaited = true;
    if (train) {
      s.version = e.round;
      const std::string data = TrainDataUrl(out, s.version, spec.csv);
      Report(StatusReport{"train",
                          "ready",
                          true,
                          {},
                          data,
                          il::DataIndexUrl(data, spec.dataset_s3, spec.csv),
                          TrainOutputDir(out, s.version)});
      s.train_pending.begin = s.train_range.end;
      s.train_pending.count -= s.train_range.count;
      s.eval_windows.push_back(s.eval_open);
      s.eval_open = SpoolRange{s.eval_open.end, s.eval_open.end, 0};
    } else {
      const std::string data = EvalDataUrl(out, s.version, spec.csv);
      Report(StatusReport{"eval",
                          "ready",
                          true,
                          {*s.train_model},
                          data,
                          il::DataIndexUrl(data, spec.dataset_s3, spec.csv),
                          EvalOutputDir(out, s.version)});
    }
  }

  void OnWorkerReport(const WorkerReport& r) {
    const std::string kind = Lower(r.kind);
    const std::string status = Lower(r.status);
    const std::string who = "worker " + r.worker_name + " (" + r.kind + ", " + r.status + ")";
    if (kind != "train" && kind != "eval") {
      Warn(who + ": kind \"" + r.kind + "\" is not train or eval; forwarded only");
      return;
    }
    const Phase phase = kind == "train" ? Phase::kTrain : Phase::kEval;
    if (s.phase != phase || !s.worker_awaited) {
      Warn(who + ": no " + kind + " worker is awaited (phase " + PhaseName(s.phase) + ", version " +
           V() + "); forwarded only");
      return;
    }
    if (status == "failed") {
      Warn(who + ": " + kind + " of version " + V() + " failed; back to train");
      WorkerFailed();
      return;
    }
    if (status != "completed") return;
    if (!r.results_error.empty()) {
      Error(who + ": rejected: " + r.results_error);
      return;
    }
    if (r.results.empty()) {
      Error(who + ": rejected: results: empty");
      return;
    }
    if (r.results[0].url.empty()) {
      Error(who + ": rejected: results[0].url: empty");
      return;
    }
    if (r.results.size() > 1) {
      Info(who + ": " + std::to_string(r.results.size()) + " results, using results[0]");
    }
    s.worker_awaited = false;
    if (phase == Phase::kTrain) {
      s.train_model = WithoutMetrics(r.results[0]);
      s.consecutive_failures = 0;
      s.train_range = {};
      while (static_cast<int>(s.eval_windows.size()) > kEvalWindows) {
        s.eval_windows.erase(s.eval_windows.begin());
      }
      s.phase = Phase::kEval;
      Info("version " + V() + " trained: " + r.results[0].url);
    } else {
      s.eval_result = WithoutMetrics(r.results[0]);
      s.phase = Phase::kDeploy;
      Info("version " + V() + " evaluated: " + r.results[0].url);
    }
  }

  void OnCopied(const ModelCopied& e) {
    if (s.work != Work::kDeploy) return;  // stale completion
    const std::string dst = DeployModelUrl(Out());
    if (e.ok) {
      Report(StatusReport{"deploy", "ready", true, {*s.eval_result}});
      s.deployments.push_back(Deployment{s.version, s.eval_result->url, now.rfc3339});
      while (static_cast<int>(s.deployments.size()) > kDeploymentsKept) {
        s.deployments.erase(s.deployments.begin());
      }
      Info("deployed version " + V() + ": " + s.eval_result->url + " to " + dst);
    } else {
      Error("deploy copy " + s.eval_result->url + " -> " + dst + " failed: " + e.error);
      s.last_error = e.error;
      Report(StatusReport{"deploy", "failed"});
    }
    s.work = Work::kNone;
    s.deploy_count++;
    ToTrain();
  }

  // Whether the latest (stage, Ready) before condition `idx` is the ready report this LC sent
  // for the awaited worker (its outputDir names the current version).
  bool ReadyIsOurs(size_t idx, Stage stage) const {
    const auto& conds = spec.job->conditions;
    const std::string want =
        stage == Stage::kTrain ? TrainOutputDir(Out(), s.version) : EvalOutputDir(Out(), s.version);
    for (size_t j = idx; j-- > 0;) {
      if (conds[j].stage == stage && conds[j].type == ConditionType::kReady) {
        return conds[j].data.output_dir == want;
      }
    }
    return false;
  }

  // Examines each condition appended since the last step once; a (Train|Eval, Failed) about the
  // awaited worker sends the job back to train (L1, L2).
  void ScanConditions() {
    const auto& conds = spec.job->conditions;
    const int64_t n = static_cast<int64_t>(conds.size());
    for (int64_t i = s.conditions_seen; i < n; ++i) {
      const JobCondition& c = conds[static_cast<size_t>(i)];
      if (c.type != ConditionType::kFailed ||
          (c.stage != Stage::kTrain && c.stage != Stage::kEval)) {
        continue;
      }
      const Phase phase = c.stage == Stage::kTrain ? Phase::kTrain : Phase::kEval;
      const std::string what =
          std::string("condition #") + std::to_string(i) + " (" + StageName(c.stage) + ", Failed)";
      if (s.phase != phase || !s.worker_awaited || !ReadyIsOurs(static_cast<size_t>(i), c.stage)) {
        Info(what + " is not about the awaited worker (phase " + PhaseName(s.phase) + ", version " +
             V() + "); ignored");
        continue;
      }
      Warn(what + ": " + PhaseName(phase) + " of version " + V() + " failed; back to train");
      WorkerFailed();
    }
    s.conditions_seen = std::max(s.conditions_seen, n);
  }
};

}  // namespace

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kTrain:
      return "train";
    case Phase::kEval:
      return "eval";
    case Phase::kDeploy:
      return "deploy";
  }
  return "train";
}

ReportScope ScopeOfReport(const Spec& spec, const State& s, const std::string& kind) {
  ReportScope scope;
  const std::string k = Lower(kind);
  const std::string out = il::OutputRoot(spec.job->spec.output_dir);
  if (!s.worker_awaited) return scope;
  if (k == "train" && s.phase == Phase::kTrain) {
    scope.awaited = true;
    scope.dirs = {TrainOutputDir(out, s.version)};
    scope.what = "the output directory of version " + std::to_string(s.version);
  } else if (k == "eval" && s.phase == Phase::kEval) {
    scope.awaited = true;
    scope.dirs = {EvalOutputDir(out, s.version)};
    if (s.train_model) scope.exact = {s.train_model->url};
    scope.what = "the eval output directory of version " + std::to_string(s.version) +
                 " or its trained model";
  }
  return scope;
}

std::string EvalOutputDir(const std::string& out, int64_t version) {
  return out + "/eval/" + std::to_string(version);
}

std::string DeployModelUrl(const std::string& out) { return out + "/deploy/index.pkl"; }

Output Step(const Spec& spec, const State& state, const Event& event, const Now& now) {
  Stepper st{spec, now, state, {}};
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, Resume>) {
          st.IssueWork();
        } else if constexpr (std::is_same_v<E, SamplesIngested>) {
          st.OnIngested(e);
        } else if constexpr (std::is_same_v<E, FileWritten>) {
          st.OnFileWritten(e);
        } else if constexpr (std::is_same_v<E, WorkerReported>) {
          st.OnWorkerReport(e.report);
        } else if constexpr (std::is_same_v<E, ModelCopied>) {
          st.OnCopied(e);
        }
      },
      event);
  st.ScanConditions();
  st.Advance();
  return Output{std::move(st.s), std::move(st.actions)};
}

}  // namespace sedna::core::ll
