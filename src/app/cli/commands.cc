#include "app/cli/commands.h"

#include "app/cli/load_config.h"

namespace sedna::app {
namespace {

struct Subcommand {
  const char* name;
  Command command;
  const char* summary;
};

const Subcommand kSubcommands[] = {
    {"standalone", Command::kStandalone,
     "run jobs from Sedna manifests on this machine, without a GM or Kubernetes"},
    {"status", Command::kStatus, "show the jobs of the daemon (or of its database)"},
    {"rollback-model", Command::kRollbackModel,
     "list or restore the model versions kept beside a deploy path"},
    {"doctor", Command::kDoctor,
     "check, step by step, why this node cannot reach the GM, and the local setup"},
    {"version", Command::kVersion, "print the version and git commit"},
};

// The daemon's flags as LoadConfig declares them (its --help answer), from the "Options:" line
// on, without the -h,--help line.
std::string DaemonFlags() {
  std::string text = LoadConfig({}, {"--help"}).message();
  const auto options = text.find("Options:");
  if (options != std::string::npos) text = text.substr(options);
  const auto help = text.find("-h,--help");
  if (help != std::string::npos) {
    const auto line_start = text.rfind('\n', help);
    const auto line_end = text.find('\n', help);
    if (line_start != std::string::npos && line_end != std::string::npos) {
      text.erase(line_start, line_end - line_start);
    }
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text + "\n";
}

const char kEnvironment[] =
    "Environment (Sedna's LC contract; a flag wins over its variable):\n"
    "  GM_ADDRESS        --gm-address   the GM's websocket host:port (unset: no GM link)\n"
    "  NODENAME          --node-name    this node's name (falls back to HOSTNAME, then the host "
    "name)\n"
    "  BIND_PORT         --bind-port    worker API port (default 9100)\n"
    "  ROOTFS_MOUNT_DIR  --rootfs       where the host's / is mounted (default /rootfs; empty: "
    "none)\n"
    "  SEDNA_DB_PATH     --db           the SQLite database (default "
    "<rootfs>/var/lib/sedna/sedna-lc/database.db\n"
    "                                   when the rootfs exists, else /var/lib/sedna/database.db)\n"
    "  SEDNA_GM_PROTOCOL --gm-protocol  auto (default), g1 or g2: how the IL deploy decision "
    "follows the GM\n"
    "  TZ                --timezone     time zone of trigger timers (TZDIR: zone files)\n";

}  // namespace

Invocation ParseInvocation(const std::vector<std::string>& argv) {
  Invocation inv;
  size_t first = 0;
  if (!argv.empty()) {
    for (const auto& s : kSubcommands) {
      if (argv[0] == s.name) {
        inv.command = s.command;
        first = 1;
      }
    }
    if (argv[0] == "jobs") {  // the old name of status
      inv.command = Command::kStatus;
      first = 1;
    }
  }
  inv.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(first), argv.end());
  for (const auto& a : inv.args) {
    if (a == "--") break;
    inv.help |= a == "-h" || a == "--help";
    if (inv.command == Command::kDaemon && (a == "--version" || a == "-V")) {
      inv.command = Command::kVersion;
    }
  }
  return inv;
}

std::string HelpText(Command command) {
  switch (command) {
    case Command::kDaemon: {
      std::string s =
          "sedna-lc: Local Controller for KubeEdge Sedna\n\n"
          "Usage:\n"
          "  sedna-lc [flags]                 run the LC daemon (cluster mode: a GM over "
          "GM_ADDRESS)\n"
          "  sedna-lc <command> [flags]       see sedna-lc <command> --help\n\n"
          "Commands:\n";
      for (const auto& c : kSubcommands) {
        std::string n = c.name;
        s += "  " + n + std::string(16 - n.size(), ' ') + c.summary + "\n";
      }
      s += "\nFlags:\n  -h, --help                  this help\n"
           "  -V, --version               print the version and git commit\n";
      std::string flags = DaemonFlags();
      const auto nl = flags.find('\n');  // drop "Options:"
      s += nl == std::string::npos ? flags : flags.substr(nl + 1);
      s += "\n";
      s += kEnvironment;
      return s;
    }
    case Command::kStandalone:
      return "Usage: sedna-lc standalone -f <manifests> [flags]\n\n"
             "Runs the incremental- and lifelong-learning jobs of Sedna manifests (YAML: Dataset,\n"
             "Model, IncrementalLearningJob, LifelongLearningJob) on this machine: the LC with a\n"
             "local manager in place of the GM, and the jobs' workers as local processes.\n"
             "Host paths are used as they are (no rootfs prefix) and state is kept in\n"
             "./.sedna-lc/ unless --db or SEDNA_DB_PATH say otherwise; GM_ADDRESS is ignored.\n\n"
             "Flags:\n"
             "  -f, --filename <path>         manifest file or directory of *.yaml (required)\n"
             "  --worker-timeout <seconds>    stop a worker that runs longer (default 0: no "
             "limit)\n"
             "  --gm-protocol <auto|g1|g2>    the GM the local manager plays: auto and g2 the\n"
             "                                v0.5-v0.7 GM (model hot update in <db dir>/\n"
             "                                model-hot-update/), g1 the 2021 GM\n"
             "  --db <path>                   database (default ./.sedna-lc/database.db; worker "
             "logs\n"
             "                                in <db dir>/workers)\n"
             "  --bind-port <port>            worker API port (BIND_PORT, default 9100)\n"
             "  --status-port <port>          status/health/metrics port (default 9101, 0 = off)\n"
             "  --log-level <level>           trace|debug|info|warn|error\n"
             "  -h, --help                    this help\n"
             "The daemon's other flags apply too (sedna-lc --help).\n";
    case Command::kStatus:
      return "Usage: sedna-lc status [-o table|wide|json] [--watch [--interval <s>] [--count "
             "<n>]] [--history <job>]\n"
             "\n"
             "Shows one line per job: from the running daemon's status server (/status) or, when\n"
             "none answers, read-only from its database. `jobs` is another name for it.\n\n"
             "Flags:\n"
             "  -o, --output table|wide|json  table (default); wide: every field; json: the\n"
             "                                document /status serves\n"
             "  -w, --watch                   redraw every --interval seconds until Ctrl-C\n"
             "  --interval <seconds>          with --watch (default 2)\n"
             "  --count <n>                   with --watch: stop after n draws\n"
             "  --history [<namespace>/]<name>  that job's round history (the last\n"
             "                                --history-rounds rounds: trigger, train, eval,\n"
             "                                decision); -o json: the stored record\n"
             "  --status-port <port>          the daemon's status port (default 9101; 0: read the\n"
             "                                database only)\n"
             "  --status-address <address>    the daemon's status address (default 127.0.0.1)\n"
             "  --db <path>                   the database to read when no daemon answers\n"
             "                                (SEDNA_DB_PATH; the daemon's default, see sedna-lc "
             "--help)\n"
             "  -h, --help                    this help\n";
    case Command::kRollbackModel:
      return "Usage: sedna-lc rollback-model <deploy path> [--list | --version <n>] "
             "[--rootfs <dir>]\n\n"
             "Deploys keep the models they replace beside the deploy path. Lists them (the "
             "default),\n"
             "or restores version n in place (the model it replaces is kept in turn). Host "
             "paths, read\n"
             "and written under the rootfs like the daemon does.\n\n"
             "Flags:\n"
             "  <deploy path>                 the job's deploy path (an absolute host path)\n"
             "  --list                        list the kept versions (default)\n"
             "  --version <n>                 restore version n\n"
             "  --rootfs <dir>                host root mount (ROOTFS_MOUNT_DIR, default /rootfs)\n"
             "  -h, --help                    this help\n";
    case Command::kDoctor:
      return "Usage: sedna-lc doctor [--gm-address <host:port>] [--timeout <s>] [flags]\n\n"
             "Checks, in order, each step from this node to a working GM link (the address\n"
             "parses, DNS resolves it, TCP connects, the websocket upgrade succeeds, the GM keeps\n"
             "the connection after the LC's first frame), then the local side (rootfs mounted,\n"
             "database directory writable, worker port free, clock and time zone). One line per\n"
             "check (ok, warn, FAIL, skip) and, on a FAIL, a fix: line. Exit 0 when nothing "
             "fails,\n1 otherwise. Reads the same environment as the daemon.\n\n"
             "Flags:\n"
             "  --gm-address <host:port>      the GM to check (GM_ADDRESS)\n"
             "  --timeout <seconds>           per step: DNS, TCP connect, upgrade (default 3)\n"
             "  --node-name <name>            sent as Node-Name (NODENAME)\n"
             "  --rootfs <dir>                host root mount (ROOTFS_MOUNT_DIR, default /rootfs)\n"
             "  --db <path>                   the database (SEDNA_DB_PATH)\n"
             "  --bind-port <port>            worker API port (BIND_PORT, default 9100)\n"
             "  --status-port <port>          the daemon's status port, to recognize a running "
             "one\n"
             "  --timezone <zone>             time zone of trigger timers (TZ)\n"
             "  -h, --help                    this help\n";
    case Command::kVersion:
      return "Usage: sedna-lc version (or sedna-lc --version)\n\n"
             "Prints the version and the git commit sedna-lc was built from.\n";
  }
  return "";
}

}  // namespace sedna::app
