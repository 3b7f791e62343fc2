// The confined-path API (fs::Dir, adapters/fs/confined.h) on a tree a worker could have made.
// The input is lines:
//   d <path>            a directory            f <path>   a regular file
//   l <path> <target>   a symbolic link        p <path>   a FIFO
//   h <host dir>        the root to open (Dir::OpenHost, default "/")
//   r <relative path>   what to open beneath it (Sub and OpenFile)
//   c                   OpenHost and Sub create what is missing
// Entries are made under a fresh rootfs R inside a temp dir T that also holds T/outside/ (a
// directory and a file outside the rootfs, reachable by ".." or absolute link targets).
// Invariants:
//   * nothing crashes, hangs (a FIFO never blocks) or leaks an fd;
//   * a Dir from OpenHost, and whatever Sub and OpenFile return, is a directory (a regular file)
//     of R's tree, by (dev, ino) against a walk of R that follows no link: never T/outside;
//   * beneath the root nothing is followed: Sub/OpenFile succeed exactly when an lstat walk of
//     the components from the root finds no link, no "..", every component before the last a
//     directory and the last a directory (Sub) or a regular file (OpenFile); create aside;
//   * both resolvers (openat2 where the kernel has it, the O_NOFOLLOW walk) give the same answer;
//   * T/outside is never written to.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "adapters/fs/confined.h"
#include "fuzz_check.h"

namespace {

namespace stdfs = std::filesystem;
using sedna::fs::Dir;
using sedna::fs::Resolver;

const std::string& TempBase() {
  static const std::string base = [] {
    const char* dir = std::getenv("TMPDIR");
    const std::string d = dir != nullptr && *dir != '\0'           ? dir
                          : ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm"
                                                                   : "/tmp";
    return d + "/sedna_confined_fuzz." + std::to_string(::getpid());
  }();
  return base;
}

// A path an entry may be made at: relative, components of [A-Za-z0-9._-] only, no "..".
bool EntryPathOk(const std::string& p) {
  if (p.empty() || p.size() > 120 || p[0] == '/') return false;
  std::stringstream ss(p);
  for (std::string c; std::getline(ss, c, '/');) {
    if (c == "..") return false;
  }
  for (char ch : p) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-' ||
          ch == '/')) {
      return false;
    }
  }
  return true;
}

std::pair<dev_t, ino_t> IdOfFd(int fd) {
  struct stat st;
  FUZZ_CHECK(::fstat(fd, &st) == 0, "fstat");
  return {st.st_dev, st.st_ino};
}

// (dev, ino) of every directory and regular file of `root`'s tree, no link followed.
void Walk(const std::string& root, std::set<std::pair<dev_t, ino_t>>* dirs,
          std::set<std::pair<dev_t, ino_t>>* files) {
  struct stat st;
  if (::lstat(root.c_str(), &st) != 0) return;
  dirs->insert({st.st_dev, st.st_ino});
  std::error_code ec;
  for (auto it = stdfs::recursive_directory_iterator(root, ec);
       !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) dirs->insert({st.st_dev, st.st_ino});
    if (S_ISREG(st.st_mode)) files->insert({st.st_dev, st.st_ino});
  }
}

// What Sub (want_dir) or OpenFile should answer for `rel` beneath the directory `root_path`,
// by an lstat walk: false on "..", an absolute path, a link, a missing component, a non-directory
// before the last, or a last component of the wrong type.
bool ExpectedBeneath(const std::string& root_path, const std::string& rel, bool want_dir) {
  if (!rel.empty() && rel[0] == '/') return false;
  if (rel.find('\0') != std::string::npos) return false;
  std::vector<std::string> parts;
  std::stringstream ss(rel);
  for (std::string c; std::getline(ss, c, '/');) {
    if (c.empty() || c == ".") continue;
    if (c == ".." || c.size() > 255) return false;
    parts.push_back(c);
  }
  if (parts.size() > sedna::fs::kMaxPathComponents) return false;
  if (parts.empty()) return want_dir;
  std::string p = root_path;
  for (size_t i = 0; i < parts.size(); ++i) {
    p += "/" + parts[i];
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return false;
    if (S_ISLNK(st.st_mode)) return false;
    const bool last = i + 1 == parts.size();
    if (!last && !S_ISDIR(st.st_mode)) return false;
    if (last) return want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  }
  return false;
}

size_t OpenFds() {
  size_t n = 0;
  std::error_code ec;
  for (auto it = stdfs::directory_iterator("/proc/self/fd", ec);
       !ec && it != stdfs::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string t = TempBase();
  std::error_code ec;
  stdfs::remove_all(t, ec);
  const std::string root = t + "/root", outside = t + "/outside";
  stdfs::create_directories(root);
  stdfs::create_directories(outside + "/dir");
  {
    const int fd = ::open((outside + "/secret").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FUZZ_CHECK(fd >= 0, "creating outside/secret");
    FUZZ_CHECK(::write(fd, "S", 1) == 1, "writing outside/secret");
    ::close(fd);
  }

  std::string host = "/", rel;
  bool create = false;
  std::stringstream in(std::string(reinterpret_cast<const char*>(data), size));
  int entries = 0;
  for (std::string line; std::getline(in, line) && entries < 32;) {
    if (line.size() < 1) continue;
    const char op = line[0];
    const std::string arg = line.size() > 2 ? line.substr(2) : "";
    if (op == 'h') host = arg;
    if (op == 'r') rel = arg;
    if (op == 'c') create = true;
    if (op != 'd' && op != 'f' && op != 'l' && op != 'p') continue;
    std::string path = arg, target;
    if (op == 'l') {
      const size_t sp = arg.find(' ');
      if (sp == std::string::npos) continue;
      path = arg.substr(0, sp);
      target = arg.substr(sp + 1);
      if (target.empty() || target.size() > 200 || target.find('\0') != std::string::npos) {
        continue;
      }
      // "@" in a target stands for T (the real path of the temp dir): links out of the rootfs
      // as a worker would make them, by absolute host path.
      for (size_t at; (at = target.find('@')) != std::string::npos;) target.replace(at, 1, t);
    }
    if (!EntryPathOk(path)) continue;
    ++entries;
    const std::string full = root + "/" + path;
    stdfs::create_directories(stdfs::path(full).parent_path(), ec);
    if (op == 'd') stdfs::create_directories(full, ec);
    if (op == 'f') {
      const int fd = ::open(full.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW, 0644);
      if (fd >= 0) ::close(fd);
    }
    if (op == 'l') (void)::symlink(target.c_str(), full.c_str());
    if (op == 'p') (void)::mkfifo(full.c_str(), 0644);
  }
  if (host.size() > 300 || rel.size() > 300) return 0;

  std::set<std::pair<dev_t, ino_t>> outside_dirs, outside_files;
  Walk(outside, &outside_dirs, &outside_files);
  const size_t fds_before = OpenFds();
  {
    auto d = Dir::OpenHost(root, host, create);
    std::set<std::pair<dev_t, ino_t>> dirs, files;
    Walk(root, &dirs, &files);
    if (d.ok()) {
      FUZZ_CHECK(dirs.count(IdOfFd(d->fd())) == 1, "OpenHost gave a directory outside the rootfs");
      char buf[4096];
      const ssize_t n =
          ::readlink(("/proc/self/fd/" + std::to_string(d->fd())).c_str(), buf, sizeof buf - 1);
      FUZZ_CHECK(n > 0, "readlink of the root's fd");
      const std::string root_path(buf, static_cast<size_t>(n));
      FUZZ_CHECK(root_path == root || root_path.compare(0, root.size() + 1, root + "/") == 0,
                 root_path);
      int answers[2][2] = {{-1, -1}, {-1, -1}};  // [resolver][sub, file]
      for (int r = 0; r < 2; ++r) {
        if (r == 1 && !sedna::fs::KernelHasOpenat2()) break;
        sedna::fs::SetResolver(r == 0 ? Resolver::kWalk : Resolver::kOpenat2);
        // Sub without create first: its answer is what the lstat walk says.
        const bool sub_expected = ExpectedBeneath(root_path, rel, true);
        auto sub = d->Sub(rel, false);
        FUZZ_CHECK(sub.ok() == sub_expected, "Sub: " + rel + ": " + sub.message());
        if (sub.ok()) {
          FUZZ_CHECK(dirs.count(IdOfFd(sub->fd())) == 1, "Sub gave a directory outside the tree");
        }
        const bool file_expected = ExpectedBeneath(root_path, rel, false);
        auto file = d->OpenFile(rel);
        FUZZ_CHECK(file.ok() == file_expected, "OpenFile: " + rel + ": " + file.message());
        if (file.ok()) {
          FUZZ_CHECK(files.count(IdOfFd(file->fd.get())) == 1,
                     "OpenFile gave a file outside the tree");
          FUZZ_CHECK(S_ISREG(file->st.st_mode), "OpenFile: not a regular file");
        }
        answers[r][0] = sub.ok();
        answers[r][1] = file.ok();
      }
      if (answers[1][0] >= 0) {
        FUZZ_CHECK(answers[0][0] == answers[1][0] && answers[0][1] == answers[1][1],
                   "the resolvers disagree on " + rel);
      }
      sedna::fs::SetResolver(Resolver::kAuto);
      if (create) {
        // Made with create: still a directory of the rootfs's tree, and a file replaced in it
        // lands there.
        auto made = d->Sub(rel, true);
        if (made.ok()) {
          std::set<std::pair<dev_t, ino_t>> dirs2, files2;
          Walk(root, &dirs2, &files2);
          FUZZ_CHECK(dirs2.count(IdOfFd(made->fd())) == 1, "Sub(create) left the tree");
          auto id = made->Replace("written", -1, [](int fd, const std::string&) {
            return ::write(fd, "x", 1) == 1 ? sedna::Status::Ok() : sedna::Status::Error("w");
          });
          if (id.ok()) {
            Walk(root, &dirs2, &files2);
            FUZZ_CHECK(files2.count({id->dev, id->ino}) == 1, "Replace wrote outside the tree");
          }
        }
      }
    }
  }
  FUZZ_CHECK(OpenFds() == fds_before, "an fd leaked");
  std::set<std::pair<dev_t, ino_t>> outside_dirs2, outside_files2;
  Walk(outside, &outside_dirs2, &outside_files2);
  FUZZ_CHECK(outside_dirs2 == outside_dirs && outside_files2 == outside_files,
             "something was made outside the rootfs");
  stdfs::remove_all(t, ec);
  return 0;
}
