// Process-wide logging setup (spdlog): human-readable lines or one JSON object per line.
#pragma once

#include <string>

namespace sedna::app {

void SetupLogging(bool json, const std::string& level);

}  // namespace sedna::app
