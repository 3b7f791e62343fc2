// Confined file operations: every file the LC reads, writes or deletes on a job's behalf is
// reached through a directory fd of the root it is allowed under, never by a path name checked
// first and opened later (docs/security.md, "Paths").
//
//   * A root is opened once: Dir::OpenHost resolves a host directory under the rootfs mount with
//     the host's symlinks taken as the host would (absolute ones against the rootfs), never above
//     the rootfs. Dir::OpenTrusted opens a directory of the LC's own (spool, staging).
//   * Beneath a root (Dir::Sub, Dir::OpenFile, Dir::Replace, ...), nothing is followed: no
//     symlink, no magic link, no "..": openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//     RESOLVE_NO_MAGICLINKS) where the kernel has it (5.6+), else a walk of one openat(O_NOFOLLOW)
//     per component. Both resolvers give the same answers (tests run both).
//   * A file is checked on its fd (fstat: regular, size) and read from that fd, so nothing can be
//     swapped between the check and the use.
//   * Writes create an O_EXCL temp file beneath the directory fd and renameat it within that
//     directory; removals name an entry of the directory fd and its expected (dev, ino).
//
// Paths and components are bounded (kMaxPathBytes, kMaxPathComponents) and never recursed on.
// Errors name the path and say why ("... is a symbolic link (links are not followed)").
// Thread-safe: a Dir is an fd and a name; concurrent operations on one Dir are the kernel's.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/fs/sync_batch.h"
#include "core/status.h"

namespace sedna::fs {

// What a path may be: PATH_MAX bytes, and a component count no directory tree needs.
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxPathComponents = 256;
// Symlinks followed while opening a root (Dir::OpenHost), as the kernel's MAXSYMLINKS.
inline constexpr int kMaxRootSymlinks = 40;

// `path` is at most kMaxPathBytes, at most kMaxPathComponents components, and has no NUL byte.
// The error names `field`: "model url: 5000 bytes, over the 4096 a path may have".
Status CheckPathBounds(std::string_view path, std::string_view field);

// The relative path of `path` beneath `dir`, both absolute host paths, compared lexically after
// CleanPath ("/out" and "/out/train/1/m.pb" -> "train/1/m.pb"; "/out" itself -> ""); nullopt when
// `path` is not `dir` or beneath it, or either is relative. No filesystem access: the confined
// open that follows is the check that counts.
std::optional<std::string> RelativeBeneath(std::string_view dir, std::string_view path);

// Which resolver opens beneath a root. kAuto (the default): openat2 when the kernel answers it.
enum class Resolver { kAuto, kOpenat2, kWalk };
// For tests (both resolvers) and for kernels whose seccomp profile answers openat2 wrongly.
void SetResolver(Resolver r);
// The resolver in use now: kOpenat2 or kWalk.
Resolver ActiveResolver();
// Whether this kernel has openat2(2) (probed once).
bool KernelHasOpenat2();

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void Reset();

 private:
  int fd_ = -1;
};

// stat(2)'s fields and the file's birth time (statx(2)'s btime, in ns since the epoch; 0 where
// the filesystem keeps none).
struct Stat : ::stat {
  uint64_t birth_ns = 0;
};

// fstat of `fd` with its birth time; `path` names it in an error.
Result<Stat> Fstat(int fd, const std::string& path);

// A file's identity on its filesystem: dev/ino, and the birth time that tells one file from a
// later one given the freed inode number (a file deleted and another made: same dev/ino). Equal
// when dev/ino are and the birth times are, or one of them is not known (0: a filesystem without
// birth times, or a record written before they were kept).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t birth_ns = 0;
  bool operator==(const FileId& o) const {
    return dev == o.dev && ino == o.ino &&
           (birth_ns == 0 || o.birth_ns == 0 || birth_ns == o.birth_ns);
  }
};
FileId IdOf(const Stat& st);

// A regular file opened for reading (O_RDONLY | O_NONBLOCK, no link followed), with its fstat.
struct OpenedFile {
  UniqueFd fd;
  Stat st{};
  std::string path;  // for messages: the root's path and the relative path
};

// At most `max` bytes of `f` from its start (fewer at its end), retrying short reads and EINTR.
Result<std::string> ReadUpTo(const OpenedFile& f, size_t max);

class Dir {
 public:
  Dir() = default;  // not a directory: every operation fails
  Dir(Dir&&) noexcept = default;
  Dir& operator=(Dir&&) noexcept = default;

  // A directory of the LC's own (database dir, spool, staging), by path: links followed, as the
  // operator configured it. `create`: made (mkdir -p, 0755) when missing.
  static Result<Dir> OpenTrusted(const std::string& path, bool create);

  // The host directory `host_dir` (absolute) under the rootfs mount `rootfs` ("" or "/": the
  // host's own "/"): each component opened without following it; a symlink met on the way is
  // resolved as the host resolves it (an absolute target from the rootfs, ".." never above it),
  // at most kMaxRootSymlinks of them. `create`: missing components are made (0755) beneath the
  // component before them. This is how a job's roots (its output directory, a deploy target's
  // directory, its hot-update directory) are opened; what lies beneath them is opened with Sub
  // and OpenFile, which follow nothing.
  static Result<Dir> OpenHost(const std::string& rootfs, const std::string& host_dir, bool create);

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }  // for messages

  // The directory `rel` beneath this one ("" is this one again), no link followed, no "..".
  // `create`: missing components are made (0755).
  Result<Dir> Sub(std::string_view rel, bool create) const;

  // The regular file `rel` beneath this one, opened for reading (non-blocking: a FIFO never
  // blocks), no link followed. Anything but a regular file is an error naming it.
  Result<OpenedFile> OpenFile(std::string_view rel) const;

  // lstat of the entry `name` (one component) of this directory; nullopt when there is none.
  Result<std::optional<Stat>> Lstat(std::string_view name) const;

  // Atomically replaces the entry `name` (one component) with a new regular file: fill(fd, path)
  // writes its content into an O_CREAT | O_EXCL temp file made in this directory, then fsync,
  // renameat over `name` (a link there is replaced, never followed), fsync of this directory.
  // `mode` >= 0 is set with fchmod (whatever the umask), else 0644 before umask. On error the
  // entry is unchanged and the temp file removed; if only the directory fsync failed, the error
  // says the entry was already replaced. Temp files of dead LC processes beside `name` are
  // removed first. Returns the new file's identity. `path` passed to fill names the target.
  //
  // Durability: with kSyncThenRename (the default) even a power loss leaves `name` the old file or
  // the complete new one. kRenameThenSync renames first and then fsyncs the file and the directory:
  // on ext4 the file's fsync then commits the rename too, and the directory's has nothing left to
  // commit (one journal commit instead of two, ~0.4 ms here). A process crash still shows the old
  // or the complete new file (the content is written before the rename); a power loss before it
  // returns may leave `name` short. Only for a file nobody reads before the caller, having seen it
  // return, says it is there, and that the caller writes again after a restart until then (a
  // round's sample file: Ready is sent after it, and a restart re-issues the write).
  enum class Order { kSyncThenRename, kRenameThenSync };
  Result<FileId> Replace(std::string_view name, int mode,
                         const std::function<Status(int fd, const std::string& path)>& fill,
                         Order order = Order::kSyncThenRename) const;

  // A file Replace(kRenameThenSync) has put in place, its fsyncs still to come (FinishReplace).
  struct Unsynced {
    UniqueFd file;       // the new file, open, not synced
    std::string target;  // its path, for messages
    FileId id;
  };
  // Replace with kRenameThenSync in two halves: ReplaceUnsynced writes the file and renames it
  // over `name`, with Replace's errors; FinishReplace, on the same directory, fsyncs the file and
  // the directory (at once: fs::SyncAll; an error says the entry was already replaced). The same
  // durability as kRenameThenSync once FinishReplace returns ok. Several files put in place first
  // and synced together afterwards (FinishSyncs, Finished) have their writes in flight together
  // rather than one after another (and on a journalled ext4 the first fsync commits every rename
  // made before it, so the later ones have no journal commit of their own).
  //
  // `spare`, if valid, is an unnamed file (SpareFiles) on this directory's mount: the content is
  // written into it and it is linked in place (no temp file is created: no inode is allocated).
  // When it cannot be linked here the temp file is made as without it.
  //
  // Every write here first removes the temp files of `name` that killed processes left in this
  // directory (a listing of it); kNewDirectory skips that for a directory the caller made just
  // now, which has none.
  enum class Sweep { kStaleTemps, kNewDirectory };
  Result<Unsynced> ReplaceUnsynced(
      std::string_view name, int mode,
      const std::function<Status(int fd, const std::string& path)>& fill,
      UniqueFd spare = UniqueFd(), Sweep sweep = Sweep::kStaleTemps) const;
  Result<FileId> FinishReplace(Unsynced u) const;
  // FinishReplace in its parts, for a caller that makes the syncs itself together with others'
  // (fs::SyncAll, fs::Syncer): the two syncs (the file's, this directory's; FinishReplace makes
  // them at once with SyncAll), then Finished with their errors (0 or an errno), which closes the
  // file and returns what FinishReplace would.
  std::array<SyncItem, 2> FinishSyncs(const Unsynced& u) const;
  Result<FileId> Finished(Unsynced u, int file_error, int dir_error) const;

  // A hard link `name` in this directory to the regular file `src_name` of `src` (linkat without
  // AT_SYMLINK_FOLLOW: a link is never followed). false: `name` exists already. A filesystem
  // that cannot link (EXDEV, EPERM, ENOTSUP, EMLINK) is an error with that errno's text.
  Result<bool> LinkFrom(const Dir& src, std::string_view src_name, std::string_view name) const;

  // Removes the entry `name` only if it is still the regular file `id` (what this LC created
  // there); a different file, a link or a directory under that name is an error and left alone.
  // No entry: ok.
  Status RemoveFileIf(std::string_view name, const FileId& id) const;

  // Moves the directory `from_name` of `from` to the entry `name` (one component) of this
  // directory, unless `name` exists (renameat2 RENAME_NOREPLACE: nothing is replaced, no link
  // followed). true: moved, and what now is `name` is the directory `id`; false: nothing moved
  // (`name` exists, `from_name` is gone, another mount, a filesystem that cannot do it). An error:
  // what was moved is not `id` (swapped meanwhile); it stays at `name`, for the caller's next open
  // of it (which follows no link) to refuse.
  Result<bool> MoveDirHere(const Dir& from, std::string_view from_name, const FileId& id,
                           std::string_view name) const;

  // Removes the empty directory `name` (one component). Not empty, or none: ok, nothing done.
  Status RemoveDirIfEmpty(std::string_view name) const;

  // The names in this directory ("." and ".." left out), at most `max_entries` (more: error).
  Result<std::vector<std::string>> List(size_t max_entries = 65536) const;

  // fsync(2) of this directory.
  Status Sync() const;
  // What Sync returns had its fsync returned `error` (0 or an errno): for a sync made elsewhere.
  Status Synced(int error) const;

  // An exclusive flock(2) on this directory, held until the returned fd is closed (between the
  // daemon and a rollback-model run, which open the same directory).
  Result<UniqueFd> Lock() const;

 private:
  Dir(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  std::optional<Result<Unsynced>> PlaceSpare(
      UniqueFd spare, std::string_view name, int mode,
      const std::function<Status(int fd, const std::string& path)>& fill, Sweep sweep) const;
  Result<Unsynced> WriteAndRename(
      std::string_view name, int mode,
      const std::function<Status(int fd, const std::string& path)>& fill, bool sync_first,
      Sweep sweep = Sweep::kStaleTemps) const;
  UniqueFd fd_;
  std::string path_;
};

// The regular file `host_path` (absolute) under the rootfs mount, resolved as Dir::OpenHost
// resolves a directory (host links taken as the host takes them, never above the rootfs), its last
// component included: a link there is followed the same way. Anything but a regular file is an
// error naming it, and is never opened (only lstat'ed); the file is opened O_RDONLY | O_NOFOLLOW
// and checked on its fd. nullopt: the file, or a directory on its way, does not exist. This is
// how an index the operator names (a Dataset's spec.url) is opened.
Result<std::optional<OpenedFile>> OpenHostFile(const std::string& rootfs,
                                               const std::string& host_path);

// Copies all of `src` into the entry `name` of `dir` atomically (Dir::Replace), reading from the
// opened fd (never by name again). `mode` < 0: src's permission bits. Memory: one fixed buffer.
Result<FileId> CopyInto(const OpenedFile& src, const Dir& dir, std::string_view name,
                        int mode = -1);

// A host path's directory and last component, for confined writes: "/a/b/c" -> {"/a/b", "c"}.
// The name is "" for "/" or a path ending in "/" (nothing to write).
struct DirAndName {
  std::string dir;
  std::string name;
};
DirAndName SplitDirName(std::string_view host_path);

}  // namespace sedna::fs
