// The GM<->LC websocket frame (docs/protocol.md §P1.2, §P1.3): {"header":MessageHeader,
// "content":<base64 of the JSON payload>}, exactly as Go's encoding/json writes model.Message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sedna::json {

struct MessageHeader {
  std::string ns;  // "namespace"
  std::string resource_kind;
  std::string resource_name;
  std::string operation;
  bool operator==(const MessageHeader&) const = default;
};

struct Frame {
  MessageHeader header;
  std::string content;        // decoded bytes of `content`
  bool content_null = false;  // `content` was null or absent (Go: nil []byte)
};

// Decodes one frame as Go's json.Unmarshal into model.Message would: unknown keys are ignored,
// absent or null header fields are "" (a `null` frame is all zero values), and `content` must be
// a standard padded base64 string.
// header.namespace and header.resourceName, when not empty, must be a Kubernetes namespace and
// object name (k8s_names.h): 'header.resourceName: "a/b" must not contain '/''.
// Errors name the part: "header.operation: expected a string, got number",
// "content: expected a base64 string, got object", "content: invalid base64: ...",
// "invalid JSON: ...". A frame of more than kMaxFrameValues JSON values is refused ("invalid
// JSON: more than 32768 values"): Go's GM writes 7, and each costs ~150 bytes in the parse tree
// (Go's nesting limit, 10000, still shows as its own error).
inline constexpr size_t kMaxFrameValues = size_t{1} << 15;
Result<Frame> DecodeFrame(std::string_view text);

// The header of a frame, to name it in the log when DecodeFrame refused it: the same parse and
// bounds, header fields that are not strings left "", names not checked. Error when the frame
// is not JSON, has more than kMaxFrameValues values, or no header object.
Result<MessageHeader> DecodeFrameHeader(std::string_view text);

// {"header":{"namespace":..,"resourceKind":..,"resourceName":..,"operation":..},"content":"<b64>"}
// byte-for-byte as Go writes it (field order, HTML-safe string escaping).
std::string EncodeFrame(const MessageHeader& header, std::string_view content);

// The bare header the LC sends as its first frame after dialling (§P1.2), e.g. for an empty
// header {"namespace":"","resourceKind":"","resourceName":"","operation":""}.
std::string EncodeBareHeader(const MessageHeader& header);

}  // namespace sedna::json
