#include "app/cli/rollback_cmd.h"

#include <sys/stat.h>

#include <charconv>
#include <ctime>
#include <optional>
#include <vector>

#include "adapters/fs/confined.h"
#include "adapters/fs/files.h"
#include "adapters/storage/hot_update.h"
#include "adapters/storage/model_versions.h"
#include "adapters/storage/storage.h"
#include "app/cluster/observation/shell_quote.h"

namespace sedna::app {
namespace {

std::string LocalTime(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string StandaloneHotUpdateDir(const std::string& db_path) {
  const auto slash = db_path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : db_path.substr(0, slash)) +
         "/model-hot-update";
}

Result<RollbackArgs> TakeRollbackArgs(std::vector<std::string>& args) {
  RollbackArgs r;
  bool list = false, version = false;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--list") {
      list = true;
    } else if (a == "--version" || a.rfind("--version=", 0) == 0) {
      if (a == "--version" && i + 1 == args.size()) {
        return Result<RollbackArgs>::Error("--version: a version number is required");
      }
      const std::string v = a == "--version" ? args[++i] : a.substr(10);
      int64_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n <= 0) {
        return Result<RollbackArgs>::Error("--version: \"" + v +
                                           "\" is not a version number (1, 2, …)");
      }
      r.version = n;
      version = true;
    } else if (a == "--rootfs" && i + 1 < args.size()) {
      rest.push_back(a);
      rest.push_back(args[++i]);
    } else if (!a.empty() && a[0] == '-') {
      rest.push_back(a);  // a daemon flag (values as --flag=value), checked by LoadConfig
    } else if (r.target.empty()) {
      r.target = a;
    } else {
      return Result<RollbackArgs>::Error("rollback-model: unexpected argument \"" + a +
                                         "\" (one deploy path)");
    }
  }
  if (list && version) {
    return Result<RollbackArgs>::Error("rollback-model: --list and --version: choose one");
  }
  if (r.target.empty()) {
    return Result<RollbackArgs>::Error(
        "rollback-model: <deploy path> is required (rollback-model <deploy path> [--list] "
        "[--version N])");
  }
  if (r.target[0] != '/' && !fs::IsS3Url(r.target)) {
    return Result<RollbackArgs>::Error("rollback-model: \"" + r.target +
                                       "\" is not an absolute host path");
  }
  args = std::move(rest);
  return r;
}

int RunRollbackCommand(const Config& cfg, const RollbackArgs& args, std::ostream& out,
                       std::ostream& err) {
  storage::Context ctx;
  ctx.rootfs = cfg.rootfs;
  // The daemon's spool: its ledger records the versions it kept (only those are versions).
  ctx.staging_dir = cfg.spool_dir + "/staging";
  if (fs::IsS3Url(args.target)) {
    // Listing or restoring needs no credentials on the host; on S3 it would.
    auto l = storage::ListModelVersions(ctx, args.target);
    err << "sedna-lc: rollback-model: " << l.message() << "\n";
    return 2;
  }
  const std::string path = fs::JoinRootfs(cfg.rootfs, args.target);
  if (args.version == 0) {
    auto versions = storage::ListModelVersions(ctx, args.target);
    if (!versions.ok()) {
      err << "sedna-lc: rollback-model: " << versions.message() << "\n";
      return 1;
    }
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      out << "current  " << Pad(std::to_string(st.st_size), 12) << LocalTime(st.st_mtime) << "  "
          << path << "\n";
    } else {
      out << "current  (no file at " << path << ")\n";
    }
    if (versions->empty()) {
      out << "no versions of " << args.target << " are kept\n";
      return 0;
    }
    out << "version  size        written\n";
    for (const auto& v : *versions) {
      out << Pad(std::to_string(v.number), 9) << Pad(std::to_string(v.size), 12)
          << LocalTime(v.mtime) << "  " << v.path << "\n";
    }
    return 0;
  }
  auto versions = storage::ListModelVersions(ctx, args.target);
  bool kept = false;
  if (versions.ok()) {
    for (const auto& v : *versions) kept |= v.number == args.version;
  }
  auto r = storage::RestoreModelVersion(ctx, args.target, args.version);
  if (!r.ok()) {
    err << "sedna-lc: rollback-model: " << r.message() << "\n";
    return versions.ok() && !kept ? 2 : 1;  // a version that is not kept; else an IO error
  }
  out << "restored " << args.target << " from version " << args.version << "\n";
  if (r->kept_version > 0) {
    out << "the model it replaced is kept as version " << r->kept_version
        << " (undo: " << RollbackCommand(args.target, r->kept_version) << ")\n";
  }
  if (!r->warning.empty()) err << "sedna-lc: rollback-model: warning: " << r->warning << "\n";
  // A hot-update model (§H4.1), <hot-update dir>/<ns>/incrementallearningjob/<name>/<file>: the
  // running inference worker reloads only when model_config.json changes, so the config beside
  // it is rewritten with a fresh model_update_time, beneath the job's directory (no link followed).
  // The hot-update directory is the daemon's, or standalone's (beside --db, as `sedna-lc
  // standalone` puts it).
  const std::string target = fs::CleanPath(args.target);
  std::string hot;
  std::optional<std::string> rel;
  for (const std::string& dir :
       {fs::CleanPath(cfg.hot_update_dir), fs::CleanPath(StandaloneHotUpdateDir(cfg.db_path))}) {
    if (!rel && (rel = fs::RelativeBeneath(dir, target))) hot = dir;
  }
  std::vector<std::string> parts;
  for (size_t pos = 0; rel && pos <= rel->size();) {
    const size_t slash = rel->find('/', pos);
    parts.push_back(rel->substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  if (parts.size() == 4 && parts[1] == core::kKindIlJob) {
    storage::Context hctx = ctx;
    hctx.hot_update_dir = hot;
    auto job_dir = storage::HotUpdateJobDir(hctx, parts[0], parts[2]);
    std::optional<fs::Dir> dir;
    if (job_dir.ok() && *job_dir == fs::Dirname(target)) {
      auto d = fs::Dir::OpenHost(cfg.rootfs, *job_dir, false);
      if (d.ok()) dir = std::move(*d);
    }
    auto config_st = dir ? dir->Lstat("model_config.json")
                         : Result<std::optional<fs::Stat>>(std::optional<fs::Stat>());
    if (config_st.ok() && *config_st && S_ISREG((*config_st)->st_mode)) {
      const std::string config = *job_dir + "/model_config.json";
      core::il::WriteHotUpdate w;
      w.job_namespace = parts[0];
      w.job_name = parts[2];
      w.config_path = config;
      w.model_path = std::string(core::kHotUpdateContainerPrefix) + "/" + parts[3];
      auto h = storage::WriteHotUpdate(hctx, w);
      if (!h.ok()) {
        err << "sedna-lc: rollback-model: the model is restored but the inference worker was not "
               "told: "
            << h.message() << "\n";
        return 1;
      }
      out << "rewrote " << config << " (model_update_time " << h->update_time
          << "): the inference worker reloads the model\n";
    }
  }
  return 0;
}

}  // namespace sedna::app
