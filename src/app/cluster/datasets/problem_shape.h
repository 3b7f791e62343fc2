// "Log a problem once until it changes" needs to know when a problem is the same one again:
// messages about one ongoing problem differ only in their numbers ("cut after 1234 of 5000
// bytes", "(4 attempts)", a request id). ProblemShape is the message with every run of decimal
// digits replaced by '#', so two messages are the same problem when their shapes are equal.
#pragma once

#include <string>
#include <string_view>

namespace sedna::app {

std::string ProblemShape(std::string_view message);

}  // namespace sedna::app
