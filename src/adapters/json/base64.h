// Standard base64 (RFC 4648 §4, '=' padding) with Go's base64.StdEncoding semantics: this is how
// Go's encoding/json carries []byte, i.e. the `content` of every GM<->LC frame (§P1.3).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace sedna::json {

// Standard alphabet, always padded to a multiple of 4 characters.
std::string Base64Encode(std::string_view bytes);
// Base64Encode(bytes) appended to `out`.
void Base64Append(std::string& out, std::string_view bytes);

// Inverse of Base64Encode, as Go's base64.StdEncoding.DecodeString: '\r' and '\n' anywhere are
// ignored; everything else must be the standard alphabet, padded with '=' to a multiple of 4.
// Like Go (non-strict mode), non-zero unused bits in the final quantum are accepted. The error
// text names the problem and its byte offset in `text`.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace sedna::json
