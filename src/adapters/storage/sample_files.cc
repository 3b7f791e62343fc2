// Round sample files (storage.h): a host file put in place beneath the job's root (into a spare
// file and a spare round directory where there are some), its syncs left to the caller; an S3
// file staged and uploaded.
#include "adapters/storage/storage.h"

#include <unistd.h>

#include <memory>
#include <optional>

#include "adapters/storage/storage_internal.h"

namespace sedna::storage {

namespace {

// Writes `first_line` + '\n', then the `tokens` of each line of `ranges` (one per line), to the
// new, empty file `out` (`path` names it in errors).
Status WriteIndexFile(int out, const std::string& path, const std::string& first_line,
                      const std::vector<fs::FileRange>& ranges, IndexTokens tokens) {
  std::string buf = first_line + "\n";
  Status st = Status::Ok();
  auto flush = [&]() -> bool {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n = ::write(out, buf.data() + done, buf.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        st = Status::Error(Errno("writing " + path));
        return false;
      }
      done += static_cast<size_t>(n);
    }
    buf.clear();
    return true;
  };
  std::vector<char> chunk(64 * 1024);
  for (const auto& r : ranges) {
    if (!st.ok()) break;
    int in = ::open(r.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      st = Status::Error(Errno("reading " + r.path));
      break;
    }
    bool in_token = true, line_open = false;
    // kEveryWithExtension: the token so far (bounded by the longest sample line) and whether a
    // '.' follows its last '/' (Go's path.Ext is non-empty).
    std::string tok;
    bool ext = false;
    auto end_token = [&] {
      if (ext) {
        buf += tok;
        buf.push_back('\n');
      }
      tok.clear();
      ext = false;
    };
    for (int64_t off = r.begin; off < r.end && st.ok();) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(chunk.size(), r.end - off));
      ssize_t n = ::pread(in, chunk.data(), want, off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        st = n < 0 ? Status::Error(Errno("reading " + r.path))
                   : Status::Error("reading " + r.path + ": range [" + std::to_string(r.begin) +
                                   ", " + std::to_string(r.end) + ") is past the end of the file");
        break;
      }
      for (ssize_t i = 0; i < n && tokens == IndexTokens::kEveryWithExtension; ++i) {
        const char c = chunk[static_cast<size_t>(i)];
        if (c == '\n' || c == ' ') {
          end_token();
        } else {
          tok.push_back(c);
          if (c == '.') ext = true;
          if (c == '/') ext = false;
        }
      }
      for (ssize_t i = 0; i < n && tokens == IndexTokens::kFirst; ++i) {
        const char c = chunk[static_cast<size_t>(i)];
        if (c == '\n') {
          buf.push_back('\n');
          in_token = true;
          line_open = false;
        } else {
          line_open = true;
          if (c == ' ') in_token = false;
          if (in_token) buf.push_back(c);
        }
      }
      off += n;
      if (buf.size() >= chunk.size() && !flush()) break;
    }
    if (st.ok() && tokens == IndexTokens::kEveryWithExtension) end_token();
    if (st.ok() && line_open && tokens == IndexTokens::kFirst) buf.push_back('\n');
    ::close(in);
  }
  if (st.ok()) flush();
  return st;
}

// The directory `rel_dir` beneath `root` (the job's root), made if missing as Dir::Sub makes it,
// walked once, and its parent when its last component was made here (its entry there is synced
// with the file). When the last component is missing and the job has a spare directory, the spare
// is moved there instead of a mkdir (no inode made while a Ready waits); a spare that was swapped
// for something else before the move is an error.
struct SampleDir {
  fs::Dir dir;
  std::optional<fs::Dir> made_in;
};

Result<SampleDir> OpenSampleDir(const Context& ctx, const fs::Dir& root,
                                const std::string& rel_dir) {
  const size_t slash = rel_dir.rfind('/');
  const std::string parent_rel = slash == std::string::npos ? "" : rel_dir.substr(0, slash);
  const std::string leaf = slash == std::string::npos ? rel_dir : rel_dir.substr(slash + 1);
  if (leaf.empty() || leaf == "." || leaf == "..") {
    auto dir = root.Sub(rel_dir, true);
    if (!dir.ok()) return dir.status();
    return SampleDir{std::move(*dir), std::nullopt};
  }
  auto parent = root.Sub(parent_rel, true);
  if (!parent.ok()) return parent.status();
  auto there = parent->Lstat(leaf);
  const bool missing = there.ok() && !*there;
  if (missing && ctx.spares) {
    if (std::optional<fs::SpareFiles::SpareDir> spare = ctx.spares->TakeDir(ctx.job_root)) {
      auto moved = parent->MoveDirHere(spare->parent, spare->name, spare->id, leaf);
      if (!moved.ok()) return moved.status();
      if (!*moved) fs::SpareFiles::Remove(*spare);
    }
  }
  auto dir = parent->Sub(leaf, true);
  if (!dir.ok()) return dir.status();
  SampleDir out{std::move(*dir), std::nullopt};
  if (missing) out.made_in = std::move(*parent);
  return out;
}

}  // namespace

// A host file WriteOne put in place, its syncs still to come: the file's and its directory's
// (Dir::FinishSyncs), and `made_in`'s when its directory was made for it.
struct PendingSampleFile::HostFile {
  fs::Dir dir;
  fs::Dir::Unsynced file;
  std::optional<fs::Dir> made_in;
};

PendingSampleFile::PendingSampleFile() = default;
PendingSampleFile::~PendingSampleFile() = default;
PendingSampleFile::PendingSampleFile(PendingSampleFile&&) noexcept = default;
PendingSampleFile& PendingSampleFile::operator=(PendingSampleFile&&) noexcept = default;

std::vector<fs::SyncItem> PendingSampleFile::Syncs() const {
  std::vector<fs::SyncItem> out;
  for (const HostFile& f : files_) {
    for (const fs::SyncItem& item : f.dir.FinishSyncs(f.file)) out.push_back(item);
    if (f.made_in) out.push_back({f.made_in->fd(), false, 0});
  }
  return out;
}

Status PendingSampleFile::Finish(const std::vector<fs::SyncItem>& synced) {
  Status first = Status::Ok();
  size_t i = 0;
  for (HostFile& f : files_) {
    const size_t n = f.made_in ? 3 : 2;
    if (i + n > synced.size()) {
      if (first.ok()) first = Status::Error("sample file: " + f.file.target + ": not synced");
      break;
    }
    auto id = f.dir.Finished(std::move(f.file), synced[i].error, synced[i + 1].error);
    Status s = id.status();
    if (s.ok() && f.made_in) s = f.made_in->Synced(synced[i + 2].error);
    if (first.ok() && !s.ok()) first = s;
    i += n;
  }
  files_.clear();
  return first;
}

namespace {

// Writes `prefix` + `ranges` (or the index of `ranges`) to `url`. A host `url` is written
// beneath the job's root: the root opened once (created if missing), the directories beneath it
// made or opened with no link followed, the file put in place within its directory's fd and
// returned to be finished (synced); an S3 `url` is uploaded, and nothing is returned.
// `root` is the job's root opened by an earlier WriteOne of the same sample file, or empty.
Result<std::optional<PendingSampleFile::HostFile>> WriteOne(
    const Context& ctx, const std::string& url, const std::string& prefix,
    const std::vector<fs::FileRange>& ranges, bool index, IndexTokens tokens,
    std::optional<fs::Dir>& root) {
  auto fill = [&](int fd, const std::string& path) -> Status {
    return index ? WriteIndexFile(fd, path, prefix, ranges, tokens)
                 : fs::WriteRangesTo(fd, path, prefix, ranges);
  };
  if (!fs::IsS3Url(url)) {
    auto rel = BeneathJobRoot(ctx, url, "sample file");
    if (!rel.ok()) return rel.status();
    const fs::DirAndName dn = fs::SplitDirName("/" + *rel);
    if (dn.name.empty()) return Status::Error("sample file " + url + ": not a file name");
    if (!root) {
      auto opened = OpenJobRoot(ctx, true);
      if (!opened.ok()) return opened.status();
      root = std::move(*opened);
    }
    auto sample_dir = OpenSampleDir(ctx, *root, dn.dir.substr(1));
    if (!sample_dir.ok()) return Status::Error("writing " + url + ": " + sample_dir.message());
    fs::Dir* dir = &sample_dir->dir;
    // Nobody reads a round's files before its Ready, sent after WriteSampleFile returns, and a
    // restart before then writes them again: the cheaper order is safe (Dir::Replace,
    // kRenameThenSync, in its two halves).
    // A directory made just now has no temp files of killed processes to sweep.
    auto file = dir->ReplaceUnsynced(
        dn.name, -1, fill, ctx.spares ? ctx.spares->Take(ctx.job_root) : fs::UniqueFd(),
        sample_dir->made_in ? fs::Dir::Sweep::kNewDirectory : fs::Dir::Sweep::kStaleTemps);
    if (!file.ok()) return file.status();
    return std::optional<PendingSampleFile::HostFile>(PendingSampleFile::HostFile{
        std::move(sample_dir->dir), std::move(*file), std::move(sample_dir->made_in)});
  }
  auto u = ParseUrl(ctx, url);
  if (!u.ok()) return u.status();
  auto tmp = StagingFile::Make(ctx, url);
  if (!tmp.ok()) return tmp.status();
  if (Status s = fill(tmp->fd(), tmp->path()); !s.ok()) return s;
  s3::Client client(*ctx.credentials, ctx.s3_options);
  if (Status s = client.PutFile(*u, tmp->path()); !s.ok()) return s;
  return std::optional<PendingSampleFile::HostFile>();
}

}  // namespace

std::string UrlPrefix(const std::string& index_url) {
  return index_url.substr(0, index_url.rfind('/') + 1);
}

void FillSpareFiles(const Context& ctx) {
  if (!ctx.spares || ctx.job_root.empty() || fs::IsS3Url(ctx.job_root)) return;
  auto root = OpenJobRoot(ctx, false);
  if (root.ok()) ctx.spares->Fill(ctx.job_root, *root);
}

Result<PendingSampleFile> PutSampleFile(const Context& ctx, const SampleFile& file) {
  // Host files are all put in place before any is synced: their writes go out together.
  // The job's root is opened once for both.
  PendingSampleFile pending;
  std::optional<fs::Dir> root;
  if (!file.index_url.empty()) {
    auto index = WriteOne(ctx, file.index_url, file.index_prefix, file.ranges, true,
                          file.index_tokens, root);
    if (!index.ok()) return index.status();
    if (*index) pending.files_.push_back(std::move(**index));
  }
  auto data = WriteOne(ctx, file.url, file.prefix, file.ranges, false, file.index_tokens, root);
  if (!data.ok()) return data.status();
  if (*data) pending.files_.push_back(std::move(**data));
  return pending;
}

Status WriteSampleFile(const Context& ctx, const SampleFile& file) {
  auto pending = PutSampleFile(ctx, file);
  if (!pending.ok()) return pending.status();
  std::vector<fs::SyncItem> syncs = pending->Syncs();
  fs::SyncAll(syncs);
  return pending->Finish(syncs);
}

}  // namespace sedna::storage
