// `sedna-lc status` / `jobs`: one line per job, from the running daemon's /status endpoint or,
// when none answers, read-only from its database.
#pragma once

#include <ostream>

#include "app/cli/load_config.h"

namespace sedna::app {

int RunStatusCommand(const Config& cfg, std::ostream& out, std::ostream& err);

}  // namespace sedna::app
