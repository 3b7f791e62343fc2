// Decoding of the Kubernetes objects the GM sends (docs/protocol.md §P2) into core domain types,
// plus the stored-parts representation the LC persists (§P9.2) and reassembles.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/resources.h"
#include "core/status.h"

namespace sedna::json {

// A decoded object and its JSON parts, each compact Go-style text in source order.
template <class T>
struct Decoded {
  T object;                      // meta.annotations includes the credential annotation, as received
  std::string type_meta_json;    // {"kind":..,"apiVersion":..} (each omitted when empty)
  std::string object_meta_json;  // metadata WITHOUT the sedna.io/credential annotation ([P:B23])
  std::string spec_json;         // the spec object, "{}" when absent or null
  std::string status_json;       // the status object, "" when absent or null
  std::optional<std::string> credential_json;  // the credential annotation's value, if present
  // What was ignored without failing the object, each naming the object and the path, e.g.
  // "IncrementalLearningJob default/j: status.conditions[3].data: output.models[0].url: expected
  // a string, got number (data ignored)". For the caller to log.
  std::vector<std::string> warnings;
};

// Decoding follows Go's json.Unmarshal: unknown keys are ignored, absent or null fields keep
// their zero value, and a field of the wrong type is an error naming the object and the JSON
// path, e.g. "IncrementalLearningJob default/helmet-detection-demo: spec.dataset.trainProb:
// expected a number, got string". Integer fields (checkPeriodSeconds) reject fractions and
// exponents as Go does. metadata.name missing or empty is an error ("Dataset: metadata.name:
// missing"). metadata.name and the references spec.dataset.name, spec.initialModel.name and
// spec.deploySpec.model.name (when not empty) must be Kubernetes object names, and
// metadata.namespace (when not empty) a namespace (k8s_names.h), e.g. "Dataset: metadata.name:
// \"a/b\" must not contain '/'". Job conditions must have a known type and stage (error names
// "status.conditions[i].type"); a condition's `data` string is kept in data_json and parsed into
// `data` when it is valid (left empty otherwise, with a warning; see DecodeConditionData).
//
// G2 (Sedna v0.5-v0.7) fields, docs/protocol.md §H4: Model spec.device_soc_versions (a
// string list), IL spec.evalSpec.initialEvalModel.name (a name, as the other references) and
// spec.deploySpec.model.hotUpdateEnabled (a boolean) are checked like every field the LC uses;
// spec.deploySpec.model.pollPeriodSeconds is kept when it is an integer >= 1 and otherwise left at
// 60, never an error (the LC does not use it). An LL job's status.knowledgeBase (v0.6+) is not
// read.
//
// An object of more than kMaxObjectValues JSON values (scalars and containers at any depth) is
// refused ("Dataset: invalid JSON: more than 32768 values"), so that a hostile frame costs at
// most ~5 MB and ~15 ms to decode whatever its size; real Sedna objects have a few hundred (a Go
// LC accepts any count: this is a deliberate deviation).
inline constexpr size_t kMaxObjectValues = size_t{1} << 15;
// An object of more bytes than this is refused before it is parsed ("Dataset: 1769473 bytes,
// more than the 1769472 a GM frame can carry"): the most a frame of GmLinkOptions'
// default max_frame_bytes (2.25 MiB of base64) decodes to, so the limit holds for objects that
// reach GmFrames by another way than the GM link (the local GM, start-up reload) too. Nesting is
// bounded by RawJson::kMaxDepth (10000, Go's limit: "invalid JSON: exceeded max depth 10000").
inline constexpr size_t kMaxObjectBytes = size_t{1728} * 1024;
Result<Decoded<core::Dataset>> DecodeDataset(std::string_view json);
Result<Decoded<core::Model>> DecodeModel(std::string_view json);
Result<Decoded<core::IlJob>> DecodeIlJob(std::string_view json);
Result<Decoded<core::LlJob>> DecodeLlJob(std::string_view json);

// An object the LC stores without interpreting its spec: a joint-inference service or a
// federated-learning job (pass-through, §P3.5).
struct OpaqueObject {
  core::ObjectMeta meta;
};
// Decodes a pass-through object of kind `kind` ("JointInferenceService", "FederatedLearningJob",
// used in errors) under the same limits and metadata rules as the Decode* functions above (bytes,
// values, depth; metadata.name, namespace), without reading its spec: the parts are what the LC
// stores. The parse is iterative and bounded, so no nesting or size reaches recursive code.
Result<Decoded<OpaqueObject>> DecodeOpaqueObject(std::string_view json, const std::string& kind);

// Checks that `json` is a JSON document within the limits every GM object has (kMaxObjectBytes,
// kMaxObjectValues, RawJson::kMaxDepth), e.g. for the kinds the LC ignores; the error names the
// limit ("invalid JSON: exceeded max depth 10000").
Status CheckObjectLimits(std::string_view json);

// Rebuilds a full object {<type meta members>,"metadata":..,"spec":..,"status":..} from the
// parts of a Decoded (as loaded from the store); empty parts are left out. When credential_json
// is given it is put back as metadata.annotations["sedna.io/credential"] (annotations kept in
// sorted order, the annotations member placed where Go's ObjectMeta puts it), so that
// reassembling the parts of a Go-marshalled object yields that object. Parts that are not valid
// JSON are inserted verbatim, producing a document the Decode* functions reject.
std::string AssembleObject(std::string_view type_meta, std::string_view object_meta,
                           std::string_view spec, std::string_view status,
                           const std::optional<std::string>& credential_json);

// Parses a condition `data` string (§P4.1 IncrementalCondData): input.{models,dataURL,
// dataIndexURL,outputDir} and output.models, each model {format,url,metrics,device_soc_versions}
// (runtime.Model; its other keys, such as a v0.6+ GM's "classes":null, are ignored whatever their
// type); `input.model` and
// `output.model` (single) are type-checked but not kept. has_output is set when `output` is
// present and not null. Errors name the path, e.g. "output.models[0].url: expected a string, got
// number". Refused beyond kMaxObjectValues values, as the objects are.
Result<core::ConditionData> DecodeConditionData(std::string_view data_json);

}  // namespace sedna::json
