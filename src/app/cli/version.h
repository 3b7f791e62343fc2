// What `sedna-lc --version` prints: the project version and the commit it was built from.
#pragma once

#include <string>

namespace sedna::app {

std::string Version();      // CMake's project(sedna_lc VERSION ...), e.g. "0.1.0"
std::string GitCommit();    // `git describe --always --dirty` at build time; "unknown" outside git
std::string VersionText();  // "sedna-lc 0.1.0 (commit 1699cb4-dirty)\n"

}  // namespace sedna::app
