// The daemon's configuration from the environment (Sedna's contract, docs/protocol.md §P9.1) and
// the command line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/cluster/config.h"
#include "core/status.h"

namespace sedna::app {

// Builds the config from the environment and command-line flags (flags win). A bad value is an
// error naming the variable or flag and what was expected. `args` excludes argv[0].
// Ok for an empty `tz`, UTC, GMT, a compiled zone file ("TZif") under `zoneinfo_dir` or at an
// absolute path, or a POSIX TZ string (a leading ':' is dropped, as glibc does); otherwise an
// error naming TZ and the value. glibc would silently use UTC for anything else.
Status ValidateTimezone(const std::string& tz, const std::string& zoneinfo_dir);

Result<Config> LoadConfig(const std::map<std::string, std::string>& env,
                          const std::vector<std::string>& args);

// Parses a TCP port ("9100"); error names `what`.
Result<uint16_t> ParsePort(const std::string& what, const std::string& value);

}  // namespace sedna::app
