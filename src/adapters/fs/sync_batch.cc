#include "adapters/fs/sync_batch.h"

#include <linux/aio_abi.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace sedna::fs {
namespace {

// Items of one io_submit / io_getevents call at most.
constexpr size_t kChunk = 64;
// A batch's item index travels in the low bits of aio_data, its id in the rest.
constexpr unsigned kIndexBits = 16;
constexpr size_t kMaxBatchItems = size_t{1} << kIndexBits;

int SyncHere(const SyncItem& item) {
  const int r = item.data_only ? ::fdatasync(item.fd) : ::fsync(item.fd);
  return r == 0 ? 0 : errno;
}

aio_context_t Setup(unsigned events) {
  aio_context_t ctx = 0;
  if (::syscall(SYS_io_setup, events, &ctx) != 0) return 0;
  return ctx;
}

void Destroy(aio_context_t ctx) {
  if (ctx != 0) (void)::syscall(SYS_io_destroy, ctx);
}

iocb MakeIocb(const SyncItem& item, uint64_t data, int resfd) {
  iocb cb;
  std::memset(&cb, 0, sizeof cb);
  cb.aio_data = data;
  cb.aio_lio_opcode = item.data_only ? IOCB_CMD_FDSYNC : IOCB_CMD_FSYNC;
  cb.aio_fildes = static_cast<uint32_t>(item.fd);
  if (resfd >= 0) {
    cb.aio_flags = IOCB_FLAG_RESFD;
    cb.aio_resfd = static_cast<uint32_t>(resfd);
  }
  return cb;
}

// Submits cbs[0, n). An iocb the kernel refuses (io_submit stops at it with an error) is handed to
// `refused` with its position, and the rest are submitted after it.
template <typename Refused>
void Submit(aio_context_t ctx, iocb* cbs, size_t n, Refused refused) {
  std::vector<iocb*> ptrs(n);
  for (size_t i = 0; i < n; ++i) ptrs[i] = &cbs[i];
  size_t k = 0;
  while (k < n) {
    const long r = ::syscall(SYS_io_submit, ctx, static_cast<long>(n - k), ptrs.data() + k);
    if (r > 0) {
      k += static_cast<size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      refused(k);
      ++k;
    }
  }
}

// The calling thread's own context for SyncAll, made at its first use and destroyed with the
// thread.
struct ThreadContext {
  aio_context_t ctx = 0;
  bool tried = false;
  ~ThreadContext() { Destroy(ctx); }
  aio_context_t Get() {
    if (!tried) {
      tried = true;
      ctx = Setup(kChunk);
    }
    return ctx;
  }
};

}  // namespace

void SyncAll(std::span<SyncItem> items) {
  thread_local ThreadContext thread_ctx;
  const aio_context_t ctx = items.size() > 1 ? thread_ctx.Get() : 0;
  if (ctx == 0) {
    for (SyncItem& item : items) item.error = SyncHere(item);
    return;
  }
  for (size_t begin = 0; begin < items.size(); begin += kChunk) {
    const size_t n = std::min(kChunk, items.size() - begin);
    std::vector<iocb> cbs(n);
    for (size_t i = 0; i < n; ++i) cbs[i] = MakeIocb(items[begin + i], i, -1);
    size_t submitted = n;
    Submit(ctx, cbs.data(), n, [&](size_t i) {
      items[begin + i].error = SyncHere(items[begin + i]);
      --submitted;
    });
    io_event events[kChunk];
    size_t got = 0;
    while (got < submitted) {
      const long r = ::syscall(SYS_io_getevents, ctx, static_cast<long>(submitted - got),
                               static_cast<long>(submitted - got), events, nullptr);
      if (r < 0) {
        if (errno == EINTR) continue;
        // Not expected (the context is valid); the syncs are made again here, so none is lost.
        for (size_t i = 0; i < n; ++i) items[begin + i].error = SyncHere(items[begin + i]);
        break;
      }
      for (long j = 0; j < r; ++j) {
        items[begin + events[j].data].error =
            events[j].res < 0 ? static_cast<int>(-events[j].res) : 0;
      }
      got += static_cast<size_t>(r);
    }
  }
}

Syncer::Syncer(size_t max_in_flight) : max_in_flight_(max_in_flight) {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return;
  ctx_ = Setup(static_cast<unsigned>(max_in_flight));
  if (ctx_ == 0) {
    ::close(event_fd_);
    event_fd_ = -1;
  }
}

Syncer::~Syncer() {
  Destroy(ctx_);  // waits for the syncs in flight
  if (event_fd_ >= 0) ::close(event_fd_);
}

size_t Syncer::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_.size();
}

bool Syncer::Sync(std::vector<SyncItem> items, Done done) {
  const size_t n = items.size();
  std::unique_lock<std::mutex> lock(mu_);
  if (!async() || n == 0 || n >= kMaxBatchItems || items_in_flight_ + n > max_in_flight_) {
    lock.unlock();  // synced here: no AIO, nothing to sync, or over the limit
    for (SyncItem& item : items) item.error = SyncHere(item);
    done(items);
    return false;
  }
  const uint64_t id = next_id_++;
  const bool first = batches_.empty();
  std::vector<iocb> cbs;
  cbs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    cbs.push_back(MakeIocb(items[i], (id << kIndexBits) | i, event_fd_));
  }
  Batch& b = batches_[id];
  b.items = std::move(items);
  b.left = n;
  b.done = std::move(done);
  items_in_flight_ += n;
  lock.unlock();
  // From here the batch may finish on the loop (Reap) as soon as its last item is submitted.
  Submit(static_cast<aio_context_t>(ctx_), cbs.data(), n, [&](size_t i) {
    int fd = -1;
    bool data_only = false;
    {
      std::lock_guard<std::mutex> relock(mu_);
      const SyncItem& item = batches_.at(id).items[i];  // not finished: item i is not made
      fd = item.fd;
      data_only = item.data_only;
    }
    if (std::optional<Batch> b = Made(id, i, SyncHere({fd, data_only, 0}))) b->done(b->items);
  });
  return first;
}

std::optional<Syncer::Batch> Syncer::Made(uint64_t id, size_t index, int error) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end() || index >= it->second.items.size()) return std::nullopt;
  it->second.items[index].error = error;
  --items_in_flight_;
  if (--it->second.left > 0) return std::nullopt;
  Batch b = std::move(it->second);
  batches_.erase(it);
  return b;
}

void Syncer::Reap() {
  if (!async()) return;
  uint64_t count = 0;
  (void)::read(event_fd_, &count, sizeof count);  // resets the counter; EAGAIN when it was 0
  io_event events[kChunk];
  for (;;) {
    timespec zero{};
    const long r = ::syscall(SYS_io_getevents, ctx_, 0L, static_cast<long>(kChunk), events, &zero);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    for (long j = 0; j < r; ++j) {
      const uint64_t data = events[j].data;
      const int error = events[j].res < 0 ? static_cast<int>(-events[j].res) : 0;
      if (std::optional<Batch> b = Made(data >> kIndexBits, data & (kMaxBatchItems - 1), error)) {
        b->done(b->items);
      }
    }
    if (r < static_cast<long>(kChunk)) return;
  }
}

}  // namespace sedna::fs
