// `sedna-lc status` / `jobs`: one line per job, from the running daemon's /status endpoint or,
// when none answers, read-only from its database.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "app/cli/load_config.h"

namespace sedna::app {

struct StatusArgs {
  std::string output = "table";  // -o table|wide|json
  bool watch = false;            // redraw every `interval` until interrupted (or `count` draws)
  std::chrono::milliseconds interval{2000};
  int64_t count = 0;          // with watch: stop after this many draws; 0 = until Ctrl-C
  bool clear_screen = false;  // with watch: clear the terminal before each draw (set by the caller)
  std::string history;        // --history [ns/]name: that job's round history instead
};

// Takes -o/--output, --watch/-w, --interval <seconds>, --count <n> and --history <job> out of
// `args`; the rest are
// daemon flags for LoadConfig (--db, --status-port, --status-address). Errors name the flag.
Result<StatusArgs> TakeStatusArgs(std::vector<std::string>& args);

// 0 when the jobs were printed, 1 when neither the daemon nor the database could be read (a
// watch keeps going and reports the error in place of the table).
int RunStatusCommand(const Config& cfg, const StatusArgs& args, std::ostream& out,
                     std::ostream& err);

}  // namespace sedna::app
