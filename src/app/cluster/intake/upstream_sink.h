// Where the controller's outbox goes: the GM websocket link (cluster mode) or the embedded local
// manager (standalone mode). Frames are sent one at a time, in outbox order.
#pragma once

#include <functional>
#include <string>

namespace sedna::app {

class UpstreamSink {
 public:
  virtual ~UpstreamSink() = default;
  virtual bool connected() const = 0;
  // Takes one frame; returns false (and never calls done) when it cannot take it now. done(true)
  // once the frame is delivered (written to the socket / applied), done(false) if it was lost.
  // `more`: another frame follows at once (a hint: the GM link then holds frames back until the
  // last of the burst, which is sent without it).
  virtual bool Send(std::string frame, std::function<void(bool delivered)> done,
                    bool more = false) = 0;
};

}  // namespace sedna::app
