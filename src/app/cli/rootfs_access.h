// The daemon's start-up check of the host root it works through (ROOTFS_MOUNT_DIR, --rootfs):
// every job path the GM names is read and written under it, so a process that cannot enter it (a
// pod's runAsUser on a mount only root may read) would start, connect and then fail each round.
// docs/deploy.md says what operators see.
#pragma once

#include <string>

#include "core/status.h"

namespace sedna::app {

// Ok when `rootfs` is empty, absent or not a directory (the LC then runs without a host root, as
// LoadConfig decides) or a directory this process may search (with its effective uid and
// gid). Otherwise an error naming the path, the uid and gid, and the system's reason.
Status CheckRootfsAccess(const std::string& rootfs);

}  // namespace sedna::app
