// sedna-lc's subcommands: which one argv names, whether it asks for --help or --version, and each
// one's help text (its own flags, not the daemon's).
#pragma once

#include <string>
#include <vector>

namespace sedna::app {

enum class Command { kDaemon, kStandalone, kStatus, kRollbackModel, kDoctor, kVersion };

struct Invocation {
  Command command = Command::kDaemon;  // no subcommand: the daemon (cluster mode)
  std::vector<std::string> args;       // what follows the subcommand
  bool help = false;                   // -h or --help among them
};

// argv without argv[0]. "--version" (or "-V") as the daemon's first argument, or the subcommand
// "version", selects kVersion; rollback-model's own --version N is its argument.
Invocation ParseInvocation(const std::vector<std::string>& argv);

// The help text of a command; for kDaemon the top-level help: the subcommands one line each, then
// the daemon's flags (from LoadConfig's flag table) and the environment variables they follow.
std::string HelpText(Command command);

}  // namespace sedna::app
