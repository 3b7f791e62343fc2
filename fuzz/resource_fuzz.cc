// The Kubernetes objects the GM sends (json::DecodeDataset/DecodeModel/DecodeIlJob/DecodeLlJob,
// and DecodeOpaqueObject for the pass-through kinds) on arbitrary bytes, each input through every
// decoder and CheckObjectLimits (the ignored kinds). Invariants: an object that decodes
// has a Kubernetes name and namespace (no '/'), and it survives the store's round trip:
// AssembleObject of its parts decodes again, to the same parts (the LC persists the parts and
// reassembles them at start-up). AssembleObject is also fed
// arbitrary parts (the input split at NUL bytes), which must not crash.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/json/resource_codec.h"
#include "fuzz_check.h"

namespace {

using sedna::json::Decoded;

template <class T, class Decode>
void RoundTrip(std::string_view text, Decode decode) {
  auto first = decode(text);
  if (!first.ok()) {
    FUZZ_CHECK(!first.message().empty(), "an error without a message");
    return;
  }
  const Decoded<T>& d = *first;
  FUZZ_CHECK(!d.object.meta.name.empty() && NameAlphabetOk(d.object.meta.name, false),
             d.object.meta.name);
  FUZZ_CHECK(NameAlphabetOk(d.object.meta.ns, true), d.object.meta.ns);
  std::string assembled = sedna::json::AssembleObject(
      d.type_meta_json, d.object_meta_json, d.spec_json, d.status_json, d.credential_json);
  auto second = decode(assembled);
  FUZZ_CHECK(second.ok(), second.message() + " in " + assembled);
  FUZZ_CHECK(second->type_meta_json == d.type_meta_json, assembled);
  FUZZ_CHECK(second->object_meta_json == d.object_meta_json, assembled);
  FUZZ_CHECK(second->spec_json == d.spec_json, assembled);
  FUZZ_CHECK(second->status_json == d.status_json, assembled);
  FUZZ_CHECK(second->credential_json == d.credential_json, assembled);
  FUZZ_CHECK(second->object.meta.name == d.object.meta.name, assembled);
  FUZZ_CHECK(second->object.meta.ns == d.object.meta.ns, assembled);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  RoundTrip<sedna::core::Dataset>(text, sedna::json::DecodeDataset);
  RoundTrip<sedna::core::Model>(text, sedna::json::DecodeModel);
  RoundTrip<sedna::core::IlJob>(text, sedna::json::DecodeIlJob);
  RoundTrip<sedna::core::LlJob>(text, sedna::json::DecodeLlJob);
  RoundTrip<sedna::json::OpaqueObject>(text, [](std::string_view t) {
    return sedna::json::DecodeOpaqueObject(t, "JointInferenceService");
  });
  RoundTrip<sedna::json::OpaqueObject>(text, [](std::string_view t) {
    return sedna::json::DecodeOpaqueObject(t, "FederatedLearningJob");
  });
  // Every decoder parses under the same limits: what passes them is what CheckObjectLimits passes.
  const sedna::Status limits = sedna::json::CheckObjectLimits(text);
  FUZZ_CHECK(limits.ok() || !limits.message().empty(), "an error without a message");
  if (!limits.ok()) {
    FUZZ_CHECK(!sedna::json::DecodeOpaqueObject(text, "FederatedLearningJob").ok(),
               "a pass-through object decoded past the limits: " + limits.message());
  }

  std::vector<std::string_view> parts;
  size_t start = 0;
  while (parts.size() < 5) {
    size_t nul = text.find('\0', start);
    parts.push_back(text.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  parts.resize(5);
  std::optional<std::string> credential;
  if (!parts[4].empty()) credential = std::string(parts[4]);
  sedna::json::AssembleObject(parts[0], parts[1], parts[2], parts[3], credential);
  return 0;
}
