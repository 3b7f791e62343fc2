#include "adapters/json/field_reader.h"

namespace sedna::json::internal {

std::string Join(std::string_view path, std::string_view key) {
  std::string out(path);
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

Status TypeError(std::string_view path, std::string_view expected, const RawJson& v) {
  return Status::Error(std::string(path) + ": expected " + std::string(expected) + ", got " +
                       v.type_name());
}

const RawJson* Member(const RawJson& obj, std::string_view key) {
  const RawJson* v = obj.Find(key);
  return (v != nullptr && !v->is_null()) ? v : nullptr;
}

Status ReadString(const RawJson& obj, std::string_view key, std::string_view path,
                  std::string* out) {
  const RawJson* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return TypeError(Join(path, key), "a string", *v);
  *out = v->string_value();
  return Status::Ok();
}

Status ReadDouble(const RawJson& obj, std::string_view key, std::string_view path, double* out) {
  const RawJson* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return TypeError(Join(path, key), "a number", *v);
  auto d = v->AsDouble();
  if (!d.ok()) return d.status().With(Join(path, key));
  *out = *d;
  return Status::Ok();
}

Status ReadBool(const RawJson& obj, std::string_view key, std::string_view path, bool* out) {
  const RawJson* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_bool()) return TypeError(Join(path, key), "a boolean", *v);
  *out = v->bool_value();
  return Status::Ok();
}

Status ReadInt64(const RawJson& obj, std::string_view key, std::string_view path,
                 std::optional<int64_t>* out) {
  const RawJson* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return TypeError(Join(path, key), "an integer", *v);
  auto i = v->AsInt64();
  if (!i.ok()) return i.status().With(Join(path, key));
  *out = *i;
  return Status::Ok();
}

Status ReadStringList(const RawJson& obj, std::string_view key, std::string_view path,
                      std::vector<std::string>* out) {
  const RawJson* arr = nullptr;
  if (Status s = ReadArray(obj, key, path, &arr); !s.ok() || arr == nullptr) return s;
  std::string arr_path = Join(path, key);
  out->clear();
  for (size_t i = 0; i < arr->size(); ++i) {
    const RawJson& e = (*arr)[i];
    if (e.is_null()) {
      out->emplace_back();
    } else if (e.is_string()) {
      out->emplace_back(e.string_value());
    } else {
      return TypeError(Index(arr_path, i), "a string", e);
    }
  }
  return Status::Ok();
}

Status ReadObject(const RawJson& obj, std::string_view key, std::string_view path,
                  const RawJson** out) {
  *out = nullptr;
  const RawJson* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_object()) return TypeError(Join(path, key), "an object", *v);
  *out = v;
  return Status::Ok();
}

Status ReadArray(const RawJson& obj, std::string_view key, std::string_view path,
                 const RawJson** out) {
  *out = nullptr;
  const RawJson* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_array()) return TypeError(Join(path, key), "an array", *v);
  *out = v;
  return Status::Ok();
}

core::MetricValue DecodeMetricValue(const RawJson& v) {
  if (v.is_number()) {
    if (auto d = v.AsDouble(); d.ok()) return core::MetricValue::Number(*d);
  } else if (v.is_array()) {
    const size_t count = v.size();
    std::vector<double> list;
    list.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      auto d = v[k].AsDouble();
      if (!d.ok()) return core::MetricValue::Other();
      list.push_back(*d);
    }
    return core::MetricValue::List(std::move(list));
  }
  return core::MetricValue::Other();
}

core::Metrics DecodeMetrics(const RawJson& metrics) {
  core::Metrics out;
  if (!metrics.is_object()) return out;
  for (size_t i = 0, count = metrics.size(); i < count; ++i) {
    // A later duplicate key wins, as in Go.
    out[std::string(metrics.key(i))] = DecodeMetricValue(metrics[i]);
  }
  return out;
}

}  // namespace sedna::json::internal
