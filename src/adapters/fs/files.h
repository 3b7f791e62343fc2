// Local filesystem primitives: mkdir -p, atomic (temp + fsync + rename + directory fsync) writes
// and copies, and host path <-> LC view path translation under the rootfs mount
// (docs/protocol.md §P7.2, §P7.4; fixes [P:B13] and [P:B25]).
//
// Every error names the file and the cause, e.g. "writing /x/data.txt: No space left on device".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sedna::fs {

// The directory part of a path: "/a/b" -> "/a", "/a" -> "/", "a" -> ".", "/a//b" -> "/a".
std::string Dirname(const std::string& path);

// What a non-regular file is, for errors: "a FIFO", "a directory", "a character device",
// "a block device", "a socket", "a symbolic link"; "" for a regular file or an unknown type.
std::string FileKind(unsigned mode);

// mkdir -p with mode 0755 (before umask). An existing directory is fine; an existing
// non-directory component is an error. Error: "mkdir /a/b: Permission denied".
Status MakeDirs(const std::string& path);

// Bytes [begin, end) of the file at `path`.
struct FileRange {
  std::string path;
  int64_t begin = 0;
  int64_t end = 0;
};

// Atomically replaces `path` with `prefix` followed by the concatenation of `ranges`. Memory use
// is a fixed buffer, whatever the sizes. The new file is durable when this returns ok (data and
// directory entry fsynced). On error the target keeps its old content (or stays absent) and no
// temp file is left behind; a range that is invalid or extends past its file's end is an error
// naming that file. The parent directory must exist. New files get mode 0644 (before umask).
// Exception: if only the final directory fsync fails, the rename has happened; the error says so.
Status WriteFileFromRanges(const std::string& path, std::string_view prefix,
                           const std::vector<FileRange>& ranges);

// Writes `prefix`, then the bytes of `ranges` in order, to the fd `fd` from offset 0 (a new
// file: Dir::Replace's temp file). `path` names the target in errors and for the fault hook.
Status WriteRangesTo(int fd, const std::string& path, std::string_view prefix,
                     const std::vector<FileRange>& ranges);

// WriteFileFromRanges(path, content, {}).
Status AtomicWriteFile(const std::string& path, std::string_view content);

// Atomically replaces `dst` with a copy of `src` (never a partial or stale-tailed target, [P:B13]).
// Creates dst's parent directories. `src` must be a regular file ("copying /m: /m is a directory"
// otherwise). The copy keeps src's permission bits.
Status AtomicCopyFile(const std::string& src, const std::string& dst);

// fsync(2) on a directory, so that entries created, renamed or removed in it are durable.
// Error: "syncing directory /a: <errno text>".
Status SyncDir(const std::string& dir);

// Go's path.Clean: collapses "//", removes "." and resolves ".." lexically; "" -> ".".
std::string CleanPath(std::string_view path);

// Host path -> the same path as seen inside the LC (host filesystem mounted at `rootfs`), like
// Go's filepath.Join(rootfs, host_path). Deviation: ".." in host_path cannot climb above rootfs
// ("/rootfs" + "/../etc" -> "/rootfs/etc", which is where the host's /etc is), where Go would
// yield the container's "/etc". Empty rootfs -> CleanPath(host_path).
std::string JoinRootfs(const std::string& rootfs, const std::string& host_path);

// Inverse of JoinRootfs, by path components ([P:B25]): "/rootfs" and "/rootfs/" strip the same,
// "/rootfsx/a" is not under "/rootfs". A path under rootfs comes back cleaned and absolute
// ("/rootfs" -> "/", "/rootfs//out/" -> "/out/", a trailing '/' is kept); any other path, or an
// empty or "/" rootfs, returns `path` unchanged.
std::string StripRootfs(const std::string& rootfs, const std::string& path);

// True for "s3://..." (scheme compared case-insensitively, as Go's url.Parse lower-cases it).
bool IsS3Url(std::string_view url);

// Writes all of `data` at `offset` of `fd` (retrying short writes and EINTR). `path` is used in
// the error ("writing <path>: <errno text>") and passed to the write fault hook.
Status WriteAllAt(int fd, int64_t offset, std::string_view data, const std::string& path);

// Fault-injection seam for tests (unit, crash and IO-fault tests). While a hook is set, every
// write made through this module (WriteAllAt: atomic writes and copies, the dataset spool) first
// calls hook(path), where path is the file named in errors (for atomic writes: the target, not
// the temp file); a non-zero return is an errno that the write fails with, exactly as if
// write(2) had returned it. The fsync of a directory calls hook(directory) too. Pass nullptr to
// clear. Thread-safe; no cost beyond an atomic load when unset. Not for production use.
void SetWriteFaultForTest(std::function<int(const std::string& path)> hook);

namespace internal {
// The hook's answer for `path` (0: none set, or no fault). For confined.cc.
int InjectedFault(const std::string& path);
}  // namespace internal

}  // namespace sedna::fs
