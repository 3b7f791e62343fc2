// Only regular files are read or written at paths a user can influence (an index, a spool): what
// else can be at a path (a FIFO blocks an open, a device's open has effects of its own) is named
// in the error.
#pragma once

#include <string>

#include "core/status.h"

namespace sedna::dataset {

// Fails unless `mode` (a stat st_mode) is a regular file:
// "<what> <path>: is a FIFO, not a regular file" ("is not a regular file" for an unknown type).
Status RequireRegularFile(const std::string& what, const std::string& path, unsigned mode);

}  // namespace sedna::dataset
