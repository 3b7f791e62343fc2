// The GM -> LC websocket frame (json::DecodeFrame) on arbitrary bytes. Invariants: a frame that
// decodes re-encodes (EncodeFrame; EncodeBareHeader as a frame's header) to text that decodes
// to the same header and content; its namespace and resource name are Kubernetes names (no '/');
// an error always has a message. The content then goes where GmFrames sends it for the kinds
// that have no decoder of their own (the pass-through kinds, json::DecodeOpaqueObject; every other
// kind, CheckObjectLimits); IsInformationalFrame (the outbox quotas) reads the input and the
// re-encoded frame.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "fuzz_check.h"

using sedna::json::DecodeFrame;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sedna::json::IsInformationalFrame(text);
  auto frame = DecodeFrame(text);
  if (!frame.ok()) {
    FUZZ_CHECK(!frame.message().empty(), "an error without a message");
    return 0;
  }
  FUZZ_CHECK(NameAlphabetOk(frame->header.ns, true), frame->header.ns);
  FUZZ_CHECK(NameAlphabetOk(frame->header.resource_name, false), frame->header.resource_name);
  std::string again = sedna::json::EncodeFrame(frame->header, frame->content);
  auto round = DecodeFrame(again);
  FUZZ_CHECK(round.ok(), round.message());
  FUZZ_CHECK(round->header == frame->header, again);
  FUZZ_CHECK(round->content == frame->content, again);
  FUZZ_CHECK(!round->content_null, again);
  (void)sedna::json::IsInformationalFrame(again);
  const std::string& kind = frame->header.resource_kind;
  if (kind == "jointinferenceservice" || kind == "federatedlearningjob") {
    auto obj = sedna::json::DecodeOpaqueObject(frame->content, "JointInferenceService");
    FUZZ_CHECK(obj.ok() || !obj.message().empty(), "an error without a message");
    if (obj.ok()) FUZZ_CHECK(sedna::json::CheckObjectLimits(frame->content).ok(), again);
  } else {
    const sedna::Status s = sedna::json::CheckObjectLimits(frame->content);
    FUZZ_CHECK(s.ok() || !s.message().empty(), "an error without a message");
  }

  // The bare header is a MessageHeader on its own: as a frame's header it decodes the same.
  std::string bare = "{\"header\":" + sedna::json::EncodeBareHeader(frame->header) + "}";
  auto header_only = DecodeFrame(bare);
  FUZZ_CHECK(header_only.ok(), header_only.message());
  FUZZ_CHECK(header_only->header == frame->header, bare);
  FUZZ_CHECK(header_only->content_null && header_only->content.empty(), bare);
  return 0;
}
