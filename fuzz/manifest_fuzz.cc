// A standalone manifest stream (manifest::LoadManifestText: YAML documents -> the GM's JSON
// objects) on arbitrary bytes. Invariants, from the loader's contract: every accepted object's
// JSON decodes with the json::Decode* function for its kind, to the name and namespace it was
// listed under; every message names the source.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/json/resource_codec.h"
#include "adapters/manifest/manifest.h"
#include "fuzz_check.h"

namespace {

constexpr std::string_view kSource = "fuzz.yaml";

template <class Decode>
void CheckDecodes(const sedna::manifest::ManifestObject& o, Decode decode) {
  auto d = decode(o.json);
  FUZZ_CHECK(d.ok(), d.message() + " in " + o.json);
  FUZZ_CHECK(d->object.meta.name == o.name, o.json);
  FUZZ_CHECK(d->object.meta.ns == o.ns, o.json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  sedna::manifest::LoadResult r = sedna::manifest::LoadManifestText(text, std::string(kSource));
  for (const auto& o : r.objects) {
    FUZZ_CHECK(!o.name.empty() && !o.ns.empty(), o.json);
    FUZZ_CHECK(o.source.rfind(kSource, 0) == 0, o.source);
    if (o.kind == "Dataset") {
      CheckDecodes(o, sedna::json::DecodeDataset);
    } else if (o.kind == "Model") {
      CheckDecodes(o, sedna::json::DecodeModel);
    } else if (o.kind == "IncrementalLearningJob") {
      CheckDecodes(o, sedna::json::DecodeIlJob);
    } else if (o.kind == "LifelongLearningJob") {
      CheckDecodes(o, sedna::json::DecodeLlJob);
    } else {
      FUZZ_CHECK(false, o.kind);
    }
  }
  for (const auto& s : r.secrets) FUZZ_CHECK(!s.name.empty() && !s.ns.empty(), s.source);
  for (const auto& m : r.errors) FUZZ_CHECK(m.rfind(kSource, 0) == 0, m);
  for (const auto& m : r.warnings) FUZZ_CHECK(m.rfind(kSource, 0) == 0, m);
  return 0;
}
