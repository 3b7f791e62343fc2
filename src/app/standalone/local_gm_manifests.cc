// LocalGm::Impl, manifests: polled for changes; what they add, change or remove is sent to the LC.
#include "app/standalone/local_gm_impl.h"

#include <sys/stat.h>
#include <boost/asio/steady_timer.hpp>
#include "adapters/log/log.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <vector>
#include "core/ascii.h"

namespace sedna::app {

namespace asio = boost::asio;
using NJ = nlohmann::json;
using local_gm_detail::kScope;

namespace {

// "dir/x.yaml (document 2, ...)" -> "dir/x.yaml"; also for error messages that start that way.
std::string SourceFile(const std::string& source) {
  auto cut = source.find(" (document");
  if (cut == std::string::npos) cut = source.find(':');
  return source.substr(0, cut);
}

std::string SourceDir(const std::string& source) {
  std::string file = source.substr(0, source.find(" (document"));
  auto slash = file.rfind('/');
  std::string dir = slash == std::string::npos ? "." : file.substr(0, slash);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) return dir;
  std::string r = real;
  std::free(real);
  return r;
}

// Standalone manifests may use paths relative to the manifest's directory.
void ResolvePath(NJ& node, const char* key, const std::string& base) {
  if (!node.is_object() || !node.contains(key) || !node[key].is_string()) return;
  std::string v = node[key];
  if (v.empty() || v[0] == '/' || v.find("://") != std::string::npos) return;
  node[key] = std::filesystem::path(base + "/" + v).lexically_normal().string();
}

void ResolveTemplate(NJ& spec_part, const std::string& base) {
  if (!spec_part.is_object() || !spec_part.contains("template")) return;
  NJ& t = spec_part["template"];
  if (!t.contains("spec") || !t["spec"].contains("containers")) return;
  for (auto& c : t["spec"]["containers"]) ResolvePath(c, "workingDir", base);
}

}  // namespace

// ------------------------------------------------------------------ manifests

std::string LocalGm::Impl::ManifestSignature() {
  auto stamp = [](const std::string& path) -> std::string {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return path + ":missing";
    return path + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_size);
  };
  std::error_code ec;
  if (!std::filesystem::is_directory(opt.manifest_path, ec)) return stamp(opt.manifest_path);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(opt.manifest_path, ec)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".yaml" || ext == ".yml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::string sig;
  for (const auto& f : files) sig += stamp(f) + "|";
  return sig;
}

bool LocalGm::Impl::Load(bool first) {
  manifest::LoadResult r = manifest::LoadManifests(opt.manifest_path);
  for (const auto& w : r.warnings) spdlog::warn("manifests: {}", w);
  for (const auto& e : r.errors) spdlog::error("manifests: {}", e);
  if (first && r.objects.empty()) return false;
  // A file with an error is not a removal: the objects (and Secrets) last loaded from it keep
  // their previous version.
  std::set<std::string> broken;
  for (const auto& e : r.errors) broken.insert(SourceFile(e));
  // Secrets first: the objects sent below carry their credentials.
  const auto changed_secrets = UpdateSecrets(r.secrets, broken);
  std::map<std::string, bool> seen;
  std::set<std::string> sent;  // object keys sent below
  // Datasets and Models first, then jobs (a job's references resolve on arrival).
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& o : r.objects) {
      const bool is_job = o.kind == "IncrementalLearningJob" || o.kind == "LifelongLearningJob";
      if (is_job != (pass == 1)) continue;
      NJ obj = NJ::parse(o.json, nullptr, false);
      if (!obj.is_object()) continue;
      const std::string base = SourceDir(o.source);
      NJ& spec = obj["spec"];
      if (o.kind == "Dataset" || o.kind == "Model") ResolvePath(spec, "url", base);
      if (is_job) {
        ResolvePath(spec, "outputDir", base);
        for (const char* part : {"trainSpec", "evalSpec", "deploySpec"}) {
          if (spec.contains(part)) ResolveTemplate(spec[part], base);
        }
      }
      const std::string kind = core::AsciiLowered(o.kind);
      const std::string key = core::ResourceKey(o.ns, kind, o.name);
      seen[key] = true;
      source_file[key] = SourceFile(o.source);
      const std::string text = obj.dump();
      if (!is_job) {
        if (plain[key] != text) {
          plain[key] = text;
          DeliverObject(kind, o.ns, o.name, text);
          sent.insert(key);
          if (!first) spdlog::info("manifests: {} applied", key);
        }
        continue;
      }
      auto& slot = jobs[key];
      if (!slot) {
        slot = std::make_unique<GmJob>();
        slot->kind = o.kind;
        slot->gm_kind = o.kind == "IncrementalLearningJob" ? core::gm::JobKind::kIncremental
                                                           : core::gm::JobKind::kLifelong;
        slot->ns = o.ns;
        slot->name = o.name;
        slot->key = key;
        slot->object = obj;
        slot->signature = text;
        const bool resumed = Restore(*slot);
        ApplySpec(*slot);
        spdlog::info("manifests: {} loaded from {}", key, o.source);
        SendJob(*slot);
        sent.insert(key);
        if (resumed && ServedBefore(*slot)) StartInference(*slot);  // it served before
        Settle(*slot);
      } else if (slot->signature != text) {
        slot->object = obj;
        slot->signature = text;
        ApplySpec(*slot);
        spdlog::info("manifests: {} changed; applied", key);
        SendJob(*slot);
        sent.insert(key);
      }
    }
  }
  // Objects whose documents were removed are deleted.
  auto removed = [&](const std::string& key) {
    if (seen.count(key)) return false;
    auto src = source_file.find(key);
    return src == source_file.end() || !broken.count(src->second);
  };
  for (auto it = jobs.begin(); it != jobs.end();) {
    if (!removed(it->first)) {
      ++it;
      continue;
    }
    GmJob& j = *it->second;
    for (auto& [stage, id] : j.pod_ids) runner->Terminate(id, std::chrono::milliseconds(3000));
    if (j.inference_id >= 0) runner->Terminate(j.inference_id, std::chrono::milliseconds(3000));
    started.ForgetJob(j.key);
    Deliver("delete", core::AsciiLowered(j.kind), j.ns, j.name, j.object.dump());
    (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteState(kScope, j.key); });
    spdlog::info("manifests: {} removed; job deleted", j.key);
    source_file.erase(j.key);
    missing_secret.erase(j.key);
    it = jobs.erase(it);
  }
  for (auto it = plain.begin(); it != plain.end();) {
    if (!removed(it->first)) {
      ++it;
      continue;
    }
    NJ obj = NJ::parse(it->second);
    Deliver("delete", core::AsciiLowered(obj.value("kind", "")),
            obj["metadata"].value("namespace", "default"), obj["metadata"].value("name", ""),
            it->second);
    spdlog::info("manifests: {} removed; deleted", it->first);
    source_file.erase(it->first);
    missing_secret.erase(it->first);
    it = plain.erase(it);
  }
  ResendForSecrets(changed_secrets, sent);
  if (first) ForgetStoredObjectsNotInManifests(seen);
  return true;
}

std::set<std::pair<std::string, std::string>> LocalGm::Impl::UpdateSecrets(
    const std::vector<manifest::Secret>& loaded, const std::set<std::string>& broken) {
  SecretMap next;
  for (const auto& s : loaded) next[{s.ns, s.name}] = s;
  for (const auto& [k, s] : secrets) {
    if (!next.count(k) && broken.count(SourceFile(s.source))) next.emplace(k, s);
  }
  std::set<std::pair<std::string, std::string>> changed;
  for (const auto& [k, s] : next) {
    auto it = secrets.find(k);
    if (it != secrets.end() && it->second == s) continue;
    changed.insert(k);
    if (it == secrets.end()) {
      spdlog::info("manifests: Secret {}/{} loaded from {}", k.first, k.second, s.source);
    } else {
      spdlog::info("manifests: Secret {}/{} changed; applied", k.first, k.second);
    }
  }
  for (const auto& [k, s] : secrets) {
    if (next.count(k)) continue;
    changed.insert(k);
    spdlog::info("manifests: Secret {}/{} removed", k.first, k.second);
  }
  secrets = std::move(next);
  return changed;
}

void LocalGm::Impl::ResendForSecrets(const std::set<std::pair<std::string, std::string>>& changed,
                                     const std::set<std::string>& sent) {
  if (changed.empty()) return;
  for (const auto& [key, text] : plain) {
    if (sent.count(key)) continue;
    NJ obj = NJ::parse(text, nullptr, false);
    const auto ref = CredentialRef(obj);
    if (ref.second.empty() || !changed.count(ref)) continue;
    spdlog::info("manifests: {} sent again: its Secret {}/{} changed", key, ref.first, ref.second);
    DeliverObject(core::AsciiLowered(obj.value("kind", "")), ref.first,
                  obj["metadata"].value("name", ""), text);
  }
  for (auto& [key, j] : jobs) {
    if (sent.count(key)) continue;
    const auto ref = CredentialRef(j->object);
    if (ref.second.empty() || !changed.count(ref)) continue;
    spdlog::info("manifests: {} sent again: its Secret {}/{} changed", key, ref.first, ref.second);
    SendJob(*j);
  }
}

void LocalGm::Impl::ForgetStoredObjectsNotInManifests(const std::map<std::string, bool>& seen) {
  auto rows = store->LoadResources();
  if (!rows.ok()) {
    spdlog::error("standalone: reading stored objects: {}", rows.message());
    return;
  }
  for (const auto& row : *rows) {
    if (seen.count(row.name)) continue;
    const auto first = row.name.find('/'), last = row.name.rfind('/');
    if (first == std::string::npos || last == first) continue;
    const std::string ns = row.name.substr(0, first);
    const std::string kind = row.name.substr(first + 1, last - first - 1);
    const std::string name = row.name.substr(last + 1);
    Deliver("delete", kind, ns, name, "{}");
    (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteState(kScope, row.name); });
    spdlog::info("manifests: {} is no longer in the manifests; deleted", row.name);
  }
}

void LocalGm::Impl::SchedulePoll() {
  if (!poll) poll = std::make_unique<asio::steady_timer>(io);
  poll->expires_after(opt.manifest_poll);
  poll->async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    std::string sig = ManifestSignature();
    if (sig != manifest_signature) {
      manifest_signature = sig;
      Load(false);
    }
    SchedulePoll();
  });
}

}  // namespace sedna::app
