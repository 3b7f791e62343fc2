// The result lines of `sedna-lc doctor`: one per check, in order, with what to do on a failure.
#pragma once

#include <string>
#include <vector>

namespace sedna::app {

enum class Verdict { kOk, kWarn, kFail, kSkip };

struct Check {
  std::string name;  // "address", "dns", "tcp", "websocket", "first frame", "rootfs", ...
  Verdict verdict = Verdict::kOk;
  std::string detail;  // what was found, with the values (addresses, paths, errors)
  std::string fix;     // what to do about it; set on kFail, may be on kWarn
};

const char* VerdictName(Verdict v);  // "ok", "warn", "FAIL", "skip"
bool AnyFailed(const std::vector<Check>& checks);
// "ok    dns          gm.sedna -> 10.0.0.5 ...\n", a "      fix: ..." line after a FAIL or warn.
std::string RenderChecks(const std::vector<Check>& checks);

}  // namespace sedna::app
