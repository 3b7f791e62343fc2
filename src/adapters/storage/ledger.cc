#include "adapters/storage/ledger.h"

#include <unistd.h>

#include <charconv>
#include <cinttypes>
#include <cstdio>

#include "adapters/fs/files.h"

namespace sedna::storage::internal {

namespace {

// A ledger file is small (at most a few versions, or a job's few hot-update files).
constexpr int64_t kMaxLedgerBytes = 1 << 20;

bool ParseU64(std::string_view s, uint64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

Result<std::string> ReadAll(const fs::OpenedFile& f) {
  if (f.st.st_size > kMaxLedgerBytes) {
    return Status::Error(f.path + ": " + std::to_string(f.st.st_size) + " bytes, over a ledger's " +
                         std::to_string(kMaxLedgerBytes));
  }
  auto out = fs::ReadUpTo(f, static_cast<size_t>(f.st.st_size));
  if (out.ok() && out->size() != static_cast<size_t>(f.st.st_size)) {
    return Status::Error("reading " + f.path + ": short read");
  }
  return out;
}

}  // namespace

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string LedgerDir(const Context& ctx) {
  if (!ctx.ledger_dir.empty()) return ctx.ledger_dir;
  if (ctx.staging_dir.empty()) return "";
  return fs::Dirname(fs::CleanPath(ctx.staging_dir)) + "/ledger";
}

Ledger Ledger::ForVersions(const Context& ctx, const std::string& target) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, Fnv1a(target));
  return Ledger(LedgerDir(ctx), std::string("versions.") + hex, target);
}

Ledger Ledger::ForHotUpdate(const Context& ctx, const std::string& ns, const std::string& name) {
  // Namespaces are DNS labels (no '.'), so "<ns>.<name>" names one job only.
  return Ledger(LedgerDir(ctx), "hot-update." + ns + "." + name, ns + "/" + name);
}

Ledger Ledger::ForHotUpdateConfig(const Context& ctx, const std::string& ns,
                                  const std::string& name) {
  return Ledger(LedgerDir(ctx), "hot-update-config." + ns + "." + name,
                ns + "/" + name + " config");
}

Result<std::vector<Recorded>> Ledger::Read() const {
  std::vector<Recorded> out;
  if (dir_.empty()) {
    return Status::Error("no spool directory to record the LC's files in (" + subject_ + ")");
  }
  auto d = fs::Dir::OpenTrusted(dir_, true);
  if (!d.ok()) return d.status();
  auto st = d->Lstat(file_);
  if (!st.ok()) return st.status();
  if (!*st) return out;
  auto f = d->OpenFile(file_);
  if (!f.ok()) return f.status();
  auto text = ReadAll(*f);
  if (!text.ok()) return text.status();
  std::string_view rest = *text;
  bool first = true;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) break;  // a torn last line cannot be: files are replaced
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    if (first) {
      if (line != "# " + subject_) {
        return Status::Error(f->path + " records \"" + std::string(line) + "\", not " + subject_);
      }
      first = false;
      continue;
    }
    // "<dev> <ino>/<birth ns> <name>", or "<dev> <ino> <name>" (written before birth times were
    // kept: the file is told by dev/ino alone).
    const size_t a = line.find(' ');
    const size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    uint64_t dev = 0, ino = 0, birth = 0;
    std::string_view ino_field =
        b == std::string_view::npos ? std::string_view() : line.substr(a + 1, b - a - 1);
    const size_t slash = ino_field.find('/');
    bool ok = b != std::string_view::npos && b + 1 != line.size() &&
              ParseU64(line.substr(0, a), &dev) && ParseU64(ino_field.substr(0, slash), &ino);
    if (ok && slash != std::string_view::npos) {
      ok = ParseU64(ino_field.substr(slash + 1), &birth) && birth != 0;
    }
    if (!ok) {
      return Status::Error(f->path + ": a line that is not \"<dev> <ino>/<birth ns> <name>\"");
    }
    Recorded r;
    r.name = std::string(line.substr(b + 1));
    r.id.dev = static_cast<dev_t>(dev);
    r.id.ino = static_cast<ino_t>(ino);
    r.id.birth_ns = birth;
    out.push_back(std::move(r));
  }
  return out;
}

Status Ledger::Update(const std::function<Status(std::vector<Recorded>&)>& change) const {
  if (dir_.empty()) {
    return Status::Error("no spool directory to record the LC's files in (" + subject_ + ")");
  }
  auto d = fs::Dir::OpenTrusted(dir_, true);
  if (!d.ok()) return d.status();
  auto lock = d->Lock();
  if (!lock.ok()) return lock.status();
  auto recs = Read();
  if (!recs.ok()) return recs.status();
  if (Status s = change(*recs); !s.ok()) return s;
  if (recs->empty()) {
    auto st = d->Lstat(file_);
    if (!st.ok()) return st.status();
    if (!*st) return Status::Ok();
    return d->RemoveFileIf(file_, fs::IdOf(**st));
  }
  std::string text = "# " + subject_ + "\n";
  for (const Recorded& r : *recs) {
    if (r.name.find('\n') != std::string::npos) {
      return Status::Error("recording " + subject_ + ": a file name with a newline");
    }
    text += std::to_string(static_cast<uint64_t>(r.id.dev)) + " " +
            std::to_string(static_cast<uint64_t>(r.id.ino));
    if (r.id.birth_ns != 0) text += "/" + std::to_string(r.id.birth_ns);
    text += " " + r.name + "\n";
  }
  auto id = d->Replace(file_, 0600, [&](int fd, const std::string& path) -> Status {
    return fs::WriteAllAt(fd, 0, text, path);
  });
  return id.status();
}

}  // namespace sedna::storage::internal
