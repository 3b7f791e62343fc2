#include "adapters/json/envelope.h"

#include "adapters/json/base64.h"
#include "adapters/json/go_json.h"
#include "adapters/json/k8s_names.h"

namespace sedna::json {
namespace {

Status ReadHeaderField(const RawJson& header, const char* key, std::string* out) {
  const RawJson* v = header.Find(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) {
    return Status::Error(std::string("header.") + key + ": expected a string, got " +
                         v->type_name());
  }
  *out = v->string_value();
  return Status::Ok();
}

}  // namespace

Result<Frame> DecodeFrame(std::string_view text) {
  auto parsed = RawJson::Parse(text, kMaxFrameValues);
  if (!parsed.ok()) return parsed.status();
  const RawJson& root = *parsed;
  if (root.is_null()) return Frame{{}, {}, true};  // Go: null leaves the zero Message
  if (!root.is_object()) {
    return Result<Frame>::Error(std::string("frame: expected an object, got ") + root.type_name());
  }
  Frame frame;
  if (const RawJson* h = root.Find("header"); h != nullptr && !h->is_null()) {
    if (!h->is_object()) {
      return Result<Frame>::Error(std::string("header: expected an object, got ") + h->type_name());
    }
    for (auto [key, out] : {std::pair{"namespace", &frame.header.ns},
                            std::pair{"resourceKind", &frame.header.resource_kind},
                            std::pair{"resourceName", &frame.header.resource_name},
                            std::pair{"operation", &frame.header.operation}}) {
      if (Status s = ReadHeaderField(*h, key, out); !s.ok()) return s;
    }
    // Empty is Go's zero value (an object frame always names its object, see the decoders).
    if (!frame.header.ns.empty()) {
      if (Status s = CheckNamespace("header.namespace", frame.header.ns); !s.ok()) return s;
    }
    if (!frame.header.resource_name.empty()) {
      if (Status s = CheckObjectName("header.resourceName", frame.header.resource_name); !s.ok()) {
        return s;
      }
    }
  }
  const RawJson* c = root.Find("content");
  if (c == nullptr || c->is_null()) {
    frame.content_null = true;
    return frame;
  }
  if (!c->is_string()) {
    return Result<Frame>::Error(std::string("content: expected a base64 string, got ") +
                                c->type_name());
  }
  auto bytes = Base64Decode(c->string_value());
  if (!bytes.ok()) return bytes.status().With("content: invalid base64");
  frame.content = std::move(*bytes);
  return frame;
}

Result<MessageHeader> DecodeFrameHeader(std::string_view text) {
  auto parsed = RawJson::Parse(text, kMaxFrameValues);
  if (!parsed.ok()) return parsed.status();
  const RawJson* h = parsed->Find("header");
  if (h == nullptr || !h->is_object()) return Result<MessageHeader>::Error("no header object");
  MessageHeader header;
  for (auto [key, out] :
       {std::pair{"namespace", &header.ns}, std::pair{"resourceKind", &header.resource_kind},
        std::pair{"resourceName", &header.resource_name},
        std::pair{"operation", &header.operation}}) {
    (void)ReadHeaderField(*h, key, out);
  }
  return header;
}

namespace {

void AppendBareHeader(std::string& out, const MessageHeader& header) {
  out += "{\"namespace\":";
  AppendGoString(out, header.ns);
  out += ",\"resourceKind\":";
  AppendGoString(out, header.resource_kind);
  out += ",\"resourceName\":";
  AppendGoString(out, header.resource_name);
  out += ",\"operation\":";
  AppendGoString(out, header.operation);
  out += '}';
}

}  // namespace

std::string EncodeBareHeader(const MessageHeader& header) {
  std::string out;
  AppendBareHeader(out, header);
  return out;
}

std::string EncodeFrame(const MessageHeader& header, std::string_view content) {
  std::string out;
  // Exact unless a header field needs escaping.
  out.reserve(91 + header.ns.size() + header.resource_kind.size() + header.resource_name.size() +
              header.operation.size() + (content.size() + 2) / 3 * 4);
  out += "{\"header\":";
  AppendBareHeader(out, header);
  out += ",\"content\":\"";
  Base64Append(out, content);  // base64 needs no escaping
  out += "\"}";
  return out;
}

}  // namespace sedna::json
