// Kubernetes object names at the wire edges: every name and namespace the GM or a worker sends
// ends up in store keys ("ns/kind/name"), log lines and paths, so only what the API server itself
// accepts is taken (a '/' in a name would otherwise make another object's key).
#pragma once

#include <string_view>

#include "core/status.h"

namespace sedna::json {

// A namespace: a DNS-1123 label, at most 63 of [a-z0-9-], starting and ending with [a-z0-9].
// Error: `<field>: "Ns" is not a valid namespace: ...`, naming the field and the (escaped,
// shortened) value; "" is "<field>: missing".
Status CheckNamespace(std::string_view field, std::string_view value);

// An object name: a DNS-1123 subdomain, at most 253 characters, '.'-separated labels of
// [a-z0-9-] starting and ending with [a-z0-9]. A '/' gets its own message
// (`<field>: "a/b" must not contain '/'`); "" is "<field>: missing".
Status CheckObjectName(std::string_view field, std::string_view value);

}  // namespace sedna::json
