#include "app/cli/status_format.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

namespace sedna::app {
namespace {

bool WordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/';
}
bool Digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

std::string Short(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

std::string MetricsText(const core::Metrics& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    if (v.kind == core::MetricValue::Kind::kNumber) {
      out += (out.empty() ? "" : ",") + k + "=" + Short(v.number, 4);
    } else if (v.kind == core::MetricValue::Kind::kList && !v.list.empty()) {
      std::string l;
      for (double x : v.list) l += (l.empty() ? "" : " ") + Short(x, 4);
      out += (out.empty() ? "" : ",") + k + "=[" + l + "]";
    }
  }
  return out.empty() ? "-" : out;
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  return RenderAlignedRows(rows);
}

std::string Or(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

std::string HumanNumbers(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!Digit(text[i]) || (i > 0 && WordChar(text[i - 1]))) {
      out += text[i++];
      continue;
    }
    size_t j = i, significant = 0;
    bool leading = true, dot = false;
    for (; j < text.size() && (Digit(text[j]) || (text[j] == '.' && !dot)); ++j) {
      if (text[j] == '.') {
        dot = true;
        continue;
      }
      if (text[j] != '0') leading = false;
      if (!leading) ++significant;
    }
    if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
      size_t k = j + 1;
      if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
      if (k < text.size() && Digit(text[k])) {
        while (k < text.size() && Digit(text[k])) ++k;
        j = k;
      }
    }
    const std::string token = text.substr(i, j - i);
    const bool standalone = j == text.size() || !WordChar(text[j]) ||
                            (text[j] == '.' && (j + 1 == text.size() || !WordChar(text[j + 1])));
    if (dot && significant > 12 && standalone && token.back() != '.') {
      out += Short(std::strtod(token.c_str(), nullptr), 12);
    } else {
      out += token;
    }
    i = j;
  }
  return out;
}

std::vector<JobView> HumanViews(std::vector<JobView> jobs) {
  for (auto& j : jobs) {
    j.last_decision = HumanNumbers(j.last_decision);
    j.last_error = HumanNumbers(j.last_error);
  }
  return jobs;
}

std::string RenderWideTable(const std::vector<JobView>& jobs) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KIND", "NAMESPACE/NAME", "STAGE", "ROUND", "WAITING", "SEEN", "WORK",
                  "DECISIONS", "DECIDED ROUND", "EVAL NEW", "EVAL DEPLOYED", "DEPLOYED",
                  "DEPLOYED AT", "LAST DECISION", "LAST ERROR"});
  for (const auto& j : jobs) {
    rows.push_back(
        {j.kind == "IncrementalLearningJob" ? "IL" : "LL", j.ns + "/" + j.name, Or(j.stage),
         std::to_string(j.round), std::to_string(j.samples_waiting), std::to_string(j.samples_seen),
         Or(j.work), std::to_string(j.decisions), std::to_string(j.decided_round),
         j.last_eval.size() > 0 ? MetricsText(j.last_eval[0].metrics) : "-",
         j.last_eval.size() > 1 ? MetricsText(j.last_eval[1].metrics) : "-", Or(j.deployed_url),
         Or(j.deployed_at), Or(HumanNumbers(j.last_decision)), Or(HumanNumbers(j.last_error))});
  }
  return Table(rows);
}

namespace {

std::string Clock(int64_t ms) {
  if (ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%m-%d %H:%M:%S", &tm);
  return b;
}

std::string Took(int64_t from, int64_t to) {
  if (from <= 0 || to < from) return "";
  return " " + Short(static_cast<double>(to - from) / 1000.0, 3) + "s";
}

std::string Flat(const std::map<std::string, double>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ",") + k + "=" + Short(v, 4);
  return out.empty() ? "-" : out;
}

std::string Stage(const std::string& status, int64_t ready, int64_t done) {
  if (!status.empty()) return status + Took(ready, done);
  return ready > 0 ? "running" : "-";
}

}  // namespace

bool HistoryMatches(const JobHistory& h, const std::string& job) {
  const auto slash = job.find('/');
  if (slash == std::string::npos) return h.name == job;
  return h.ns == job.substr(0, slash) && h.name == job.substr(slash + 1);
}

Result<std::vector<JobHistory>> DecodeHistories(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return Result<std::vector<JobHistory>>::Error("history: not a JSON array");
  std::vector<JobHistory> out;
  for (size_t i = 0; i < j.size(); ++i) {
    auto h = DecodeJobHistory(j[i].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!h.ok()) {
      return Result<std::vector<JobHistory>>::Error("history[" + std::to_string(i) +
                                                    "]: " + h.message());
    }
    out.push_back(std::move(*h));
  }
  return out;
}

std::string RenderHistoryTable(const JobHistory& h) {
  std::string out = (h.kind == "IncrementalLearningJob" ? "IL " : "LL ") + h.ns + "/" + h.name +
                    "   train trigger: " + Or(h.train_trigger) +
                    "   deploy trigger: " + Or(h.deploy_trigger) +
                    "   deploys: " + std::to_string(h.deploys) + "\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ROUND", "SAMPLES", "FIRED", "TRAIN", "EVAL", "METRICS [new | deployed]",
                  "DECISION", "WHY"});
  for (const RoundRecord& r : h.rounds) {
    std::string metrics = r.new_metrics.empty() && r.deployed_metrics.empty()
                              ? "-"
                              : Flat(r.new_metrics) + " | " + Flat(r.deployed_metrics);
    rows.push_back({std::to_string(r.round), std::to_string(r.samples), Clock(r.fired_ms),
                    Stage(r.train_status, r.train_ready_ms, r.train_done_ms),
                    Stage(r.eval_status, r.eval_ready_ms, r.eval_done_ms), metrics,
                    Or(r.decision) + (r.decided_ms ? " " + Clock(r.decided_ms) : ""),
                    HumanNumbers(Or(r.decision_reason))});
  }
  return out + RenderAlignedRows(rows);
}

}  // namespace sedna::app
