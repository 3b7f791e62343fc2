// Where the controller's outbox goes: the GM websocket link (cluster mode) or the embedded local
// manager (standalone mode). Frames are sent a batch at a time, in outbox order.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

namespace sedna::app {

class UpstreamSink {
 public:
  virtual ~UpstreamSink() = default;
  virtual bool connected() const = 0;
  // Takes a batch of frames (at least one), to deliver in order; returns false (and never calls
  // done) when it cannot take them now (not connected, or the previous batch not yet reported).
  // Otherwise done(n) once: n = frames.size() when every frame was delivered (written to the socket
  // / applied), fewer when the connection was lost first and only the first n were. The frames are
  // copied before Send returns.
  virtual bool Send(std::span<const std::string_view> frames,
                    std::function<void(size_t delivered)> done) = 0;
};

}  // namespace sedna::app
