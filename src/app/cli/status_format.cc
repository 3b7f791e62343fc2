#include "app/cli/status_format.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

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

}  // namespace sedna::app
