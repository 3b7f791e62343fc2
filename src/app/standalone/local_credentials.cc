#include "app/standalone/local_credentials.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "adapters/fs/files.h"
#include "adapters/json/go_json.h"
#include "core/resources.h"

namespace sedna::app {

using NJ = nlohmann::json;

std::pair<std::string, std::string> CredentialRef(const nlohmann::json& obj) {
  std::pair<std::string, std::string> ref{"default", ""};
  if (!obj.is_object()) return ref;
  auto md = obj.find("metadata");
  if (md != obj.end() && md->is_object()) {
    auto ns = md->find("namespace");
    if (ns != md->end() && ns->is_string() && !ns->get<std::string>().empty()) ref.first = *ns;
  }
  auto spec = obj.find("spec");
  if (spec != obj.end() && spec->is_object()) {
    auto name = spec->find("credentialName");
    if (name != spec->end() && name->is_string()) ref.second = *name;
  }
  return ref;
}

std::string CredentialJson(const manifest::Secret& secret) {
  std::map<std::string, std::string> merged = secret.annotations;  // std::map: bytewise order
  for (const auto& [key, value] : secret.data) merged[key] = value;
  std::string out = "{";
  for (const auto& [key, value] : merged) {
    if (out.size() > 1) out += ',';
    json::AppendGoString(out, key);
    out += ':';
    json::AppendGoString(out, value);
  }
  out += '}';
  return out;
}

CredentialInjection InjectCredential(const std::string& object_json, const SecretMap& secrets) {
  CredentialInjection r{object_json, "", false};
  NJ obj = NJ::parse(object_json, nullptr, false);
  const auto [ns, name] = CredentialRef(obj);
  if (name.empty()) return r;
  r.secret = ns + "/" + name;
  auto it = secrets.find({ns, name});
  if (it == secrets.end()) {
    r.missing = true;
    return r;
  }
  NJ& md = obj["metadata"];
  if (!md.is_object()) md = NJ::object();
  NJ& annotations = md["annotations"];
  if (!annotations.is_object()) annotations = NJ::object();
  annotations[core::kCredentialAnnotation] = CredentialJson(it->second);
  r.object_json = obj.dump(-1, ' ', false, NJ::error_handler_t::replace);
  return r;
}

WorkerS3Env S3EnvForWorker(const std::vector<WorkerUrl>& urls, const SecretMap& secrets) {
  WorkerS3Env r;
  // Why URLs got no credentials of their own: (owner, cause) -> their variables, first seen first.
  struct Problem {
    std::string owner, cause;
    std::vector<std::string> vars;
  };
  std::vector<Problem> problems;
  auto note = [&](const WorkerUrl& u, const std::string& cause) {
    for (auto& p : problems) {
      if (p.owner != u.owner || p.cause != cause) continue;
      if (std::find(p.vars.begin(), p.vars.end(), u.var) == p.vars.end()) p.vars.push_back(u.var);
      return;
    }
    problems.push_back({u.owner, cause, {u.var}});
  };
  for (const auto& u : urls) {
    if (!fs::IsS3Url(u.url)) continue;
    const bool fallback = u.credential_name.empty() && !u.fallback_credential_name.empty();
    const std::string& name = fallback ? u.fallback_credential_name : u.credential_name;
    if (name.empty()) {
      note(u, u.fallback_owner.empty()
                  ? "it sets no spec.credentialName"
                  : "it sets no spec.credentialName, nor does " + u.fallback_owner);
      continue;
    }
    const std::string ref = u.ns + "/" + name;
    const std::string whose = fallback ? "the Secret of " + u.fallback_owner + ", " : "its Secret ";
    auto it = secrets.find({u.ns, name});
    if (it == secrets.end()) {
      note(u, whose + ref + " (spec.credentialName) is not in the manifests");
      continue;
    }
    // The sedna.io/credential map (§P2.5): annotations, then data over them.
    std::map<std::string, std::string> merged = it->second.annotations;
    for (const auto& [k, v] : it->second.data) merged[k] = v;
    auto get = [&](const char* key) {
      auto f = merged.find(key);
      return f == merged.end() ? std::string() : f->second;
    };
    const std::string endpoint = get("s3-endpoint");
    if (endpoint.empty()) {
      note(u, whose + ref + " has no s3-endpoint");
      continue;
    }
    std::map<std::string, std::string> env{
        {"S3_ENDPOINT_URL", (get("s3-usehttps") == "0" ? "http://" : "https://") + endpoint},
        {"ACCESS_KEY_ID", get("ACCESS_KEY_ID")},
        {"SECRET_ACCESS_KEY", get("SECRET_ACCESS_KEY")}};
    if (r.env.empty()) {
      r.env = std::move(env);
      r.secret = ref;
      for (const char* key : {"ACCESS_KEY_ID", "SECRET_ACCESS_KEY"}) {
        if (!merged.count(key)) {
          r.warnings.push_back("Secret " + ref + " has no " + key + "; the worker gets " + key +
                               " empty");
        }
      }
    } else if (env != r.env) {
      note(u, whose + ref + " differs from Secret " + r.secret);
    }
  }
  const std::string outcome =
      r.env.empty() ? "the worker gets no S3 variables (S3_ENDPOINT_URL, ACCESS_KEY_ID, "
                      "SECRET_ACCESS_KEY; a container env may set them)"
                    : "the worker gets the S3 variables of Secret " + r.secret;
  for (const auto& p : problems) {
    std::string vars;
    for (const auto& v : p.vars) vars += (vars.empty() ? "" : ", ") + v;
    r.warnings.push_back(vars + ": s3:// URL" + (p.vars.size() > 1 ? "s" : "") + " of " + p.owner +
                         ": " + p.cause + "; " + outcome);
  }
  return r;
}

}  // namespace sedna::app
