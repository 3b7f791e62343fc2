// `sedna-lc rollback-model <deploy path> [--list] [--version N]`: lists the model versions that
// deploys keep beside a deploy target, or restores one (storage::RestoreModelVersion,
// model_versions.h). Host paths only, read and written under the rootfs (--rootfs /
// ROOTFS_MOUNT_DIR, like the daemon).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "app/cli/load_config.h"
#include "core/status.h"

namespace sedna::app {

struct RollbackArgs {
  std::string target;   // the deploy path, as in the job (a host path)
  int64_t version = 0;  // > 0: restore this version; 0: list
};

// Takes the rollback-model arguments (the deploy path, --list, --version N) out of `args`; the
// rest are daemon flags for LoadConfig (--rootfs). Errors name the argument.
Result<RollbackArgs> TakeRollbackArgs(std::vector<std::string>& args);

// Standalone mode's model hot-update directory: beside its database (`<dir of db_path>/
// model-hot-update`), where the local GM puts each job's model_config.json.
std::string StandaloneHotUpdateDir(const std::string& db_path);

// Lists (exit 0) or restores (exit 0; 1 when the restore fails). A restored hot-update model (one
// in Config::hot_update_dir, or in StandaloneHotUpdateDir(Config::db_path), with a
// model_config.json beside it) also gets that config rewritten, so the worker reloads. A version
// that is not kept, or an S3 URL, is an error naming it with exit code 2.
int RunRollbackCommand(const Config& cfg, const RollbackArgs& args, std::ostream& out,
                       std::ostream& err);

}  // namespace sedna::app
