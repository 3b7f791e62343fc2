// Internal to sedna_json: typed member access on RawJson with Go json.Unmarshal semantics
// (absent and null members leave the zero value; a present member of the wrong type is an
// error naming its JSON path), shared by the resource and upstream codecs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/json/go_json.h"
#include "core/resources.h"
#include "core/status.h"

namespace sedna::json::internal {

// "a.b" from ("a", "b"); "b" from ("", "b").
std::string Join(std::string_view path, std::string_view key);
// "a[3]".
std::string Index(std::string_view path, size_t i);
// "<path>: expected <expected>, got <type of v>".
Status TypeError(std::string_view path, std::string_view expected, const RawJson& v);

// The member `key` of `obj`, or nullptr when absent or null.
const RawJson* Member(const RawJson& obj, std::string_view key);

// Each reader leaves *out untouched when the member is absent or null. `path` is the path of
// `obj`; errors name path.key.
Status ReadString(const RawJson& obj, std::string_view key, std::string_view path,
                  std::string* out);
Status ReadDouble(const RawJson& obj, std::string_view key, std::string_view path, double* out);
Status ReadBool(const RawJson& obj, std::string_view key, std::string_view path, bool* out);
Status ReadInt64(const RawJson& obj, std::string_view key, std::string_view path,
                 std::optional<int64_t>* out);
Status ReadStringList(const RawJson& obj, std::string_view key, std::string_view path,
                      std::vector<std::string>* out);
// *out = the member when it is an object, nullptr when absent or null.
Status ReadObject(const RawJson& obj, std::string_view key, std::string_view path,
                  const RawJson** out);
// *out = the member when it is an array, nullptr when absent or null.
Status ReadArray(const RawJson& obj, std::string_view key, std::string_view path,
                 const RawJson** out);

// A worker/GM metrics object: number -> Number, array of numbers -> List, anything else ->
// Other. Not an object -> empty.
core::Metrics DecodeMetrics(const RawJson& metrics);
// One member of such an object, as DecodeMetrics decodes it.
core::MetricValue DecodeMetricValue(const RawJson& v);

}  // namespace sedna::json::internal
