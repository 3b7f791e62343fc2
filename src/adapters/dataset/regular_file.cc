#include "adapters/dataset/regular_file.h"

#include <sys/stat.h>

namespace sedna::dataset {

std::string FileKind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFIFO:
      return "a FIFO";
    case S_IFDIR:
      return "a directory";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "";
  }
}

Status RequireRegularFile(const std::string& what, const std::string& path, unsigned mode) {
  if (S_ISREG(mode)) return Status::Ok();
  const std::string kind = FileKind(mode);
  return Status::Error(what + " " + path + ": is " + (kind.empty() ? "not" : kind + ", not") +
                       " a regular file");
}

}  // namespace sedna::dataset
