#include "adapters/dataset/regular_file.h"

#include <sys/stat.h>

#include "adapters/fs/files.h"

namespace sedna::dataset {

Status RequireRegularFile(const std::string& what, const std::string& path, unsigned mode) {
  if (S_ISREG(mode)) return Status::Ok();
  const std::string kind = fs::FileKind(mode);
  return Status::Error(what + " " + path + ": is " + (kind.empty() ? "not" : kind + ", not") +
                       " a regular file");
}

}  // namespace sedna::dataset
