#include "app/standalone/started_workers.h"

#include <cctype>
#include <optional>
#include "core/ascii.h"

namespace sedna::app {
namespace {

// The kind a worker of `stage` reports.
const char* ReportedKind(core::Stage stage) {
  switch (stage) {
    case core::Stage::kTrain:
      return "train";
    case core::Stage::kEval:
      return "eval";
    case core::Stage::kDeploy:
      break;
  }
  return "inference";
}

std::optional<core::Stage> StageOfKind(const std::string& kind_lower) {
  for (core::Stage s : {core::Stage::kTrain, core::Stage::kEval, core::Stage::kDeploy}) {
    if (kind_lower == ReportedKind(s)) return s;
  }
  return std::nullopt;
}

std::string JobLabel(const core::WorkerReport& r) {
  const std::string kind = r.owner_kind == core::kKindIlJob   ? "IncrementalLearningJob"
                           : r.owner_kind == core::kKindLlJob ? "LifelongLearningJob"
                                                              : r.owner_kind;
  return kind + " " + r.ns + "/" + r.owner_name;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s.substr(0, 64)) {
    out += std::isprint(static_cast<unsigned char>(c)) && c != '"' ? c : '?';
  }
  return out + (s.size() > 64 ? "...\"" : "\"");
}

}  // namespace

void StartedWorkers::Started(const std::string& job, core::Stage stage, const std::string& name,
                             bool hot_update) {
  auto& workers = jobs_[job];
  for (auto it = workers.begin(); it != workers.end();) {
    it = it->second.stage == stage ? workers.erase(it) : std::next(it);
  }
  workers[name] = Worker{stage, hot_update, std::nullopt};
}

void StartedWorkers::Exited(const std::string& job, const std::string& name,
                            Clock::time_point now) {
  auto j = jobs_.find(job);
  if (j == jobs_.end()) return;
  auto w = j->second.find(name);
  if (w != j->second.end() && !w->second.exited) w->second.exited = now;
  // Bound the memory: workers past their grace are forgotten.
  for (auto it = j->second.begin(); it != j->second.end();) {
    const bool stale = it->second.exited && now - *it->second.exited >= kExitGrace;
    it = stale ? j->second.erase(it) : std::next(it);
  }
  if (j->second.empty()) jobs_.erase(j);
}

void StartedWorkers::ForgetJob(const std::string& job) { jobs_.erase(job); }

Status StartedWorkers::MayReport(const core::WorkerReport& r, Clock::time_point now) const {
  const std::string kind = core::AsciiLowered(r.kind);
  const std::optional<core::Stage> kind_stage = StageOfKind(kind);
  const Worker* worker = nullptr;
  if (auto j = jobs_.find(core::ResourceKey(r.ns, r.owner_kind, r.owner_name)); j != jobs_.end()) {
    auto w = j->second.find(r.worker_name);
    if (w != j->second.end() && (!w->second.exited || now - *w->second.exited < kExitGrace)) {
      worker = &w->second;
    }
  }
  if (!worker) {
    return Status::Error(
        "name: " + Quoted(r.worker_name) + " is not a worker this LC started for " + JobLabel(r) +
        (kind_stage ? " (stage " + core::AsciiLowered(core::StageName(*kind_stage)) + ")"
                    : " (kind " + Quoted(r.kind) + ")"));
  }
  const bool reload =
      worker->hot_update && worker->stage == core::Stage::kDeploy && kind == "deploy";
  if (kind != ReportedKind(worker->stage) && !reload) {
    return Status::Error(
        "kind: " + Quoted(r.kind) + " is not what worker " + Quoted(r.worker_name) + " of " +
        JobLabel(r) + " reports: it was started for stage " +
        core::AsciiLowered(core::StageName(worker->stage)) + " (kind " +
        ReportedKind(worker->stage) +
        (worker->stage == core::Stage::kDeploy ? "; deploy only with model hot update" : "") + ")");
  }
  return Status::Ok();
}

size_t StartedWorkers::size() const {
  size_t n = 0;
  for (const auto& [job, workers] : jobs_) n += workers.size();
  return n;
}

}  // namespace sedna::app
