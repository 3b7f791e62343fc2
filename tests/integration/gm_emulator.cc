#include "gm_emulator.h"

#include <stdexcept>

#include "adapters/json/upstream_codec.h"

namespace sedna::testing {

std::string Rfc3339(int s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2021-08-20T%02d:%02d:%02dZ", 8 + s / 3600 % 16, s / 60 % 60,
                s % 60);
  return buf;
}

GmEmulator::GmEmulator(uint16_t port) : server_(WsTestServer::Start(port)) {
  if (!server_)
    throw std::runtime_error("GM emulator: cannot listen on port " + std::to_string(port));
}

void GmEmulator::Send(const std::string& op, const Json& obj) {
  std::string kind = obj.at("kind").get<std::string>();
  for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const Json& meta = obj.at("metadata");
  wire::MessageHeader h{meta.value("namespace", "default"), kind, meta.at("name"), op};
  if (!server_->Send(wire::EncodeFrame(h, obj.dump()))) {
    throw std::runtime_error("GM emulator: no LC connected");
  }
}

std::optional<UpstreamFrame> GmEmulator::Next(const std::string& kind,
                                              std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->header.resource_kind == kind) {
        UpstreamFrame f = std::move(*it);
        pending_.erase(it);
        return f;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto text = server_->WaitForFrame(left);
    if (!text) return std::nullopt;
    auto parsed = Json::parse(*text, nullptr, false);
    if (parsed.is_object() && !parsed.contains("header")) {
      ++bare_headers_;  // §1.2 first frame
      continue;
    }
    auto f = wire::DecodeFrame(*text);
    if (!f.ok()) throw std::runtime_error("GM emulator: bad upstream frame: " + f.message());
    UpstreamFrame u{f->header, f->content, Json::parse(f->content), *text};
    pending_.push_back(std::move(u));
  }
}

GmJob::GmJob(core::gm::JobKind kind, Json object) : kind_(kind), object_(std::move(object)) {
  Settle();
}

std::vector<core::gm::GmAction> GmJob::Report(const std::string& content) {
  Json c = Json::parse(content);
  auto data = wire::CondDataFromUpstreamContent(content);
  if (!data.ok()) throw std::runtime_error("GM emulator: " + data.message());
  auto step = core::gm::ApplyUpstream(kind_, state_, c.value("phase", ""), c.value("status", ""),
                                      *data, Rfc3339(++clock_));
  if (!step.ok()) throw std::runtime_error("GM emulator rejected report: " + step.message());
  state_ = step->state;
  return Settle();
}

std::vector<core::gm::GmAction> GmJob::SetPod(core::Stage stage, core::gm::PodPhase phase) {
  switch (stage) {
    case core::Stage::kTrain:
      pods_.train = phase;
      break;
    case core::Stage::kEval:
      pods_.eval = phase;
      break;
    case core::Stage::kDeploy:
      pods_.inference = phase;
      break;
  }
  return Settle();
}

std::vector<core::gm::GmAction> GmJob::Settle() {
  auto settled = core::gm::Settle(kind_, state_, pods_, Rfc3339(++clock_));
  state_ = settled.step.state;
  pods_ = settled.pods;
  return settled.step.actions;
}

Json GmJob::Object() const {
  Json o = object_;
  Json conds = Json::array();
  for (const auto& c : state_.conditions) {
    Json j{{"type", core::ConditionTypeName(c.type)},
           {"status", "True"},
           {"stage", core::StageName(c.stage)},
           {"lastHeartbeatTime", c.last_transition_time},
           {"lastTransitionTime", c.last_transition_time}};
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    if (!c.data_json.empty()) j["data"] = c.data_json;
    conds.push_back(j);
  }
  o["status"] = Json{{"conditions", conds}, {"startTime", Rfc3339(0)}};
  return o;
}

std::string GmJob::LastCondition() const {
  if (state_.conditions.empty()) return "";
  const auto& c = state_.conditions.back();
  return std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
}

core::gm::Downstream GmJob::Downstream() const { return core::gm::DownstreamFor(kind_, state_); }

}  // namespace sedna::testing
