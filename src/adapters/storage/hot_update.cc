#include "adapters/storage/hot_update.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "adapters/fs/files.h"
#include "adapters/json/go_json.h"

namespace sedna::storage {

namespace {

// Go's time package takes its monotonic origin when the process starts (runtime startNano, one
// nanosecond before the first reading).
const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();

// Go's appendInt(b, x, width): decimal, zero-padded to `width` digits, '-' before the padding.
void AppendInt(std::string& out, int64_t x, int width) {
  uint64_t u = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  if (x < 0) out += '-';
  std::string digits = std::to_string(u);
  if (static_cast<int>(digits.size()) < width) out.append(width - digits.size(), '0');
  out += digits;
}

// Floor division and modulo (the wall time may be before 1970).
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The config, written where `path` names it (under the rootfs), mode 0644 exactly: built in a
// staging file whose mode is set with fchmod (so the umask does not apply), then copied over the
// target atomically (AtomicCopyFile keeps the mode, fsyncs, renames and fsyncs the directory).
Status WriteConfigFile(const Context& ctx, const std::string& path, const std::string& content) {
  if (Status s = fs::MakeDirs(ctx.staging_dir); !s.ok()) return s;
  static std::atomic<uint64_t> counter{0};
  const std::string staging = ctx.staging_dir + "/hot-update-" + std::to_string(::getpid()) + "-" +
                              std::to_string(counter++) + "-model_config.json";
  int fd = ::open(staging.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error("writing " + staging + ": " + std::strerror(errno));
  Status s = fs::WriteAllAt(fd, 0, content, staging);
  if (s.ok() && ::fchmod(fd, 0644) != 0) {
    s = Status::Error("writing " + staging + ": setting mode: " + std::strerror(errno));
  }
  if (::close(fd) != 0 && s.ok())
    s = Status::Error("writing " + staging + ": " + std::strerror(errno));
  if (s.ok()) s = fs::AtomicCopyFile(staging, path);
  ::unlink(staging.c_str());
  return s;
}

// config_path must name a file in a job's own directory, <base>/<namespace>/<kind>/<name>/, as
// the GM sets it (lower(<base>/<ns>/<Kind>/<name>/model_config.json)), and resolve (symlinks)
// inside <base>: the LC removes that directory when the job is deleted (§4.1), which must never
// be a namespace's or the whole tree.
Status CheckConfigPath(const Context& ctx, const std::string& config_path) {
  const std::string base = fs::CleanPath(ctx.hot_update_dir.empty() ? std::string(kHotUpdateHostDir)
                                                                    : ctx.hot_update_dir);
  const std::string refused = "hot-update config path " + config_path + " is not inside " + base;
  const std::string shape = refused + "/<namespace>/<kind>/<name>/";
  const std::string clean = fs::CleanPath(config_path);
  if (config_path.empty() || config_path[0] != '/' || clean.rfind(base + "/", 0) != 0) {
    return Status::Error(shape);
  }
  int parts = 0;  // below base: namespace, kind, name, file
  for (size_t pos = base.size(); pos != std::string::npos; pos = clean.find('/', pos + 1)) ++parts;
  if (parts != 4) return Status::Error(shape);
  const std::string dir = fs::Dirname(clean);
  auto file_inside = fs::ResolvesInside(ctx.rootfs, clean, base);
  if (!file_inside.ok()) return Status::Error(refused + ": " + file_inside.message());
  auto dir_inside = fs::ResolvesInside(ctx.rootfs, dir, base);
  if (!dir_inside.ok()) return Status::Error(refused + ": " + dir_inside.message());
  auto dir_is_base = fs::ResolvesInside(ctx.rootfs, base, dir);
  if (!dir_is_base.ok()) return Status::Error(refused + ": " + dir_is_base.message());
  if (!*file_inside || !*dir_inside || *dir_is_base) return Status::Error(shape);
  return Status::Ok();
}

}  // namespace

std::string ModelConfigJson(std::string_view model_path, std::string_view update_time) {
  std::string out = "{\n \"model_config\": {\n  \"model_path\": ";
  json::AppendGoString(out, model_path);
  out += ",\n  \"model_update_time\": ";
  json::AppendGoString(out, update_time);
  out += "\n }\n}";
  return out;
}

std::string GoTimeString(int64_t unix_nanos, int utc_offset_seconds, std::string_view zone,
                         int64_t mono_nanos) {
  const int64_t secs = FloorDiv(unix_nanos, 1'000'000'000) + utc_offset_seconds;
  const int64_t nanos = unix_nanos - FloorDiv(unix_nanos, 1'000'000'000) * 1'000'000'000;
  const int64_t days = FloorDiv(secs, 86400);
  const int64_t sod = secs - days * 86400;
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  std::string out;
  out.reserve(64);
  AppendInt(out, static_cast<int>(ymd.year()), 4);
  out += '-';
  AppendInt(out, static_cast<unsigned>(ymd.month()), 2);
  out += '-';
  AppendInt(out, static_cast<unsigned>(ymd.day()), 2);
  out += ' ';
  AppendInt(out, sod / 3600, 2);
  out += ':';
  AppendInt(out, sod / 60 % 60, 2);
  out += ':';
  AppendInt(out, sod % 60, 2);
  if (nanos != 0) {  // ".999999999": trailing zeros trimmed
    std::string frac;
    AppendInt(frac, nanos, 9);
    frac.erase(frac.find_last_not_of('0') + 1);
    out += '.';
    out += frac;
  }
  // "-0700": the offset in whole minutes.
  int zone_minutes = utc_offset_seconds / 60;
  std::string numeric;
  numeric += zone_minutes < 0 ? '-' : '+';
  if (zone_minutes < 0) zone_minutes = -zone_minutes;
  AppendInt(numeric, zone_minutes / 60, 2);
  AppendInt(numeric, zone_minutes % 60, 2);
  out += ' ';
  out += numeric;
  out += ' ';
  if (zone.empty()) {
    out += numeric;
  } else {
    out += zone;
  }
  // " m=±<seconds>.<9 digits>"
  out += " m=";
  uint64_t m = mono_nanos < 0 ? uint64_t{0} - static_cast<uint64_t>(mono_nanos)
                              : static_cast<uint64_t>(mono_nanos);
  out += mono_nanos < 0 ? '-' : '+';
  out += std::to_string(m / 1'000'000'000);
  out += '.';
  AppendInt(out, static_cast<int64_t>(m % 1'000'000'000), 9);
  return out;
}

std::string GoTimeNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  const auto mono = std::chrono::steady_clock::now() - kProcessStart;
  tm local{};
  const time_t secs = ts.tv_sec;
  ::localtime_r(&secs, &local);
  const int64_t mono_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(mono).count() + 1;
  return GoTimeString(int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec,
                      static_cast<int>(local.tm_gmtoff),
                      local.tm_zone != nullptr ? local.tm_zone : "", mono_nanos);
}

Result<HotUpdateResult> WriteHotUpdate(const Context& ctx, const core::il::WriteHotUpdate& action) {
  if (Status s = CheckConfigPath(ctx, action.config_path); !s.ok()) return s;
  HotUpdateResult result;
  for (const core::il::CopyModel& c : action.copies) {
    auto r = DeployModel(ctx, c.src_url, c.dst_url);
    if (!r.ok()) return r.status();
    result.copies.push_back(std::move(*r));
  }
  result.config_file = fs::JoinRootfs(ctx.rootfs, action.config_path);
  result.update_time = GoTimeNow();
  if (Status s = WriteConfigFile(ctx, result.config_file,
                                 ModelConfigJson(action.model_path, result.update_time));
      !s.ok()) {
    return s;
  }
  return result;
}

Status RemoveHotUpdateDir(const Context& ctx, const std::string& config_path) {
  if (Status s = CheckConfigPath(ctx, config_path); !s.ok()) return s;
  const std::string dir = fs::JoinRootfs(ctx.rootfs, fs::Dirname(fs::CleanPath(config_path)));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return Status::Error("removing " + dir + ": " + ec.message());
  return Status::Ok();
}

}  // namespace sedna::storage
