// Two small parts of the GM link (gm_link.cc): where its masking keys come from, and the buffer
// it reads frames into.
#pragma once

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <sys/random.h>
#include <boost/asio/buffer.hpp>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <random>
#include <string_view>
#include <vector>

namespace sedna::gm {

// Masking keys and handshake nonces from the kernel's CSPRNG (getrandom), 64 keys a call: a
// frame's mask must not be predictable by whoever chooses its payload (RFC 6455 §10.3), and a
// worker chooses much of a forwarded report's.
class RandomPool {
 public:
  uint32_t Next() {
    if (next_ == pool_.size()) Refill();
    return pool_[next_++];
  }

 private:
  void Refill() {
    auto* p = reinterpret_cast<char*>(pool_.data());
    size_t got = 0;
    while (got < sizeof(pool_)) {
      const ssize_t n = ::getrandom(p + got, sizeof(pool_) - got, 0);
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (n < 0 && errno != EINTR) {
        break;
      }
    }
    if (got < sizeof(pool_)) {  // no getrandom (ENOSYS): the C++ library's source
      try {
        std::random_device rd;
        for (auto& v : pool_) v = rd();
      } catch (const std::exception&) {  // keeps the previous keys: still masked, predictable
      }
    }
    next_ = 0;
  }

  std::array<uint32_t, 64> pool_{};
  size_t next_ = pool_.size();
};

// Bytes read and not yet taken: [begin, end) of `bytes`.
struct ReadBuffer {
  static constexpr std::size_t kKeepBytes = 1u << 20;  // a larger buffer is freed once empty

  std::string_view data() const { return {bytes.data() + begin, end - begin}; }
  void Consume(size_t n) {
    begin += n;
    if (begin == end) begin = end = 0;
  }
  // Room for at least `n` bytes after the data.
  boost::asio::mutable_buffer Prepare(size_t n) {
    if (bytes.size() - end < n && begin > 0) {
      std::memmove(bytes.data(), bytes.data() + begin, end - begin);
      end -= begin;
      begin = 0;
    }
    if (bytes.size() - end < n) bytes.resize(end + n);
    return boost::asio::buffer(bytes.data() + end, bytes.size() - end);
  }
  void Commit(size_t n) { end += n; }
  // Gives a large buffer back once it holds nothing.
  void Trim() {
    if (begin == end && bytes.size() > kKeepBytes) std::vector<char>().swap(bytes);
  }

  std::vector<char> bytes;
  size_t begin = 0, end = 0;
};

}  // namespace sedna::gm
