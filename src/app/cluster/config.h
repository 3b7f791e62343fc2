// What the controller is configured with: Sedna's environment contract (docs/protocol.md §P9.1)
// plus our flags. Read from the environment and the command line by cli/load_config.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sedna::app {

struct Config {
  std::string gm_address;     // GM_ADDRESS "host:port"
  std::string node_name;      // NODENAME, falls back to HOSTNAME
  uint16_t bind_port = 9100;  // BIND_PORT: worker API
  std::string bind_address = "0.0.0.0";
  std::string rootfs = "/rootfs";  // ROOTFS_MOUNT_DIR: "/rootfs" when unset, empty kept
  // SEDNA_DB_PATH / --db. Unset, with the host's root mounted (rootfs names an existing
  // directory): <rootfs>/var/lib/sedna/sedna-lc/database.db, on the host, so it survives a
  // re-created container (docs/protocol.md §H1.8, §H4.5; docs/deploy.md).
  std::string db_path = "/var/lib/sedna/database.db";
  std::string spool_dir;  // default: <dir of db>/spool
  // Set when db_path was defaulted onto the rootfs: the old default database (inside the
  // container), which start-up adopts once (cli/db_location.h), and, unless --spool-dir was
  // given, its spool directory. Empty otherwise.
  std::string db_adopt_from;
  std::string spool_adopt_from;
  // How the IL deploy decision follows the GM generation (docs/protocol.md §H3.2, "Fallback
  // flag"): "auto" (either), "g1" (decide on the eval report), "g2" (only on (Deploy, Waiting)).
  std::string gm_protocol = "auto";
  // g1: the deploy decision is sent this long after the eval report (0: 2021 timing).
  int64_t deploy_report_delay_ms = 10000;
  uint16_t status_port = 9101;  // /healthz /readyz /metrics /status; 0 disables
  std::string status_address = "127.0.0.1";
  // Host names the status server answers to besides 127.0.0.1, localhost, [::1] and
  // status_address (--status-allowed-hosts a,b); any other Host header gets 421.
  std::vector<std::string> status_allowed_hosts;
  std::string timezone;  // TZ for trigger timers; empty = process default
  bool log_json = false;
  std::string log_level = "info";
  bool db_sync_full = false;
  int64_t ping_interval_ms = 10000;
  int64_t ping_timeout_ms = 10000;
  int64_t backoff_max_ms = 30000;
  // S3: per-attempt connect / no-progress limit (Go's minio client: 100 s), retries on 5xx and
  // transport errors.
  int64_t s3_timeout_ms = 100000;
  int s3_retries = 3;
  // Above this many bytes of unsent upstream messages the LC pauses what would add more (sample
  // ingestion, worker reports get 503) until the GM link drains it; nothing queued is dropped.
  int64_t outbox_max_bytes = 64 << 20;
  // Worker reports are acknowledged once they are in the intake journal (kill -9 safe) and
  // committed to SQLite in batches at most this old (docs/durability.md). 0: each report is
  // committed before its reply. --db-sync-full implies 0 (the journal is not fsynced).
  int64_t report_batch_ms = 2;
  // A round whose eval report was refused waits this long for a valid one, then is decided "not
  // deployed" ([D:I15]; the G2 deploy wait of docs/protocol.md §H3.2 reuses it).
  int64_t deploy_wait_ms = 30000;
  // Index lines longer than this are skipped, each with an error naming the Dataset and offset.
  int64_t max_index_line_bytes = 1 << 20;
  // numberOfSamples is sent at most once per this many ms per Dataset; the last value always is.
  int64_t dataset_status_interval_ms = 1000;
  // The host directory every model hot-update config (sedna.io/model-hot-update-config) must lie
  // in, below the rootfs: the GM's hostPath root (docs/protocol.md §H4.1). Standalone: its
  // local GM's <db dir>/model-hot-update.
  std::string hot_update_dir = "/var/lib/sedna/model-hot-update";
  // Rounds kept per job in the round history (round_history.h): the dashboard, `status --history`.
  int64_t history_rounds = 50;
  // Worker reports for a job this LC does not know yet are kept until its object arrives
  // (early_reports.h; docs/durability.md, "Reports before their job"): at most this many per job,
  // this many and bytes in total, each at most this long.
  int64_t early_reports_per_job = 16;
  int64_t early_reports_max = 256;
  int64_t early_reports_max_bytes = 16 << 20;
  int64_t early_report_ttl_ms = 5 * 60 * 1000;
};

}  // namespace sedna::app
