// What a file that logs includes, instead of <spdlog/spdlog.h>: spdlog's front end, with fmt's
// formatting engine declared as compiled elsewhere. fmt 9.1 instantiates
// detail::vformat_to<char> (the parser, integer and float writers) in every file that formats,
// about 2.3 s of -O2 compile each; it is compiled once, in fmt_format.cc, and spdlog's logger,
// registry and sinks once, in spdlog_lib.cc (docs/benchmarks.md, "Build time").
#pragma once

#include <fmt/format.h>

FMT_BEGIN_NAMESPACE
namespace detail {
extern template FMT_API void vformat_to(buffer<char>&, string_view,
                                        basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
}  // namespace detail
FMT_END_NAMESPACE

#include <spdlog/spdlog.h>  // IWYU pragma: export
