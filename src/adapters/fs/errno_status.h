// What confined.cc and files.cc share inside sedna_fs: the errno-carrying Status both build, and
// the chunk both copy with. Not part of the module's interface.
#pragma once

#include <cstddef>
#include <string>
#include <system_error>

#include "core/status.h"

namespace sedna::fs::internal {

inline constexpr size_t kCopyChunk = 128 * 1024;

inline std::string ErrnoText(int e) { return std::system_category().message(e); }

// "<what>: <strerror(e)>", with errno_value() e.
inline Status ErrnoError(const std::string& what, int e) {
  return Status::Errno(e, what + ": " + ErrnoText(e));
}

}  // namespace sedna::fs::internal
