#include "app/cli/rootfs_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sedna::app {

Status CheckRootfsAccess(const std::string& rootfs) {
  if (rootfs.empty()) return Status::Ok();
  struct stat st {};
  if (::stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return Status::Ok();
  if (::faccessat(AT_FDCWD, rootfs.c_str(), X_OK, AT_EACCESS) == 0) return Status::Ok();
  const int err = errno;
  return Status::Error("rootfs " + rootfs + " (ROOTFS_MOUNT_DIR): cannot be searched as uid " +
                       std::to_string(::geteuid()) + " gid " + std::to_string(::getegid()) + ": " +
                       std::strerror(err) +
                       "; mount the host's / there readable by that user, or run as root");
}

}  // namespace sedna::app
