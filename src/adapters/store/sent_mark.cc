#include "adapters/store/sent_mark.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sedna::store {

namespace {
constexpr char kMarkMagic[8] = {'S', 'E', 'D', 'N', 'A', 'S', 'M', '1'};
constexpr size_t kFileSize = 4096;
}  // namespace

struct SentMark::Page {
  char magic[8];
  uint64_t identity;
  int64_t sent_through;  // written with an atomic store: never torn
};

Result<std::unique_ptr<SentMark>> SentMark::Open(const std::string& path, uint64_t db_identity) {
  auto fail = [&](const char* what) {
    return Result<std::unique_ptr<SentMark>>::Error("outbox sent mark " + path + ": " + what +
                                                    ": " + std::strerror(errno));
  };
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot open");
  if (int rc = ::posix_fallocate(fd, 0, kFileSize); rc != 0) {
    errno = rc;
    auto r = fail("cannot allocate");
    ::close(fd);
    return r;
  }
  void* p = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    auto r = fail("cannot map");
    ::close(fd);
    return r;
  }
  auto* page = static_cast<Page*>(p);
  if (std::memcmp(page->magic, kMarkMagic, sizeof kMarkMagic) != 0 ||
      page->identity != db_identity) {
    __atomic_store_n(&page->sent_through, int64_t{0}, __ATOMIC_RELEASE);
    page->identity = db_identity;
    std::memcpy(page->magic, kMarkMagic, sizeof kMarkMagic);
  }
  return std::unique_ptr<SentMark>(new SentMark(fd, page));
}

SentMark::~SentMark() {
  ::munmap(page_, kFileSize);
  ::close(fd_);
}

int64_t SentMark::Get() const { return __atomic_load_n(&page_->sent_through, __ATOMIC_ACQUIRE); }

void SentMark::Set(int64_t id) { __atomic_store_n(&page_->sent_through, id, __ATOMIC_RELEASE); }

}  // namespace sedna::store
