#include "adapters/manifest/manifest.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "adapters/json/base64.h"
#include "adapters/json/go_json.h"
#include "adapters/json/resource_codec.h"
#include "adapters/manifest/yaml_to_json.h"
#include "core/status.h"

namespace sedna::manifest {
namespace {

using json::GoString;
using json::RawJson;

constexpr std::string_view kHandledKinds[] = {"Dataset", "Model", "IncrementalLearningJob",
                                              "LifelongLearningJob"};

// ---- splitting a stream into documents -------------------------------------------------------

struct Chunk {
  std::string text;
  int first_line = 0;    // 0-based line of text's first line in the stream
  bool numbered = true;  // counts as a document even when it holds nothing
};

bool IsBlankOrComment(std::string_view line) {
  size_t i = line.find_first_not_of(" \t\r");
  return i == std::string_view::npos || line[i] == '#';
}

// kubectl's document separator (k8s.io/apimachinery yaml.YAMLReader): "---" at the start of a
// line, followed by nothing but blanks or a comment.
bool IsSeparator(std::string_view line) {
  return line.substr(0, 3) == "---" && IsBlankOrComment(line.substr(3));
}

// The text between separators. The part before the first separator is a document only when it
// has content; if it holds only directives (%YAML, %TAG) it stays attached to the document the
// first separator starts.
std::vector<Chunk> SplitDocuments(std::string_view text) {
  std::vector<Chunk> chunks(1);
  bool head_content = false, head_directive = false, head_merged = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    size_t next = std::min(end + 1, text.size());
    std::string_view line = text.substr(pos, end - pos);
    bool in_head = chunks.size() == 1 && !head_merged;
    if (IsSeparator(line) && !(in_head && head_directive && !head_content)) {
      chunks.push_back(Chunk{"", line_no + 1, true});
    } else {
      if (in_head) {
        if (IsSeparator(line)) {
          head_merged = true;
        } else if (!line.empty() && line[0] == '%') {
          head_directive = true;
        } else if (!IsBlankOrComment(line)) {
          head_content = true;
        }
      }
      chunks.back().text.append(text.substr(pos, next - pos));
    }
    pos = next;
    ++line_no;
  }
  chunks[0].numbered = head_content || head_merged;
  return chunks;
}

// ---- parsing ---------------------------------------------------------------------------------

// An event sink that keeps only the mark of the most recent node.
class MarkRecorder : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { last = mark; }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { last = mark; }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    last = mark;
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    last = mark;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    last = mark;
  }
  void OnMapEnd() override {}

  YAML::Mark last = YAML::Mark::null_mark();
};

// YAML::LoadAll(text), except that it returns an error instead of looping forever (and
// allocating without bound) where yaml-cpp 0.7's parser keeps reporting empty documents without
// consuming input, e.g. for "{}," or "," (jbeder/yaml-cpp#1040). Parse errors throw
// YAML::Exception as LoadAll does.
Result<std::vector<YAML::Node>> LoadAllDocuments(const std::string& text, int line_offset) {
  // Each document after the first starts on a new line, so n lines hold at most n + 1.
  const size_t limit = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 2;
  std::istringstream in(text);
  YAML::Parser parser(in);
  MarkRecorder recorder;
  for (size_t n = 0; parser.HandleNextDocument(recorder);) {
    if (++n > limit) {
      return Result<std::vector<YAML::Node>>::Error(AtMark(recorder.last, line_offset) +
                                                    "invalid YAML: unexpected content here");
    }
  }
  return YAML::LoadAll(text);
}

// ---- Secrets: no value in any message --------------------------------------------------------

// Whether a chunk of the stream may hold a Secret document. Its YAML syntax errors are then
// redacted (cheap and conservative: any mention of "Secret" counts).
bool MayHoldSecret(std::string_view text) { return text.find("Secret") != std::string_view::npos; }

// A yaml-cpp message without the text it quotes from the input: the character of a bad escape
// or the digits of a bad \u escape, which would be part of a Secret's value.
std::string RedactYamlMessage(const std::string& msg) {
  for (std::string_view prefix : {std::string_view(YAML::ErrorMsg::INVALID_ESCAPE),
                                  std::string_view(YAML::ErrorMsg::INVALID_UNICODE)}) {
    if (msg.compare(0, prefix.size(), prefix) == 0) {
      std::string_view head = prefix;
      while (!head.empty() && (head.back() == ' ' || head.back() == ':')) head.remove_suffix(1);
      return std::string(head) + " (the text is not shown: the document may be a Secret)";
    }
  }
  return msg;
}

// Whether a parsed document is a mapping with `kind: Secret`: its conversion errors must not
// quote scalars.
bool IsSecretDocument(const YAML::Node& doc) {
  if (!doc.IsMap()) return false;
  for (const auto& member : doc) {
    const YAML::Node k = member.first;
    const YAML::Node v = member.second;
    if (k.IsScalar() && k.Scalar() == "kind" && v.IsScalar() && v.Scalar() == "Secret") {
      return true;
    }
  }
  return false;
}

// ---- object checks ---------------------------------------------------------------------------

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z'); }

// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsDnsLabel(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// Kubernetes' IsDNS1123Subdomain: dot-separated labels, at most 253 characters.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsDnsLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// `root` with metadata.namespace set to `ns`: replaced in place when present, else inserted
// right after metadata.name (where Go's ObjectMeta puts it).
RawJson WithNamespace(const RawJson& root, const std::string& ns) {
  std::vector<std::pair<std::string, RawJson>> members;
  for (size_t i = 0; i < root.size(); ++i) {
    if (root.key(i) != "metadata") {
      members.emplace_back(root.key(i), root[i]);
      continue;
    }
    const RawJson& md = root[i];
    const bool has_ns = md.Find("namespace") != nullptr;
    std::vector<std::pair<std::string, RawJson>> md_members;
    for (size_t j = 0; j < md.size(); ++j) {
      if (md.key(j) == "namespace") {
        md_members.emplace_back("namespace", RawJson::String(ns));
        continue;
      }
      md_members.emplace_back(md.key(j), md[j]);
      if (md.key(j) == "name" && !has_ns) {
        md_members.emplace_back("namespace", RawJson::String(ns));
      }
    }
    members.emplace_back("metadata", RawJson::Object(std::move(md_members)));
  }
  return RawJson::Object(std::move(members));
}

Status DecodeAs(const std::string& kind, const std::string& text) {
  if (kind == "Dataset") return json::DecodeDataset(text).status();
  if (kind == "Model") return json::DecodeModel(text).status();
  if (kind == "IncrementalLearningJob") return json::DecodeIlJob(text).status();
  return json::DecodeLlJob(text).status();
}

// The decoder's message without its "Kind ns/name: " prefix (the caller names the object).
std::string WithoutIdentity(const std::string& message, const std::string& identity) {
  const std::string prefix = identity + ": ";
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

std::string ExpectedError(std::string_view path, std::string_view expected, const RawJson& v) {
  return std::string(path) + ": expected " + std::string(expected) + ", got " + v.type_name();
}

// Kubernetes' IsConfigMapKey (the rule for Secret data keys): [-._a-zA-Z0-9]+, at most 253
// characters, not "." and not starting with "..".
bool IsSecretKey(std::string_view key) {
  if (key.empty() || key.size() > 253 || key == "." || key.substr(0, 2) == "..") return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
           c == '.';
  });
}

enum class SecretValues { kAnnotations, kBase64, kPlain };

// One string map of a Secret (metadata.annotations, data or stringData) into `out`; absent or null
// leaves it empty, a null value reads as "" (as Go decodes it). Messages name `path` and the key,
// never a value.
Status ReadSecretMap(const RawJson* v, std::string_view path, SecretValues values,
                     std::map<std::string, std::string>* out) {
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_object()) return Status::Error(ExpectedError(path, "an object", *v));
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string key(v->key(i));
    const RawJson& value = (*v)[i];
    const std::string at = std::string(path) + "[" + GoString(key) + "]";
    if (values != SecretValues::kAnnotations && !IsSecretKey(key)) {
      return Status::Error(std::string(path) + ": key " + GoString(key) +
                           " is not a valid Secret key (letters, digits, '-', '_' and '.', not "
                           "\".\" and not starting with \"..\", at most 253 characters)");
    }
    if (value.is_null()) {
      (*out)[key] = "";
      continue;
    }
    if (!value.is_string()) {
      return Status::Error(ExpectedError(
          at, values == SecretValues::kBase64 ? "a base64 string" : "a string", value));
    }
    if (values != SecretValues::kBase64) {
      (*out)[key] = value.string_value();
      continue;
    }
    // Base64Decode's message quotes the offending character: not shown, it is part of a secret.
    auto decoded = json::Base64Decode(value.string_value());
    if (!decoded.ok()) {
      return Status::Error(at +
                           ": not valid base64 (standard alphabet, padded with '='; plain text "
                           "belongs under stringData); the value is not shown");
    }
    (*out)[key] = std::move(*decoded);
  }
  return Status::Ok();
}

// ---- loading ---------------------------------------------------------------------------------

class Loader {
 public:
  LoadResult result;

  void LoadPath(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found || ec == std::errc::no_such_file_or_directory) {
      result.errors.push_back(path + ": no such file or directory");
      return;
    }
    if (ec) {
      result.errors.push_back(path + ": " + ec.message());
      return;
    }
    if (!fs::is_directory(st)) {
      LoadFile(path);
      return;
    }
    std::vector<std::string> names;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.') continue;
      auto ends_with = [&](std::string_view ext) {
        return name.size() > ext.size() &&
               name.compare(name.size() - ext.size(), ext.size(), ext.data(), ext.size()) == 0;
      };
      if (!ends_with(".yaml") && !ends_with(".yml")) continue;
      std::error_code file_ec;
      if (!fs::is_regular_file(it->path(), file_ec)) continue;  // follows symlinks
      names.push_back(std::move(name));
    }
    if (ec) {
      result.errors.push_back(path + ": cannot list the directory: " + ec.message());
      return;
    }
    std::sort(names.begin(), names.end());
    if (names.empty()) result.warnings.push_back(path + ": no *.yaml or *.yml files");
    for (const std::string& name : names) LoadFile((fs::path(path) / name).string());
  }

  void LoadText(std::string_view text, const std::string& source) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
    int doc_no = 0;
    for (const Chunk& chunk : SplitDocuments(text)) {
      if (!chunk.numbered) continue;
      std::vector<YAML::Node> docs;
      try {
        auto loaded = LoadAllDocuments(chunk.text, chunk.first_line);
        if (!loaded.ok()) {
          result.errors.push_back(Where(source, ++doc_no) + ": " + loaded.message());
          continue;
        }
        docs = std::move(*loaded);
      } catch (const YAML::Exception& e) {
        ++doc_no;
        result.errors.push_back(Where(source, doc_no) + ": " + AtMark(e.mark, chunk.first_line) +
                                (MayHoldSecret(chunk.text) ? RedactYamlMessage(e.msg) : e.msg));
        continue;
      } catch (const std::exception& e) {
        ++doc_no;
        result.errors.push_back(Where(source, doc_no) + ": " + e.what());
        continue;
      } catch (...) {
        ++doc_no;
        result.errors.push_back(Where(source, doc_no) + ": unexpected error");
        continue;
      }
      if (docs.empty()) ++doc_no;  // a document with nothing but comments
      for (const YAML::Node& doc : docs) {
        ++doc_no;
        try {
          LoadDocument(doc, chunk.first_line, source, doc_no);
        } catch (const std::exception& e) {
          result.errors.push_back(Where(source, doc_no) + ": " + e.what());
        } catch (...) {
          result.errors.push_back(Where(source, doc_no) + ": unexpected error");
        }
      }
    }
  }

 private:
  // "file (document N)", or "file (document N, identity)".
  static std::string Where(const std::string& source, int doc_no,
                           const std::string& identity = "") {
    return source + " (document " + std::to_string(doc_no) +
           (identity.empty() ? "" : ", " + identity) + ")";
  }

  void LoadFile(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      result.errors.push_back(file + ": cannot open: " + std::generic_category().message(errno));
      return;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
      result.errors.push_back(file + ": read error");
      return;
    }
    LoadText(ss.str(), file);
  }

  void LoadDocument(const YAML::Node& doc, int line_offset, const std::string& file, int doc_no) {
    const std::string where = Where(file, doc_no);
    auto fail = [&](const std::string& prefix, const std::string& message) {
      result.errors.push_back(prefix + ": " + message);
    };
    auto converted = YamlToJson(doc, line_offset, IsSecretDocument(doc));
    if (!converted.ok()) return fail(where, converted.message());
    const RawJson& root = *converted;
    if (root.is_null()) return;  // empty document
    if (!root.is_object()) {
      return fail(where,
                  std::string("expected a mapping (a Kubernetes object), got ") + root.type_name());
    }

    const RawJson* kind_v = root.Find("kind");
    if (kind_v == nullptr || kind_v->is_null() ||
        (kind_v->is_string() && kind_v->string_value().empty())) {
      return fail(where, "kind: missing");
    }
    if (!kind_v->is_string()) return fail(where, ExpectedError("kind", "a string", *kind_v));
    const std::string kind(kind_v->string_value());
    const bool is_secret = kind == "Secret";
    if (!is_secret && std::find(std::begin(kHandledKinds), std::end(kHandledKinds), kind) ==
                          std::end(kHandledKinds)) {
      result.warnings.push_back(where + ": kind " + GoString(kind) +
                                " is not handled in standalone mode; skipped");
      return;
    }

    const RawJson* md = root.Find("metadata");
    if (md != nullptr && !md->is_null() && !md->is_object()) {
      return fail(where, ExpectedError("metadata", "an object", *md));
    }
    const RawJson* name_v = md != nullptr ? md->Find("name") : nullptr;
    if (name_v == nullptr || name_v->is_null() ||
        (name_v->is_string() && name_v->string_value().empty())) {
      return fail(where, kind + ": metadata.name: missing");
    }
    if (!name_v->is_string()) {
      return fail(where, kind + ": " + ExpectedError("metadata.name", "a string", *name_v));
    }
    const std::string name(name_v->string_value());
    if (!IsDnsSubdomain(name)) {
      return fail(where, kind + ": metadata.name: " + GoString(name) +
                             " is not a valid name (lower-case letters, digits, '-' and '.', "
                             "starting and ending with a letter or digit, at most 253 "
                             "characters)");
    }
    std::string ns = "default";
    if (const RawJson* ns_v = md->Find("namespace"); ns_v != nullptr && !ns_v->is_null()) {
      if (!ns_v->is_string()) {
        return fail(where, kind + " " + name + ": " +
                               ExpectedError("metadata.namespace", "a string", *ns_v));
      }
      if (!ns_v->string_value().empty()) ns = ns_v->string_value();
      if (ns.size() > 63 || !IsDnsLabel(ns)) {
        return fail(where, kind + " " + name + ": metadata.namespace: " + GoString(ns) +
                               " is not a valid namespace (lower-case letters, digits and '-', "
                               "starting and ending with a letter or digit, at most 63 "
                               "characters)");
      }
    }
    const std::string identity = kind + " " + ns + "/" + name;
    const std::string who = Where(file, doc_no, identity);
    if (is_secret) return LoadSecret(root, ns, name, where, who);

    const RawJson* api_v = root.Find("apiVersion");
    if (api_v == nullptr || api_v->is_null() ||
        (api_v->is_string() && api_v->string_value().empty())) {
      return fail(who, "apiVersion: missing (expected \"sedna.io/v1alpha1\")");
    }
    if (!api_v->is_string()) return fail(who, ExpectedError("apiVersion", "a string", *api_v));
    const std::string api(api_v->string_value());
    constexpr std::string_view kGroup = "sedna.io/";
    if (api.compare(0, kGroup.size(), kGroup) != 0 || api.size() == kGroup.size() ||
        api.find('/', kGroup.size()) != std::string::npos) {
      return fail(who, "apiVersion: " + GoString(api) +
                           " is not in the Sedna API group (expected \"sedna.io/<version>\")");
    }

    std::string text = WithNamespace(root, ns).DumpInOrder();
    if (Status st = DecodeAs(kind, text); !st.ok()) {
      return fail(who, WithoutIdentity(st.message(), identity));
    }
    auto [first, inserted] = seen_.emplace(std::make_tuple(kind, ns, name), where);
    if (!inserted) return fail(who, "duplicate of " + identity + " in " + first->second);
    result.objects.push_back(ManifestObject{kind, ns, name, std::move(text), where});
  }

  // A Secret document whose metadata.name and .namespace were checked: `where` names the document,
  // `who` also the Secret.
  void LoadSecret(const RawJson& root, const std::string& ns, const std::string& name,
                  const std::string& where, const std::string& who) {
    auto fail = [&](const std::string& message) { result.errors.push_back(who + ": " + message); };
    const RawJson* api_v = root.Find("apiVersion");
    if (api_v == nullptr || api_v->is_null() ||
        (api_v->is_string() && api_v->string_value().empty())) {
      return fail("apiVersion: missing (expected \"v1\")");
    }
    if (!api_v->is_string()) return fail(ExpectedError("apiVersion", "a string", *api_v));
    if (api_v->string_value() != "v1") {
      return fail("apiVersion: " + GoString(api_v->string_value()) +
                  " is not the Secret's API version (expected \"v1\")");
    }
    Secret secret{ns, name, {}, {}, where};
    const RawJson* md = root.Find("metadata");
    if (Status st = ReadSecretMap(md->Find("annotations"), "metadata.annotations",
                                  SecretValues::kAnnotations, &secret.annotations);
        !st.ok()) {
      return fail(st.message());
    }
    if (Status st = ReadSecretMap(root.Find("data"), "data", SecretValues::kBase64, &secret.data);
        !st.ok()) {
      return fail(st.message());
    }
    std::map<std::string, std::string> string_data;
    if (Status st = ReadSecretMap(root.Find("stringData"), "stringData", SecretValues::kPlain,
                                  &string_data);
        !st.ok()) {
      return fail(st.message());
    }
    for (auto& [key, value] : string_data) secret.data[key] = std::move(value);
    // The API server's limit (validation.ValidateSecret: MaxSecretSize over keys and values).
    constexpr size_t kMaxSecretSize = 1 << 20;
    size_t total = 0;
    for (const auto& [key, value] : secret.data) total += key.size() + value.size();
    if (total > kMaxSecretSize) {
      return fail("data: the Secret holds " + std::to_string(total) + " bytes, more than the " +
                  std::to_string(kMaxSecretSize) + " allowed");
    }
    auto [first, inserted] = seen_.emplace(std::make_tuple("Secret", ns, name), where);
    if (!inserted) return fail("duplicate of Secret " + ns + "/" + name + " in " + first->second);
    result.secrets.push_back(std::move(secret));
  }

  // (kind, namespace, name) -> source of the object accepted first.
  std::map<std::tuple<std::string, std::string, std::string>, std::string> seen_;
};

}  // namespace

LoadResult LoadManifests(const std::string& path) {
  Loader loader;
  try {
    loader.LoadPath(path);
  } catch (const std::exception& e) {
    loader.result.errors.push_back(path + ": " + e.what());
  } catch (...) {
    loader.result.errors.push_back(path + ": unexpected error");
  }
  return std::move(loader.result);
}

LoadResult LoadManifestText(const std::string& text, const std::string& source) {
  Loader loader;
  try {
    loader.LoadText(text, source);
  } catch (const std::exception& e) {
    loader.result.errors.push_back(source + ": " + e.what());
  } catch (...) {
    loader.result.errors.push_back(source + ": unexpected error");
  }
  return std::move(loader.result);
}

}  // namespace sedna::manifest
