// A test GM: a real websocket server on 127.0.0.1 (WsTestServer) that sends Sedna objects as the
// GM does (sedna-protocol.md §1.5, §4.3) and keeps IL/LL job conditions with the GM's condition
// machine (§4.1, §4.2: core::gm). The test thread drives it step by step, so every assertion sees
// a deterministic sequence.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/json/envelope.h"
#include "core/gm_conditions.h"
#include "ws_test_server.h"

namespace sedna::testing {

namespace wire = sedna::json;
using Json = nlohmann::json;

struct UpstreamFrame {
  wire::MessageHeader header;
  std::string content;  // decoded JSON text
  nlohmann::json body;  // parsed content
  std::string raw;      // the frame as received
};

class GmEmulator {
 public:
  explicit GmEmulator(uint16_t port = 0);  // 0: an ephemeral port
  WsTestServer& server() { return *server_; }
  std::string address() const { return server_->address(); }

  // Sends {"header":{ns,kind(lower),name,op},"content":base64(obj)}.
  void Send(const std::string& op, const nlohmann::json& obj);

  // Next upstream frame of the given object kind ("Dataset", "IncrementalLearningJob"); frames
  // of other kinds that arrive meanwhile are kept for their own Next calls. The bare header
  // frame of a (re)connection is recorded in bare_headers and skipped.
  std::optional<UpstreamFrame> Next(const std::string& kind,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(20));
  int bare_headers() const { return bare_headers_; }

 private:
  std::unique_ptr<WsTestServer> server_;
  std::vector<UpstreamFrame> pending_;
  int bare_headers_ = 0;
};

// One job's GM-side record: the object without conditions, the conditions, and its pods.
class GmJob {
 public:
  GmJob(core::gm::JobKind kind, nlohmann::json object);
  // Applies an LC "status" content (§4.1) and settles the job (§4.2). Returns the actions taken.
  std::vector<core::gm::GmAction> Report(const std::string& content);
  // Changes the newest pod of a stage and settles.
  std::vector<core::gm::GmAction> SetPod(core::Stage stage, core::gm::PodPhase phase);
  std::vector<core::gm::GmAction> Settle();
  nlohmann::json Object() const;  // with status.conditions
  const core::gm::GmJobState& state() const { return state_; }
  std::string LastCondition() const;  // "Train/Waiting"
  core::gm::Downstream Downstream() const;

 private:
  core::gm::JobKind kind_;
  nlohmann::json object_;
  core::gm::GmJobState state_;
  core::gm::Pods pods_;
  int clock_ = 0;
};

std::string Rfc3339(int seconds_since_2021);

}  // namespace sedna::testing
