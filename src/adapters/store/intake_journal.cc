#include "adapters/store/intake_journal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace sedna::store {

namespace {

constexpr char kMagic[8] = {'S', 'E', 'D', 'N', 'A', 'I', 'J', '1'};

// File layout: a 64-byte header, then entries from kFirst, each starting at a multiple of 8:
//   u32 len    payload bytes; written last (release store), so 0 or a stale value until the rest
//              of the entry is in place
//   u32 crc    CRC-32 of seq and payload
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

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

uint32_t Crc32(uint32_t crc, const char* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc = kCrcTable[(crc ^ static_cast<unsigned char>(p[i])) & 0xFF] ^ (crc >> 8);
  }
  return ~crc;
}

uint32_t EntryCrc(uint64_t seq, const char* payload, size_t len) {
  char s[8];
  std::memcpy(s, &seq, 8);
  return Crc32(Crc32(0, s, 8), payload, len);
}

uint32_t* LenAt(char* base, size_t pos) { return reinterpret_cast<uint32_t*>(base + pos); }

}  // namespace

Result<std::unique_ptr<IntakeJournal>> IntakeJournal::Open(const std::string& path,
                                                           uint64_t db_identity, size_t capacity) {
  auto fail = [&](const char* what) {
    return Result<std::unique_ptr<IntakeJournal>>::Error("intake journal " + path + ": " + what +
                                                         ": " + std::strerror(errno));
  };
  if (capacity < kFirst + kEntryHeader + 8 || capacity % 8 != 0) {
    errno = EINVAL;
    return fail("bad capacity");
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot open");
  if (int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(capacity)); rc != 0) {
    errno = rc;
    auto r = fail("cannot allocate");
    ::close(fd);
    return r;
  }
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    auto r = fail("cannot map");
    ::close(fd);
    return r;
  }
  auto* base = static_cast<char*>(p);
  auto* h = reinterpret_cast<Header*>(base);
  if (std::memcmp(h->magic, kMagic, sizeof kMagic) != 0 || h->identity != db_identity) {
    // Foreign or new: invalidate the first entry before claiming the file.
    __atomic_store_n(LenAt(base, kFirst), uint32_t{0}, __ATOMIC_RELEASE);
    h->identity = db_identity;
    std::memcpy(h->magic, kMagic, sizeof kMagic);
  }
  return std::unique_ptr<IntakeJournal>(new IntakeJournal(fd, base, capacity));
}

IntakeJournal::~IntakeJournal() {
  ::munmap(base_, capacity_);
  ::close(fd_);
}

std::vector<IntakeEntry> IntakeJournal::Recover(uint64_t applied) {
  std::vector<IntakeEntry> out;
  uint64_t last_seq = 0;
  size_t pos = kFirst;
  size_t end_of_pending = kFirst;
  while (pos + kEntryHeader <= capacity_) {
    const uint32_t len = __atomic_load_n(LenAt(base_, pos), __ATOMIC_ACQUIRE);
    if (len < 4 || len > capacity_ - pos - kEntryHeader) break;
    uint32_t crc;
    uint64_t seq;
    std::memcpy(&crc, base_ + pos + 4, 4);
    std::memcpy(&seq, base_ + pos + 8, 8);
    const char* payload = base_ + pos + kEntryHeader;
    if (EntryCrc(seq, payload, len) != crc) break;
    if (last_seq != 0 && seq != last_seq + 1) break;  // left from before a Reset
    uint32_t wlen;
    std::memcpy(&wlen, payload, 4);
    if (wlen > len - 4) break;
    last_seq = seq;
    pos += Align8(kEntryHeader + len);
    if (seq > applied) {
      out.push_back(
          {seq, std::string(payload + 4, wlen), std::string(payload + 4 + wlen, len - 4 - wlen)});
      end_of_pending = pos;
    }
  }
  next_seq_ = std::max(applied, last_seq) + 1;
  pos_ = out.empty() ? kFirst : end_of_pending;
  if (pos_ == kFirst) Reset();
  return out;
}

Result<uint64_t> IntakeJournal::Append(std::string_view worker, std::string_view body) {
  const size_t len = 4 + worker.size() + body.size();
  const size_t need = Align8(kEntryHeader + len);
  if (len > UINT32_MAX || need > capacity_ - pos_) {
    return Result<uint64_t>::Error("intake journal full (" + std::to_string(pos_ - kFirst) +
                                   " of " + std::to_string(capacity_ - kFirst) +
                                   " bytes in use, entry " + std::to_string(need) + ")");
  }
  char* e = base_ + pos_;
  __atomic_store_n(LenAt(base_, pos_), uint32_t{0}, __ATOMIC_RELEASE);
  const uint64_t seq = next_seq_;
  char* payload = e + kEntryHeader;
  const uint32_t wlen = static_cast<uint32_t>(worker.size());
  std::memcpy(payload, &wlen, 4);
  std::memcpy(payload + 4, worker.data(), worker.size());
  std::memcpy(payload + 4 + worker.size(), body.data(), body.size());
  const uint32_t crc = EntryCrc(seq, payload, len);
  std::memcpy(e + 4, &crc, 4);
  std::memcpy(e + 8, &seq, 8);
  // The slot after the newest entry never holds a stale length (Recover stops there): cleared
  // before this entry exists, so that no kill can leave an old entry chained after it.
  if (pos_ + need + kEntryHeader <= capacity_) {
    __atomic_store_n(LenAt(base_, pos_ + need), uint32_t{0}, __ATOMIC_RELEASE);
  }
  // The entry exists once its length is in place.
  __atomic_store_n(LenAt(base_, pos_), static_cast<uint32_t>(len), __ATOMIC_RELEASE);
  pos_ += need;
  next_seq_++;
  return seq;
}

void IntakeJournal::Reset() {
  pos_ = kFirst;
  __atomic_store_n(LenAt(base_, kFirst), uint32_t{0}, __ATOMIC_RELEASE);
}

size_t IntakeJournal::used() const { return pos_ - kFirst; }

}  // namespace sedna::store
