// The LC's websocket client to Sedna's Global Manager (protocol §P1): dials ws://<address>/ with
// the `Node-Name` header and no Origin, writes the first frame, then reads and writes text frames
// concurrently, pings the GM to detect dead peers, and reconnects forever with backoff. It frames
// RFC 6455 itself (ws_wire.h), with one write queue for its data frames, its pings and its answers
// to the GM's pings, so that a batch of frames leaves in one send.
#pragma once

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace sedna::gm {

struct GmLinkOptions {
  std::string address;      // "host:port" (no scheme; IPv6 as "[::1]:9000"); dials ws://<address>/
  std::string node_name;    // sent as the `Node-Name` handshake header
  std::string first_frame;  // text frame written right after the handshake, before anything else
                            // (the bare header of §P1.2); empty = none
  // Capped exponential backoff with full jitter between attempts (see Backoff). It restarts from
  // backoff_initial after a connection on which the GM proved alive (a frame or a pong received).
  std::chrono::milliseconds backoff_initial{500}, backoff_max{30000};
  // Websocket ping cadence while connected; <= 0 disables pings (and so dead-peer detection).
  std::chrono::milliseconds ping_interval{10000};
  // No pong or frame within this after a ping: the peer is dead, close and reconnect. Positive.
  std::chrono::milliseconds ping_timeout{10000};
  // Bounds one attempt: resolve, TCP connect, handshake and the first frame's write.
  std::chrono::milliseconds connect_timeout{10000};
  uint64_t jitter_seed = 0;  // seeds the backoff jitter (tests); 0 = random
  // Largest message read (its fragments together). A larger one is not buffered: the connection
  // fails ("read: frame over the 2359296-byte limit"; the link closes with code 1009) and
  // reconnects. The default is the base64 of etcd's default 1.5 MiB object limit (2 MiB) plus room
  // for the header: every object the GM can send fits, and a hostile frame costs at most ~2x this
  // in the decoders (docs/benchmarks.md, frame_bench).
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;
  static constexpr std::size_t kDefaultMaxFrameBytes = (9u << 20) / 4;  // 2.25 MiB
};

// Every callback runs on the io_context's thread, never from inside Start(), Stop() or Send().
// Callbacks may call any GmLink method, including Stop().
struct GmLinkCallbacks {
  std::function<void()> on_connected;              // after the first frame was written
  std::function<void(std::string text)> on_frame;  // every received data frame, in arrival order
  // Once per lost connection or failed attempt, with a human-readable reason such as
  // "connect 127.0.0.1:9000: Connection refused" or "ping timeout after 10000 ms".
  std::function<void(std::string reason)> on_disconnected;
  // Optional: right after on_disconnected, the delay before the next attempt.
  std::function<void(std::chrono::milliseconds delay)> on_reconnect_scheduled;
};

// Not thread-safe: construct, call and destroy it on the thread that runs `io` (or while `io` is
// not running). `io` must outlive the GmLink's pending handlers (run it or destroy it after the
// GmLink). No exception escapes its methods or its handlers (callbacks' own exceptions propagate).
class GmLink {
 public:
  GmLink(boost::asio::io_context& io, GmLinkOptions options, GmLinkCallbacks callbacks);
  ~GmLink();  // Stop()s.
  GmLink(const GmLink&) = delete;
  GmLink& operator=(const GmLink&) = delete;

  // Connects, and keeps reconnecting until Stop(). No-op when already started.
  void Start();
  // Closes the connection (TCP close, no close frame) and cancels retries. No callback runs after
  // it returns, including the done of a Send still in flight. Start() may be called again.
  void Stop();
  // True between on_connected and the loss of that connection.
  bool connected() const;
  // Writes `frames` (at least one) as text frames, in order, in one write operation (one send
  // while the socket takes them all). Returns false (and never calls done) when not connected,
  // when `frames` is empty, or when the previous Send's done has not run yet: the caller sends one
  // batch at a time. Otherwise done(n) once, with n = frames.size() when every frame was written
  // to the socket, or, when the connection failed first (before on_disconnected for it), how many
  // of the first frames were written whole before it did. The frames are copied before Send
  // returns.
  bool Send(std::span<const std::string_view> frames, std::function<void(size_t written)> done);
  bool Send(std::string_view frame, std::function<void(size_t written)> done) {
    return Send(std::span<const std::string_view>(&frame, 1), std::move(done));
  }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sedna::gm
