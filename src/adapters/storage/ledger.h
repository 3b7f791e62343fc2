// The LC's record of the files it created on the host on a job's behalf (model versions, the
// hot-update directory's files), kept in a directory of the LC's own that no worker can write
// (docs/security.md, "Paths"; docs/design-notes.md, "Model versions"). Pruning versions and
// deleting a job remove only recorded entries, each by its identity (dev, ino and birth time:
// fs::FileId, fs::Dir::RemoveFileIf), so a file a worker planted, or a link to one, or a later file
// given a freed inode number, is never listed, restored or removed as the LC's own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/fs/confined.h"
#include "adapters/storage/storage.h"
#include "core/status.h"

namespace sedna::storage::internal {

// One file the LC created: its name (a version's file name, or a path relative to a job's
// hot-update directory) and its identity when created.
struct Recorded {
  std::string name;
  fs::FileId id;
};

// FNV-1a, 64 bits: a name's stable hash (the same in every build, unlike std::hash).
uint64_t Fnv1a(std::string_view s);

// Where the ledger lives: ctx.ledger_dir, else "ledger" beside ctx.staging_dir (<spool>/ledger
// for the daemon and rollback-model alike). Empty when neither is set.
std::string LedgerDir(const Context& ctx);

// One ledger file, `<ledger dir>/<file>`, whose first line names what it records (`subject`: a
// deploy target's host path, a job's "<ns>/<name>"); a file of the same name recording another
// subject is an error (never read as this one's).
class Ledger {
 public:
  // The ledger of versions of the host deploy target `target` (a clean host path).
  static Ledger ForVersions(const Context& ctx, const std::string& target);
  // The ledger of the files written in the hot-update directory of job <ns>/<name>.
  static Ledger ForHotUpdate(const Context& ctx, const std::string& ns, const std::string& name);
  // The last model_config.json write of job <ns>/<name> (hot_update.cc): one entry, the config
  // file put in place and, as its name, which write it was.
  static Ledger ForHotUpdateConfig(const Context& ctx, const std::string& ns,
                                   const std::string& name);

  // The recorded files, in recording order; no ledger file: none.
  Result<std::vector<Recorded>> Read() const;
  // Reads, applies `change`, writes back (no entries: the ledger file is removed), under an
  // exclusive flock on the ledger directory, so that the daemon's threads and a rollback-model
  // run never lose each other's records. The ledger directory is made when missing.
  Status Update(const std::function<Status(std::vector<Recorded>&)>& change) const;

 private:
  Ledger(std::string dir, std::string file, std::string subject)
      : dir_(std::move(dir)), file_(std::move(file)), subject_(std::move(subject)) {}
  std::string dir_, file_, subject_;
};

}  // namespace sedna::storage::internal
