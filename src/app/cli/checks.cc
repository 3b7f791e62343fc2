#include "app/cli/checks.h"

namespace sedna::app {

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kSkip:
      return "skip";
  }
  return "?";
}

bool AnyFailed(const std::vector<Check>& checks) {
  for (const auto& c : checks) {
    if (c.verdict == Verdict::kFail) return true;
  }
  return false;
}

std::string RenderChecks(const std::vector<Check>& checks) {
  size_t width = 0;
  for (const auto& c : checks) width = std::max(width, c.name.size());
  std::string out;
  for (const auto& c : checks) {
    std::string v = VerdictName(c.verdict);
    out += v + std::string(6 - v.size(), ' ') + c.name +
           std::string(width - c.name.size() + 2, ' ') + c.detail + "\n";
    if (!c.fix.empty() && c.verdict != Verdict::kOk) out += "      fix: " + c.fix + "\n";
  }
  return out;
}

}  // namespace sedna::app
