// UTF-8 well-formedness, for text that must be UTF-8 (a websocket text message) or that a
// JSON record can only carry as such (a CSV index's header line).
#pragma once

#include <string_view>

namespace sedna::core {

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF). ASCII runs are checked eight bytes at a time.
bool IsValidUtf8(std::string_view text);

}  // namespace sedna::core
