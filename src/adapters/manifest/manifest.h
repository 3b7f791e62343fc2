// Standalone mode: the Sedna YAML manifests a user would `kubectl apply`, turned into the JSON
// objects the GM would send for them (docs/protocol.md §P2), each validated by the sedna_json
// decoder for its kind.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sedna::manifest {

struct ManifestObject {
  std::string kind;  // "Dataset" | "Model" | "IncrementalLearningJob" | "LifelongLearningJob"
  std::string ns;    // metadata.namespace, "default" when absent, null or empty
  std::string name;  // metadata.name
  // The object as compact JSON in manifest key order, Go-marshalled text (strings HTML-escaped
  // as Go does, floats printed as Go prints a float64), with metadata.namespace filled in. It
  // decodes without error with the json::Decode* function for `kind`.
  std::string json;
  std::string source;  // "path/to/file.yaml (document 2)"
};

// A Secret (apiVersion v1), reduced to what the GM's credential injection reads (§P2.5). Its
// values are secret: keep them in memory only, never log them, store them or write them to a
// file. No message of the loader contains a value of a Secret document.
struct Secret {
  std::string ns;    // metadata.namespace, "default" when absent, null or empty
  std::string name;  // metadata.name
  // metadata.annotations (a null value reads as "").
  std::map<std::string, std::string> annotations;
  // `data` (base64-decoded; null reads as "") with `stringData` merged over it, as the API server
  // merges them: a key in both gets the stringData value.
  std::map<std::string, std::string> data;
  std::string source;  // "path/to/file.yaml (document 2)"

  bool operator==(const Secret& o) const {
    return ns == o.ns && name == o.name && annotations == o.annotations && data == o.data;
  }
};

struct LoadResult {
  // Accepted objects in file order (a directory's files in byte order of their names).
  std::vector<ManifestObject> objects;
  // Accepted Secrets in file order.
  std::vector<Secret> secrets;
  // Documents skipped on purpose, e.g. `x.yaml (document 3): kind "ConfigMap" is not handled in
  // standalone mode; skipped`.
  std::vector<std::string> warnings;
  // One per rejected document (or unreadable path); the other documents still load. Each names
  // the source and document number, then the object ("Kind ns/name") when it was identified,
  // e.g. `il.yaml (document 2, IncrementalLearningJob default/helmet): spec.dataset.trainProb:
  // expected a number, got string`; YAML syntax errors give "line L, column C" (1-based, in the
  // file).
  std::vector<std::string> errors;
};

// Loads one file (whatever its name) or every *.yaml / *.yml regular file directly inside a
// directory (not recursive; names starting with '.' are skipped). A missing or unreadable path
// is an error, a directory without such files a warning. Never throws.
//
// Documents are separated as kubectl separates them: a line starting with "---" followed only by
// blanks or a comment. They are numbered from 1 within their file; a leading "---" does not
// start a second document and empty documents are skipped silently.
//
// Scalars are typed as kubectl (go-yaml v2) types them: a plain scalar that reads as an int
// (decimal, 0x, 0o, 0b, leading-0 octal, '_' ignored), a float, a bool (true/false, yes/no,
// on/off, y/n in their usual capitalisations) or null (~, null, empty) becomes that JSON type;
// a quoted or block scalar is always a string; !!str/!!int/!!float/!!bool/!!null tags are
// honoured. Timestamps stay strings. Merge keys (<<) are expanded. Rejected: duplicate keys in
// a mapping, keys that are null or not scalars, .inf/.nan, nesting deeper than 256 or
// expanding past 200,000 values.
//
// A document must be a mapping with a string `kind`. Kinds other than the four above and Secret
// are warned about and skipped. For the four: metadata.name must be a DNS-1123 subdomain and
// metadata.namespace (if set) a DNS-1123 label, apiVersion must be "sedna.io/<version>", the
// JSON must decode with its json::Decode* function, and (kind, namespace, name) must not repeat
// an object loaded earlier in the same call (the later document is rejected, naming both).
//
// A Secret (checked as the API server checks it; other fields such as `type` are ignored):
// apiVersion "v1", metadata.name and .namespace as above, metadata.annotations string values,
// `data` base64 strings (Go's StdEncoding: padded, line breaks ignored) and `stringData` strings,
// each key made of letters, digits, '-', '_' and '.' (not "." and not starting with ".."), 1 MiB
// in all. An error names the file, the document, the Secret and the key, e.g. `s.yaml (document
// 1, Secret default/creds): data["ACCESS_KEY_ID"]: not valid base64 ...`, but never a value:
// YAML errors inside a Secret document leave the offending text out.
LoadResult LoadManifests(const std::string& path);

// As LoadManifests for one in-memory document stream; `source` stands for the file name in
// ManifestObject::source and in messages.
LoadResult LoadManifestText(const std::string& text, const std::string& source);

}  // namespace sedna::manifest
