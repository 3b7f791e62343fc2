#include "adapters/s3/index_mirror.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "adapters/fs/files.h"
#include "adapters/s3/sigv4.h"

namespace sedna::s3 {
namespace {

constexpr std::string_view kStateMagic = "sedna-s3-index-mirror 1";
constexpr int64_t kMaxStateSize = 64 << 10;

std::string ErrnoText(int e) { return std::system_category().message(e); }

// Owns an fd; closes it on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now; close(2)'s errno (0 on success).
  int Close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

std::string Dirname(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

int FsyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return errno;
  return ::fsync(fd.get()) == 0 ? 0 : errno;
}

// The URL as one line: bucket and key %-encoded (keys may hold any byte, newlines included).
std::string StateUrl(const S3Url& url) {
  return "s3://" + UriEncode(url.bucket, true) + "/" + UriEncode(url.key, false);
}

std::string StateText(const S3Url& url, int64_t size, const std::string& etag) {
  return std::string(kStateMagic) + "\nurl " + StateUrl(url) + "\nsize " + std::to_string(size) +
         "\netag " + etag + "\n";
}

struct State {
  enum Kind { kNone, kValid, kInvalid } kind = kNone;
  int64_t size = 0;
  std::string etag;
};

bool ParseSize(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

State ParseState(std::string_view text, const S3Url& url) {
  State invalid;
  invalid.kind = State::kInvalid;
  std::string_view lines[4];
  for (auto& line : lines) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return invalid;
    line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
  }
  if (!text.empty() || lines[0] != kStateMagic) return invalid;
  if (lines[1] != "url " + StateUrl(url)) return invalid;  // another object's state
  State st;
  st.kind = State::kValid;
  if (lines[2].substr(0, 5) != "size " || !ParseSize(lines[2].substr(5), &st.size)) return invalid;
  if (lines[3].substr(0, 5) != "etag ") return invalid;
  st.etag = std::string(lines[3].substr(5));
  return st;
}

Status LoadState(const std::string& path, const S3Url& url, State* out) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      *out = State{};
      return Status::Ok();
    }
    return Status::Error("reading " + path + ": " + ErrnoText(errno));
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error("reading " + path + ": " + ErrnoText(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(text.size()) > kMaxStateSize) break;  // not a sidecar
  }
  *out = ParseState(text, url);
  return Status::Ok();
}

// The client's error text without its "<what>: " prefix (the whole text if it has none).
std::string WithoutPrefix(const std::string& message, const std::string& what) {
  const std::string prefix = what + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// For a GET error `s`: the 412 (the object is no longer the HEAD's version) said plainly.
Status GetError(const Status& s, const S3Url& url) {
  if (s.http_status() != 412) return s;
  const std::string what = "GET " + ToString(url);
  return s.WithMessage(what + ": the object changed during the sync (" +
                       WithoutPrefix(s.message(), what) +
                       "); the mirror keeps its last committed state");
}

// Fetches [from, to) of the HEAD's version into `fd` at offset `from`; *written counts the bytes.
Status Fetch(Client& client, const S3Url& url, const std::string& etag, int64_t from, int64_t to,
             int fd, const std::string& file, const std::string& where, int64_t* written) {
  *written = 0;
  if (to <= from) return Status::Ok();
  int64_t pos = from;
  Status s = client.Get(url, from, to - from, etag, [&](std::string_view chunk) -> Status {
    if (Status w = fs::WriteAllAt(fd, pos, chunk, file); !w.ok()) return w.With(where);
    pos += static_cast<int64_t>(chunk.size());
    *written = pos - from;
    return Status::Ok();
  });
  if (!s.ok()) return GetError(s, url);
  if (pos != to) {
    return Status::Error(where + ": GET " + ToString(url) + " returned " +
                         std::to_string(*written) + " bytes from offset " + std::to_string(from) +
                         ", expected " + std::to_string(to - from));
  }
  return Status::Ok();
}

// Whether the object (the HEAD's version) still holds, at [committed - n, committed), the last
// n <= kBoundaryCheck bytes of the mirror: one ranged GET. *fetched counts the bytes.
Result<bool> BoundaryUnchanged(Client& client, const S3Url& url, const std::string& etag,
                               const std::string& mirror_path, int64_t committed,
                               const std::string& where, int64_t* fetched) {
  const int64_t n = std::min<int64_t>(committed, kBoundaryCheck);
  std::string local(static_cast<size_t>(n), '\0');
  Fd fd(::open(mirror_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::Error(where + ": opening: " + ErrnoText(errno));
  for (int64_t got = 0; got < n;) {
    const ssize_t r =
        ::pread(fd.get(), local.data() + got, static_cast<size_t>(n - got), committed - n + got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::Error(where + ": reading: " + (r < 0 ? ErrnoText(errno) : "short"));
    got += r;
  }
  std::string remote;
  Status s = client.Get(url, committed - n, n, etag, [&](std::string_view chunk) -> Status {
    remote.append(chunk);
    return static_cast<int64_t>(remote.size()) > n ? Status::Error(where + ": GET sent too much")
                                                   : Status::Ok();
  });
  *fetched = static_cast<int64_t>(remote.size());
  if (!s.ok()) return GetError(s, url);
  return remote == local;
}

Status CommitState(const std::string& state_path, const S3Url& url, const ObjectInfo& info,
                   const std::string& where) {
  return fs::AtomicWriteFile(state_path, StateText(url, info.size, info.etag)).With(where);
}

// HEAD errors have no body; one GET of the first byte fetches the S3 error document.
Status ExplainHeadError(Client& client, const S3Url& url, const Status& head) {
  Status get = client.Get(url, 0, 1, [](std::string_view) { return Status::Ok(); });
  if (get.ok()) return head;
  return head.WithMessage(head.message() +
                          " (GET: " + WithoutPrefix(get.message(), "GET " + ToString(url)) + ")");
}

}  // namespace

Result<MirrorSync> SyncIndexMirror(Client& client, const S3Url& url,
                                   const std::string& mirror_path) {
  const std::string where = "mirror of " + ToString(url) + " at " + mirror_path;
  const std::string state_path = mirror_path + ".state";
  const int64_t requests_before = client.requests_sent();
  MirrorSync out;
  auto done = [&]() -> Result<MirrorSync> {
    out.requests = static_cast<int>(client.requests_sent() - requests_before);
    return out;
  };

  // 1-2. The committed state, and the mirror cut back to it.
  State state;
  if (Status s = LoadState(state_path, url, &state); !s.ok()) return s.With(where);
  const int64_t committed = state.kind == State::kValid ? state.size : 0;
  bool rewrite = state.kind == State::kInvalid;
  struct stat st {};
  bool mirror_exists = true;
  if (::stat(mirror_path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::Error(where + ": stat: " + ErrnoText(errno));
    mirror_exists = false;
  }
  if (!rewrite && mirror_exists) {
    if (st.st_size > committed) {
      if (::truncate(mirror_path.c_str(), committed) != 0) {
        return Status::Error(where + ": truncating to the committed " + std::to_string(committed) +
                             " bytes: " + ErrnoText(errno));
      }
    } else if (st.st_size < committed) {
      rewrite = true;  // lost committed bytes: not the file this state describes
    }
  } else if (!mirror_exists && committed > 0) {
    rewrite = true;
  }

  // 3. One HEAD.
  Result<ObjectInfo> head = client.Head(url);
  if (!head.ok()) {
    const int http = head.status().http_status();
    if (http == 404) {
      out.missing = true;
      return done();
    }
    if (http >= 400 && http < 500) return ExplainHeadError(client, url, head.status());
    return head.status();
  }
  const ObjectInfo& info = *head;

  // 4. Nothing new, an append, or a rewrite.
  if (!rewrite && state.kind == State::kValid && info.size == committed &&
      info.etag == state.etag) {
    return done();
  }
  // S3 has no append: a longer object is taken as appended to only if the last bytes already
  // mirrored are still there, in the same place; else it is a rewrite.
  if (!rewrite && state.kind == State::kValid && committed > 0 && info.size > committed) {
    auto same = BoundaryUnchanged(client, url, info.etag, mirror_path, committed, where,
                                  &out.bytes_checked);
    if (!same.ok()) return same.status();
    rewrite = !*same;
  }
  if (!rewrite && info.size >= committed && (state.kind == State::kNone || info.size > committed)) {
    Fd fd(::open(mirror_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0) return Status::Error(where + ": opening: " + ErrnoText(errno));
    auto fail = [&](Status s) -> Result<MirrorSync> {
      if (!mirror_exists) {
        ::unlink(mirror_path.c_str());  // created by this call: leave no mirror, as before
      } else {
        (void)::ftruncate(fd.get(), committed);  // else the next call cuts them off
      }
      return s;
    };
    Status s = Fetch(client, url, info.etag, committed, info.size, fd.get(), mirror_path, where,
                     &out.bytes_fetched);
    if (!s.ok()) return fail(s);
    if (::fdatasync(fd.get()) != 0) {
      return fail(Status::Error(where + ": syncing: " + ErrnoText(errno)));
    }
    if (const int e = fd.Close(); e != 0) {
      if (!mirror_exists) {
        ::unlink(mirror_path.c_str());
      } else {
        (void)::truncate(mirror_path.c_str(), committed);
      }
      return Status::Error(where + ": writing: " + ErrnoText(e));
    }
    if (!mirror_exists) {
      if (const int e = FsyncDir(Dirname(mirror_path)); e != 0) {
        return Status::Error(where + ": syncing directory " + Dirname(mirror_path) + ": " +
                             ErrnoText(e));
      }
    }
    if (Status c = CommitState(state_path, url, info, where); !c.ok()) return c;
    out.changed = true;
    return done();
  }

  // Rewrite: the whole object into <mirror>.tmp, then renamed over the mirror.
  const std::string tmp = mirror_path + ".tmp";
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::Error(where + ": creating " + tmp + ": " + ErrnoText(errno));
  auto fail = [&](Status s) -> Result<MirrorSync> {
    ::unlink(tmp.c_str());
    return s;
  };
  if (Status s =
          Fetch(client, url, info.etag, 0, info.size, fd.get(), tmp, where, &out.bytes_fetched);
      !s.ok()) {
    return fail(s);
  }
  if (::fsync(fd.get()) != 0) {
    return fail(Status::Error(where + ": syncing " + tmp + ": " + ErrnoText(errno)));
  }
  if (const int e = fd.Close(); e != 0) {
    return fail(Status::Error(where + ": writing " + tmp + ": " + ErrnoText(e)));
  }
  if (::rename(tmp.c_str(), mirror_path.c_str()) != 0) {
    return fail(Status::Error(where + ": renaming " + tmp + ": " + ErrnoText(errno)));
  }
  if (const int e = FsyncDir(Dirname(mirror_path)); e != 0) {
    return Status::Error(where + ": syncing directory " + Dirname(mirror_path) + ": " +
                         ErrnoText(e));
  }
  if (Status c = CommitState(state_path, url, info, where); !c.ok()) return c;
  out.changed = true;
  out.rewritten = true;
  return done();
}

}  // namespace sedna::s3
