#include "app/cli/load_config.h"

#include "adapters/fs/files.h"
#include "core/ascii.h"

#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace sedna::app {

Result<uint16_t> ParsePort(const std::string& what, const std::string& value) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || p != value.data() + value.size() || v > 65535) {
    return Result<uint16_t>::Error(what + ": \"" + value + "\" is not a port number (0-65535)");
  }
  return static_cast<uint16_t>(v);
}

namespace {

std::string Get(const std::map<std::string, std::string>& env, const std::string& k) {
  auto it = env.find(k);
  return it == env.end() ? std::string() : it->second;
}

Status ValidateGmAddress(const std::string& a) {
  if (a.empty()) return Status::Ok();
  if (a.find("://") != std::string::npos || a.find('/') != std::string::npos) {
    return Status::Error("GM_ADDRESS: \"" + a + "\" must be host:port without a scheme or path");
  }
  auto colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Error("GM_ADDRESS: \"" + a + "\" must be host:port");
  }
  auto port = ParsePort("GM_ADDRESS", a.substr(colon + 1));
  if (!port.ok()) return port.status();
  return Status::Ok();
}

// glibc's POSIX TZ form (tzset(3)): std offset [dst [offset] [,rule]], a name being 3+ letters
// or <3+ of [A-Za-z0-9+-]>, an offset [+-]hh[:mm[:ss]]. Rules are not checked.
size_t TzName(std::string_view s, size_t i) {
  if (i < s.size() && s[i] == '<') {
    const size_t close = s.find('>', i);
    if (close == std::string_view::npos || close - i - 1 < 3) return std::string_view::npos;
    for (size_t k = i + 1; k < close; ++k) {
      if (!std::isalnum(static_cast<unsigned char>(s[k])) && s[k] != '+' && s[k] != '-') {
        return std::string_view::npos;
      }
    }
    return close + 1;
  }
  size_t k = i;
  while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
  return k - i >= 3 ? k : std::string_view::npos;
}
size_t TzOffset(std::string_view s, size_t i) {
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (i >= s.size() || s[i] != ':') return i;
      ++i;
    }
    size_t k = i;
    while (k < s.size() && k - i < 2 && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
    if (k == i) return std::string_view::npos;
    i = k;
  }
  return i;
}
bool IsPosixTz(std::string_view s) {
  size_t i = TzName(s, 0);
  if (i == std::string_view::npos) return false;
  i = TzOffset(s, i);
  if (i == std::string_view::npos) return false;
  if (i == s.size()) return true;
  i = TzName(s, i);
  if (i == std::string_view::npos) return false;
  if (i < s.size() && s[i] != ',') i = TzOffset(s, i);
  return i != std::string_view::npos && (i == s.size() || s[i] == ',');
}

}  // namespace

// A compiled zone file (tzfile(5)), as glibc loads it: it starts with "TZif".
bool IsZoneFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, sizeof magic) && std::string_view(magic, sizeof magic) == "TZif";
}

Status ValidateTimezone(const std::string& tz, const std::string& zoneinfo_dir) {
  // glibc's tzset drops a leading ':', then tries a zone file, then the POSIX form.
  const std::string name = !tz.empty() && tz[0] == ':' ? tz.substr(1) : tz;
  if (name.empty() || name == "UTC" || name == "GMT") return Status::Ok();
  const std::string file = name[0] == '/' ? name : zoneinfo_dir + "/" + name;
  if (IsZoneFile(file) || IsPosixTz(name)) return Status::Ok();
  return Status::Error("TZ (--timezone): unknown time zone \"" + tz + "\": no zone file " + file +
                       " (is tzdata installed?), and not a POSIX TZ string such as "
                       "\"CET-1CEST,M3.5.0,M10.5.0/3\"");
}

Result<Config> LoadConfig(const std::map<std::string, std::string>& env,
                          const std::vector<std::string>& args) {
  Config c;
  c.gm_address = Get(env, "GM_ADDRESS");
  c.node_name = Get(env, "NODENAME");
  if (c.node_name.empty()) c.node_name = Get(env, "HOSTNAME");
  if (env.count("ROOTFS_MOUNT_DIR")) c.rootfs = Get(env, "ROOTFS_MOUNT_DIR");
  if (!Get(env, "SEDNA_DB_PATH").empty()) c.db_path = Get(env, "SEDNA_DB_PATH");
  if (!Get(env, "TZ").empty()) c.timezone = Get(env, "TZ");
  if (!Get(env, "SEDNA_GM_PROTOCOL").empty()) c.gm_protocol = Get(env, "SEDNA_GM_PROTOCOL");
  std::string bind_port = Get(env, "BIND_PORT");
  if (!bind_port.empty()) {
    auto p = ParsePort("BIND_PORT", bind_port);
    if (!p.ok()) return p.status();
    c.bind_port = *p;
  }

  CLI::App app{"sedna-lc: Local Controller for KubeEdge Sedna"};
  std::string bind_port_flag, status_port_flag;
  app.add_option("--gm-address", c.gm_address, "GM websocket host:port (env GM_ADDRESS)");
  app.add_option("--node-name", c.node_name, "node name sent as Node-Name (env NODENAME)");
  app.add_option("--bind-port", bind_port_flag, "worker API port (env BIND_PORT, default 9100)");
  app.add_option("--bind-address", c.bind_address,
                 "worker API address (default 0.0.0.0; standalone: 127.0.0.1)");
  app.add_option("--rootfs", c.rootfs, "host root mount (env ROOTFS_MOUNT_DIR, default /rootfs)");
  CLI::Option* db_flag = app.add_option(
      "--db", c.db_path,
      "SQLite database (env SEDNA_DB_PATH; default <rootfs>/var/lib/sedna/sedna-lc/database.db "
      "when the rootfs exists, else /var/lib/sedna/database.db)");
  app.add_option("--spool-dir", c.spool_dir, "sample spool directory (default <db dir>/spool)");
  app.add_option("--status-port", status_port_flag, "status/health/metrics port, 0 = off");
  app.add_option("--status-address", c.status_address, "status server address");
  app.add_option("--status-allowed-hosts", c.status_allowed_hosts,
                 "comma-separated Host names the status server also answers to (besides "
                 "127.0.0.1, localhost, [::1] and --status-address)")
      ->delimiter(',');
  app.add_option("--timezone", c.timezone, "time zone for trigger timers (env TZ)");
  app.add_flag("--log-json", c.log_json, "one JSON object per log line");
  app.add_option("--log-level", c.log_level, "trace|debug|info|warn|error");
  app.add_flag("--db-sync-full", c.db_sync_full, "fsync every commit (power-loss durability)");
  app.add_option("--ping-interval-ms", c.ping_interval_ms, "websocket ping period");
  app.add_option("--ping-timeout-ms", c.ping_timeout_ms, "dead-peer timeout after a ping");
  app.add_option("--backoff-max-ms", c.backoff_max_ms, "reconnect backoff cap");
  app.add_option(
      "--s3-timeout-ms", c.s3_timeout_ms,
      "S3: connect / no-progress limit per attempt (whole seconds are used, at least 1)");
  app.add_option("--s3-retries", c.s3_retries, "S3: extra attempts on 5xx and connection errors");
  app.add_option("--outbox-max-bytes", c.outbox_max_bytes,
                 "unsent upstream bytes above which ingestion pauses and workers get 503; "
                 "informational reports (not train/eval completions) get 503 above a quarter of "
                 "it, which they hold on top of it");
  app.add_option("--report-batch-ms", c.report_batch_ms,
                 "commit acknowledged worker reports in batches at most this old (0: each one "
                 "before its reply)");
  double deploy_wait_s = static_cast<double>(c.deploy_wait_ms) / 1000;
  app.add_option("--deploy-wait", deploy_wait_s,
                 "seconds a round whose eval report was refused waits for a valid one before it is "
                 "decided not deployed (default 30)");
  app.add_option("--gm-protocol", c.gm_protocol,
                 "GM generation for the IL deploy decision: auto (default; either), g1 (decide on "
                 "the eval report), g2 (only on (Deploy, Waiting)) (env SEDNA_GM_PROTOCOL)");
  double report_delay_s = static_cast<double>(c.deploy_report_delay_ms) / 1000;
  app.add_option("--deploy-report-delay", report_delay_s,
                 "g1: seconds after the eval report before the deploy decision is sent (default "
                 "10; 0: at once, as the 2021 LC did)");
  app.add_option("--max-index-line-bytes", c.max_index_line_bytes,
                 "index lines longer than this are skipped with an error (default 1 MiB)");
  app.add_option("--dataset-status-interval-ms", c.dataset_status_interval_ms,
                 "at most one numberOfSamples per Dataset this often; the last value is always "
                 "sent (default 1000, 0: every change)");
  app.add_option("--history-rounds", c.history_rounds,
                 "train rounds kept per job in the round history (default 50, 1 to 10000)");
  app.add_option("--early-reports-per-job", c.early_reports_per_job,
                 "worker reports kept per job this LC does not know yet, until the GM sends it "
                 "(default 16; more are answered 503)");
  app.add_option("--early-reports-max", c.early_reports_max,
                 "worker reports kept in total for jobs not known yet (default 256)");
  app.add_option("--early-reports-max-bytes", c.early_reports_max_bytes,
                 "bytes of worker reports kept in total for jobs not known yet (default 16 MiB)");
  double early_ttl_s = static_cast<double>(c.early_report_ttl_ms) / 1000;
  app.add_option("--early-report-ttl", early_ttl_s,
                 "seconds a worker report for a job not known yet is kept for its job to arrive "
                 "(default 300), then dropped with a warning");
  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    return Result<Config>::Error(app.help());
  } catch (const CLI::ParseError& e) {
    return Result<Config>::Error(std::string("command line: ") + e.what());
  }
  if (!bind_port_flag.empty()) {
    auto p = ParsePort("--bind-port", bind_port_flag);
    if (!p.ok()) return p.status();
    c.bind_port = *p;
  }
  if (!status_port_flag.empty()) {
    auto p = ParsePort("--status-port", status_port_flag);
    if (!p.ok()) return p.status();
    c.status_port = *p;
  }
  if (Status s = ValidateGmAddress(c.gm_address); !s.ok()) return s;
  if (c.node_name.empty()) {
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) == 0) c.node_name = host;
  }
  if (c.node_name.empty()) {
    return Result<Config>::Error(
        "NODENAME: not set, HOSTNAME is empty and gethostname failed; "
        "set NODENAME or --node-name");
  }
  if (c.db_path.empty()) return Result<Config>::Error("--db: must not be empty");
  if (c.outbox_max_bytes <= 0) return Result<Config>::Error("--outbox-max-bytes: must be > 0");
  if (c.report_batch_ms < 0 || c.report_batch_ms > 60000) {
    return Result<Config>::Error("--report-batch-ms: must be 0 to 60000");
  }
  if (c.s3_timeout_ms <= 0) return Result<Config>::Error("--s3-timeout-ms: must be > 0");
  if (!(deploy_wait_s >= 0 && deploy_wait_s <= 86400)) {
    return Result<Config>::Error("--deploy-wait: must be 0 to 86400 seconds");
  }
  c.deploy_wait_ms = static_cast<int64_t>(deploy_wait_s * 1000);
  if (!(report_delay_s >= 0 && report_delay_s <= 86400)) {
    return Result<Config>::Error("--deploy-report-delay: must be 0 to 86400 seconds");
  }
  c.deploy_report_delay_ms = static_cast<int64_t>(report_delay_s * 1000);
  {
    std::string p = core::AsciiLowered(c.gm_protocol);
    if (p == "v1") p = "g1";  // docs/protocol.md §H3.2 spells them v1/v2
    if (p == "v2") p = "g2";
    if (p != "auto" && p != "g1" && p != "g2") {
      return Result<Config>::Error("--gm-protocol (SEDNA_GM_PROTOCOL): \"" + c.gm_protocol +
                                   "\" (expected auto, g1 or g2)");
    }
    c.gm_protocol = p;
  }
  if (c.max_index_line_bytes < 1 || c.max_index_line_bytes > (int64_t{1} << 30)) {
    return Result<Config>::Error("--max-index-line-bytes: must be 1 to 1073741824");
  }
  if (c.dataset_status_interval_ms < 0 || c.dataset_status_interval_ms > 3600000) {
    return Result<Config>::Error("--dataset-status-interval-ms: must be 0 to 3600000");
  }
  if (c.history_rounds < 1 || c.history_rounds > 10000) {
    return Result<Config>::Error("--history-rounds: must be 1 to 10000");
  }
  if (c.early_reports_per_job < 0 || c.early_reports_per_job > 100000 || c.early_reports_max < 0 ||
      c.early_reports_max > 1000000) {
    return Result<Config>::Error(
        "--early-reports-per-job/--early-reports-max: must be 0 to 100000 / 1000000");
  }
  if (c.early_reports_max_bytes < 0 || c.early_reports_max_bytes > (int64_t{1} << 30)) {
    return Result<Config>::Error("--early-reports-max-bytes: must be 0 to 1073741824");
  }
  if (!(early_ttl_s >= 0.001 && early_ttl_s <= 86400)) {
    return Result<Config>::Error("--early-report-ttl: must be 0.001 to 86400 seconds");
  }
  c.early_report_ttl_ms = static_cast<int64_t>(early_ttl_s * 1000);
  if (c.s3_retries < 0) return Result<Config>::Error("--s3-retries: must be >= 0");
  if (c.ping_interval_ms <= 0 || c.ping_timeout_ms <= 0 || c.backoff_max_ms <= 0) {
    return Result<Config>::Error(
        "--ping-interval-ms/--ping-timeout-ms/--backoff-max-ms: must be > 0");
  }
  const std::string tzdir = Get(env, "TZDIR").empty() ? "/usr/share/zoneinfo" : Get(env, "TZDIR");
  if (Status s = ValidateTimezone(c.timezone, tzdir); !s.ok()) return s;
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
  bool level_ok = false;
  for (auto* l : kLevels) level_ok |= c.log_level == l;
  if (!level_ok) {
    return Result<Config>::Error("--log-level: \"" + c.log_level +
                                 "\" (expected trace, debug, info, warn or error)");
  }
  // The host keeps the database when the rootfs is mounted (§H1.8); the old default inside the
  // container is adopted from at start-up. A file name of its own: the Go LC's database.db there
  // has the same `resources` table, with plaintext credentials (§H4.5).
  std::error_code ec;
  if (db_flag->count() == 0 && Get(env, "SEDNA_DB_PATH").empty() && !c.rootfs.empty() &&
      std::filesystem::is_directory(c.rootfs, ec)) {
    c.db_adopt_from = c.db_path;
    c.db_path = fs::JoinRootfs(c.rootfs, "/var/lib/sedna/sedna-lc/database.db");
    if (c.spool_dir.empty()) c.spool_adopt_from = fs::Dirname(c.db_adopt_from) + "/spool";
  }
  if (c.spool_dir.empty()) {
    auto slash = c.db_path.rfind('/');
    c.spool_dir =
        (slash == std::string::npos ? std::string(".") : c.db_path.substr(0, slash)) + "/spool";
  }
  return c;
}

}  // namespace sedna::app
