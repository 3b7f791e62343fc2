// `sedna-lc doctor`: the GM link step by step (gm_diagnosis.h), then this node's side: rootfs
// mounted, database directory writable (and whether a sedna-lc holds it), worker port free, clock
// and time zone. One line per check; exit 0 when none fails, 1 otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "app/cli/checks.h"
#include "app/cli/load_config.h"
#include "core/status.h"

namespace sedna::app {

struct LocalCheckOptions {
  std::string rootfs;   // "" = none (host paths used as they are)
  std::string db_path;  // the SQLite database; its lock is <db>.lock
  std::string bind_address = "0.0.0.0";
  uint16_t bind_port = 9100;
  std::string status_address = "127.0.0.1";
  uint16_t status_port = 9101;  // to tell whether the port's holder is a sedna-lc (/healthz)
  std::string timezone;         // TZ; "" = the process default
  std::string zoneinfo_dir = "/usr/share/zoneinfo";
};

// Four checks, in this order: "rootfs", "database", "worker port", "clock". Non-blocking apart
// from a loopback /healthz request (2 s at most) when the worker port is taken.
std::vector<Check> DiagnoseLocal(const LocalCheckOptions& options);

struct DoctorArgs {
  std::string gm_address;  // GM_ADDRESS or --gm-address, unchecked (the doctor checks it)
  std::string timezone;    // TZ or --timezone, unchecked
  std::chrono::milliseconds timeout{3000};
};

// Takes --gm-address, --timezone and --timeout <seconds> out of `args` (the rest are daemon flags
// for LoadConfig: --db, --rootfs, --bind-port, ...). `env` supplies GM_ADDRESS and TZ.
Result<DoctorArgs> TakeDoctorArgs(const std::map<std::string, std::string>& env,
                                  std::vector<std::string>& args);

int RunDoctorCommand(const Config& cfg, const DoctorArgs& args, const std::string& zoneinfo_dir,
                     std::ostream& out);

}  // namespace sedna::app
