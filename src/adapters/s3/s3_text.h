// Text rules the S3 client's parts share (not for its users): ASCII lower-casing, trimming of
// spaces, tabs, CR and LF, %-decoding, strict decimal int64 and Content-Range values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sedna::s3 {

std::string_view Trim(std::string_view s);
// The value of a hex digit (either case), -1 for any other char.
int HexValue(char c);
// %XX -> byte (and '+' -> ' ' when plus_is_space); nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space);
// Decimal digits only (after Trim()), no sign; false on anything else or on overflow.
bool ParseInt64(std::string_view s, int64_t* out);
// "bytes 100-199/1000" -> start 100, total 1000 (-1 for "*").
bool ParseContentRange(std::string_view v, int64_t* start, int64_t* total);

}  // namespace sedna::s3
