#include "adapters/store/intake_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "adapters/store/crc32.h"

namespace sedna::store {

namespace {

// The entries' checksum is CRC-32C (the CPU's instruction, as leveldb's log records use it).
constexpr char kJournalMagic[8] = {'S', 'E', 'D', 'N', 'A', 'I', 'J', '2'};
// Before session 26 it was CRC-32 (slicing-by-8 tables, 3.5 instructions a byte): such a file is
// read with it, appended to with it while it holds entries, and rewritten as SEDNAIJ2 when it
// starts over (Reset).
constexpr char kLegacyMagic[8] = {'S', 'E', 'D', 'N', 'A', 'I', 'J', '1'};

// File layout: a 64-byte header, then entries from kFirst, each starting at a multiple of 8:
//   u32 len    payload bytes (0: no entry here, the end of the chain)
//   u32 crc    CRC-32C (SEDNAIJ1: CRC-32) of seq and payload: an entry a kill cut short (one
//              write per entry) fails it
//   u64 seq
//   payload    u32 worker length, worker name, request body
struct Header {
  char magic[8];
  uint64_t identity;
  char reserved[48];
};
static_assert(sizeof(Header) == 64);
constexpr size_t kFirst = sizeof(Header);
constexpr size_t kEntryHeader = 16;

constexpr size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }

// Append's buffer keeps its capacity up to this (a typical entry is well under 1 KiB).
constexpr size_t kKeepEntryBytes = 16 * 1024;

uint32_t EntryCrc(bool legacy, uint64_t seq, const char* payload, size_t len) {
  char s[8];
  std::memcpy(s, &seq, 8);
  return legacy ? Crc32(Crc32(0, s, 8), payload, len) : Crc32c(Crc32c(0, s, 8), payload, len);
}

// Reads `n` bytes at `pos`: how many it got (fewer at the end of the file), or -1 (errno).
ssize_t ReadFull(int fd, size_t pos, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, buf + got, n - got, static_cast<off_t>(pos + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

Result<std::unique_ptr<IntakeJournal>> IntakeJournal::Open(const std::string& path,
                                                           uint64_t db_identity, size_t capacity) {
  auto fail = [&](const char* what, int e) {
    return Result<std::unique_ptr<IntakeJournal>>(
        Status::Errno(e, "intake journal " + path + ": " + what + ": " + std::strerror(e)));
  };
  if (capacity < kFirst + kEntryHeader + 8 || capacity % 8 != 0)
    return fail("bad capacity", EINVAL);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot open", errno);
  std::unique_ptr<IntakeJournal> j(new IntakeJournal(path, fd, capacity));
  j->identity_ = db_identity;
  j->pos_ = kFirst;
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail("cannot stat", errno);
  if (!S_ISREG(st.st_mode)) {
    return Result<std::unique_ptr<IntakeJournal>>::Error("intake journal " + path +
                                                         ": not a regular file");
  }
  if (int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(capacity)); rc != 0) {
    return fail("cannot allocate", rc);
  }
  Header h{};
  const ssize_t got = ReadFull(fd, 0, reinterpret_cast<char*>(&h), sizeof h);
  if (got < 0) return fail("cannot read", errno);
  const bool whole = got == static_cast<ssize_t>(sizeof h) && h.identity == db_identity;
  const bool current = whole && std::memcmp(h.magic, kJournalMagic, sizeof h.magic) == 0;
  const bool legacy = whole && std::memcmp(h.magic, kLegacyMagic, sizeof h.magic) == 0;
  if (!current && !legacy) {
    // Foreign or new: invalidate the first entry before claiming the file.
    const uint32_t zero = 0;
    if (Status s = j->WriteAt(kFirst, reinterpret_cast<const char*>(&zero), 4); !s.ok()) return s;
    if (Status s = j->WriteHeader(); !s.ok()) return s;
  } else {
    j->legacy_crc_ = legacy;
    if (Status s = j->Scan(); !s.ok()) return s;
  }
  return j;
}

IntakeJournal::~IntakeJournal() { ::close(fd_); }

Status IntakeJournal::WriteAt(size_t pos, const char* data, size_t n) {
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(pos + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      return Status::Errno(errno, "intake journal " + path_ + ": writing: " + std::strerror(errno));
    if (w == 0) return Status::Error("intake journal " + path_ + ": writing: no progress");
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status IntakeJournal::EnsureAllocated() {
  // The size by lseek, not fstat: a stat marks the file's ctime as seen, and with multigrain
  // timestamps (ext4 since Linux 6.13) the next write then takes a fresh fine-grained time, an
  // inode update on every Append: a third of its CPU (perf, ext4 on Linux 6.18). pwrite and pread
  // never use the file offset that lseek moves.
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  if (size < 0) {
    return Status::Errno(
        errno, "intake journal " + path_ + ": cannot find its size: " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(size) >= capacity_) return Status::Ok();
  if (pos_ != kFirst) {
    // The entries since the last Reset may be gone: their reports must be committed first.
    return Status::Error("intake journal " + path_ + ": the file was cut to " +
                         std::to_string(size) + " bytes under the journal; " +
                         std::to_string(pos_ - kFirst) + " bytes of entries may be lost");
  }
  if (int rc = ::posix_fallocate(fd_, 0, static_cast<off_t>(capacity_)); rc != 0) {
    return Status::Errno(rc, "intake journal " + path_ + ": cannot allocate: " + std::strerror(rc));
  }
  const uint32_t zero = 0;
  if (Status s = WriteAt(kFirst, reinterpret_cast<const char*>(&zero), 4); !s.ok()) return s;
  return WriteHeader();
}

Status IntakeJournal::WriteHeader() {
  Header h{};
  std::memcpy(h.magic, kJournalMagic, sizeof kJournalMagic);
  h.identity = identity_;
  Status s = WriteAt(0, reinterpret_cast<const char*>(&h), sizeof h);
  if (s.ok()) legacy_crc_ = false;
  return s;
}

Status IntakeJournal::ReadError() const {
  const int e = errno;
  return Status::Errno(e, "intake journal " + path_ + ": cannot read: " + std::strerror(e));
}

Status IntakeJournal::Scan() {
  size_t pos = kFirst;
  uint64_t last_seq = 0;
  std::string payload;
  while (pos + kEntryHeader <= capacity_) {
    char head[kEntryHeader];
    ssize_t n = ReadFull(fd_, pos, head, sizeof head);
    if (n < 0) return ReadError();
    if (n != static_cast<ssize_t>(sizeof head)) break;  // cut short: the rest reads as zeros
    uint32_t len, crc;
    uint64_t seq;
    std::memcpy(&len, head, 4);
    if (len < 4 || len > capacity_ - pos - kEntryHeader) break;
    std::memcpy(&crc, head + 4, 4);
    std::memcpy(&seq, head + 8, 8);
    payload.resize(len);
    n = ReadFull(fd_, pos + kEntryHeader, payload.data(), len);
    if (n < 0) return ReadError();
    if (n != static_cast<ssize_t>(len)) break;
    if (EntryCrc(legacy_crc_, seq, payload.data(), len) != crc) break;
    if (last_seq != 0 && seq != last_seq + 1) break;  // left from before a Reset
    uint32_t wlen;
    std::memcpy(&wlen, payload.data(), 4);
    if (wlen > len - 4) break;
    last_seq = seq;
    pos += Align8(kEntryHeader + len);
    found_.push_back({{seq, payload.substr(4, wlen), payload.substr(4 + wlen)}, pos});
  }
  found_last_seq_ = last_seq;
  return Status::Ok();
}

std::vector<IntakeEntry> IntakeJournal::Recover(uint64_t applied) {
  std::vector<IntakeEntry> out;
  size_t end_of_pending = kFirst;
  for (auto& f : found_) {
    if (f.entry.seq <= applied) continue;
    out.push_back(std::move(f.entry));
    end_of_pending = f.end;
  }
  found_ = {};
  next_seq_ = std::max(applied, found_last_seq_) + 1;
  pos_ = out.empty() ? kFirst : end_of_pending;
  if (pos_ == kFirst) Reset();
  return out;
}

Result<uint64_t> IntakeJournal::Append(std::string_view worker, std::string_view body) {
  const size_t len = 4 + worker.size() + body.size();
  const size_t need = Align8(kEntryHeader + len);
  if (len > UINT32_MAX || need > capacity_ - pos_) {
    return Result<uint64_t>::Error(ErrorCode::kResourceExhausted,
                                   "intake journal full (" + std::to_string(pos_ - kFirst) +
                                       " of " + std::to_string(capacity_ - kFirst) +
                                       " bytes in use, entry " + std::to_string(need) + ")");
  }
  if (Status s = EnsureAllocated(); !s.ok()) return s;
  // One write puts the entry in place and zeroes the length of the slot after it (the slot after
  // the newest entry never holds a stale length, so no kill can leave an old entry chained after
  // it). A kill can cut a write short between pages: what it left of the entry fails the CRC, so
  // the entry exists once the whole write is done.
  const bool clear_next = pos_ + need + kEntryHeader <= capacity_;
  std::string& e = entry_;
  // The header is written below; the alignment padding and the next slot's length stay zero.
  e.assign(need + (clear_next ? 4 : 0), '\0');
  struct Shrink {
    std::string& e;
    ~Shrink() {
      if (e.capacity() > kKeepEntryBytes) std::string().swap(e);
    }
  } shrink{e};
  const uint64_t seq = next_seq_;
  char* payload = e.data() + kEntryHeader;
  const uint32_t wlen = static_cast<uint32_t>(worker.size());
  std::memcpy(payload, &wlen, 4);
  std::memcpy(payload + 4, worker.data(), worker.size());
  std::memcpy(payload + 4 + worker.size(), body.data(), body.size());
  const uint32_t crc = EntryCrc(legacy_crc_, seq, payload, len);
  const uint32_t len32 = static_cast<uint32_t>(len);
  std::memcpy(e.data(), &len32, 4);
  std::memcpy(e.data() + 4, &crc, 4);
  std::memcpy(e.data() + 8, &seq, 8);
  if (Status s = WriteAt(pos_, e.data(), e.size()); !s.ok()) {
    // Part of it may be in place: zero its length again, so that it cannot count as an entry
    // (a retry writes the same sequence number here).
    const uint32_t zero = 0;
    (void)WriteAt(pos_, reinterpret_cast<const char*>(&zero), 4);
    return s;
  }
  pos_ += need;
  next_seq_++;
  return seq;
}

void IntakeJournal::Reset() {
  pos_ = kFirst;
  const uint32_t zero = 0;
  // The chain is cut first: a kill between the two writes leaves either header with no entry.
  if (WriteAt(kFirst, reinterpret_cast<const char*>(&zero), 4).ok() && legacy_crc_) {
    (void)WriteHeader();  // a file of the old format starts over in the new one
  }
}

size_t IntakeJournal::used() const { return pos_ - kFirst; }

}  // namespace sedna::store
