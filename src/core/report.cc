#include "core/report.h"

#include <cmath>

namespace sedna::core {

const char* ReportPhaseName(ReportPhase p) {
  switch (p) {
    case ReportPhase::kTrain:
      return "train";
    case ReportPhase::kEval:
      return "eval";
    case ReportPhase::kDeploy:
      return "deploy";
  }
  return "train";
}

const char* ReportStatusName(ReportStatus s) {
  switch (s) {
    case ReportStatus::kReady:
      return "ready";
    case ReportStatus::kCompleted:
      return "completed";
    case ReportStatus::kFailed:
      return "failed";
  }
  return "ready";
}

MetricNumbers NumbersOf(const Metrics& m) {
  MetricNumbers out;
  for (const auto& [name, v] : m) {
    if (out.size() >= kMaxObservedMetrics) break;
    if (name.size() > kMaxObservedMetricName) continue;
    if (v.kind == MetricValue::Kind::kNumber && std::isfinite(v.number)) {
      out[name] = v.number;
    } else if (v.kind == MetricValue::Kind::kList && !v.list.empty()) {
      double sum = 0;
      for (double x : v.list) sum += x;
      const double mean = sum / static_cast<double>(v.list.size());
      if (std::isfinite(mean)) out[name] = mean;
    }
  }
  return out;
}

std::vector<MetricNumbers> ObservedMetrics(const WorkerReport& r) {
  if (r.observed_metrics.size() == r.results.size()) return r.observed_metrics;
  std::vector<MetricNumbers> out;
  out.reserve(r.results.size());
  for (const ModelRef& m : r.results) out.push_back(NumbersOf(m.metrics));
  return out;
}

}  // namespace sedna::core
