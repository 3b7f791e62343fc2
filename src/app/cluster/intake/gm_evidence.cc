// GM evidence (gm_evidence.h).
#include "app/cluster/intake/gm_evidence.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace sedna::app {
namespace {

using Json = nlohmann::json;

enum Signal { kS1, kS2, kS3, kS4, kS5, kS6, kS7 };

// A JSON text that may name `key` (quoted): the quick test before a parse. A key inside a string
// value is escaped (\"key\") and does not match.
bool Mentions(const std::string& text, const char* key) {
  return text.find(std::string("\"") + key + "\"") != std::string::npos;
}

// Texts here were decoded once already (bounded by json::kMaxObjectValues); no exceptions.
Json Parse(const std::string& text) { return Json::parse(text, nullptr, false); }

bool HasMember(const Json& j, const char* key) { return j.is_object() && j.contains(key); }

// A model object in condition data ({input,output}.{models[],model}) with a "classes" key: the
// GM re-marshalled it as runtime.Model of v0.6+ (docs/protocol.md §H1.5).
bool ModelHasClasses(const std::string& data_json) {
  if (!Mentions(data_json, "classes")) return false;
  const Json d = Parse(data_json);
  if (!d.is_object()) return false;
  for (const char* part : {"input", "output"}) {
    auto p = d.find(part);
    if (p == d.end() || !p->is_object()) continue;
    if (auto m = p->find("model"); m != p->end() && HasMember(*m, "classes")) return true;
    auto ms = p->find("models");
    if (ms == p->end() || !ms->is_array()) continue;
    for (const auto& m : *ms) {
      if (HasMember(m, "classes")) return true;
    }
  }
  return false;
}

std::string ConditionName(const core::JobCondition& c) {
  return std::string("(") + core::StageName(c.stage) + "," + core::ConditionTypeName(c.type) + ")";
}

}  // namespace

const char* GmGenerationName(GmGeneration g) {
  switch (g) {
    case GmGeneration::kUnknown:
      return "unknown";
    case GmGeneration::kG1:
      return "G1";
    case GmGeneration::kAtLeastV04:
      return ">= v0.4";
    case GmGeneration::kG2:
      return "G2";
    case GmGeneration::kG2V06:
      return "G2 >= v0.6";
    case GmGeneration::kConflicting:
      return "conflicting";
  }
  return "unknown";
}

void GmEvidence::OnConnected() {
  connected_ = true;
  ever_connected_ = true;
  seen_ = {};
  jobs_.clear();
}

void GmEvidence::OnDisconnected() { connected_ = false; }

void GmEvidence::OnDelete(const std::string& key) { jobs_.erase(key); }

void GmEvidence::Record(int signal, std::string what) {
  if (!seen_[signal]) seen_[signal] = std::move(what);
}

std::pair<size_t, size_t> GmEvidence::NewConditions(const std::string& key, size_t count) {
  auto [it, first] = jobs_.try_emplace(key);
  JobSeen& j = it->second;
  if (first) {
    j.baseline = j.read = count;
    return {count, count};
  }
  const size_t from = std::max(std::min(j.read, count), j.baseline);
  j.read = count;
  return {from, count};
}

void GmEvidence::CheckClasses(const std::string& who, const std::vector<core::JobCondition>& conds,
                              size_t from, size_t to) {
  for (size_t i = from; i < to && !seen_[kS4]; ++i) {
    if (ModelHasClasses(conds[i].data_json)) {
      Record(kS4, "\"classes\" in a model of condition " + std::to_string(i) + " " +
                      ConditionName(conds[i]) + " of " + who);
    }
  }
}

std::string GmEvidence::OnIlJob(const json::Decoded<core::IlJob>& d) {
  const GmGeneration before = generation();
  const bool had_any = std::any_of(seen_.begin(), seen_.end(), [](const auto& s) { return !!s; });
  const auto& o = d.object;
  const std::string who = "IL " + o.meta.ns + "/" + o.meta.name;
  if (!o.conditions.empty()) {
    const auto& last = o.conditions.back();
    if (last.stage == core::Stage::kDeploy && last.type == core::ConditionType::kWaiting) {
      Record(kS1, "IL (Deploy,Waiting) for " + o.meta.ns + "/" + o.meta.name);
    }
    if (last.stage == core::Stage::kDeploy && last.type == core::ConditionType::kRunning) {
      Record(kS2, "IL (Deploy,Running) for " + o.meta.ns + "/" + o.meta.name);
    }
  }
  const auto [from, to] = NewConditions(core::ResourceKey(o.meta.ns, core::kKindIlJob, o.meta.name),
                                        o.conditions.size());
  CheckClasses(who, o.conditions, from, to);
  if (!seen_[kS6] && Mentions(d.spec_json, "pollPeriodSeconds")) {
    const Json spec = Parse(d.spec_json);
    if (spec.is_object() && spec.contains("deploySpec") && spec["deploySpec"].is_object() &&
        HasMember(spec["deploySpec"].value("model", Json()), "pollPeriodSeconds")) {
      Record(kS6, "deploySpec.model.pollPeriodSeconds in " + who + " (hint)");
    }
  }
  if (o.meta.annotations.count(core::kHotUpdateConfigAnnotation)) {
    Record(kS7, std::string("annotation ") + core::kHotUpdateConfigAnnotation + " on " + who +
                    " (hint)");
  }
  return Report(before, had_any);
}

std::string GmEvidence::OnLlJob(const json::Decoded<core::LlJob>& d) {
  const GmGeneration before = generation();
  const bool had_any = std::any_of(seen_.begin(), seen_.end(), [](const auto& s) { return !!s; });
  const auto& o = d.object;
  const std::string name = o.meta.ns + "/" + o.meta.name;
  if (o.conditions.empty()) {
    Record(kS5, "LL with no conditions for " + name);
  } else if (o.conditions.back().type != core::ConditionType::kWaiting &&
             o.conditions.back().type != core::ConditionType::kRunning) {
    Record(kS5, "LL " + ConditionName(o.conditions.back()) + " for " + name);
  }
  if (!seen_[kS3] && Mentions(d.status_json, "knowledgeBase") &&
      HasMember(Parse(d.status_json), "knowledgeBase")) {
    Record(kS3, "LL status.knowledgeBase for " + name);
  }
  const auto [from, to] = NewConditions(core::ResourceKey(o.meta.ns, core::kKindLlJob, o.meta.name),
                                        o.conditions.size());
  CheckClasses("LL " + name, o.conditions, from, to);
  return Report(before, had_any);
}

GmGeneration GmEvidence::generation() const {
  const bool g1 = seen_[kS5].has_value(), g2 = seen_[kS1].has_value(),
             v06 = seen_[kS3] || seen_[kS4];
  if (g1 && (g2 || v06)) return GmGeneration::kConflicting;
  if (v06) return GmGeneration::kG2V06;
  if (g2) return GmGeneration::kG2;
  if (g1) return GmGeneration::kG1;
  if (seen_[kS2]) return GmGeneration::kAtLeastV04;
  return GmGeneration::kUnknown;
}

bool GmEvidence::SawG2() const { return seen_[kS1] || seen_[kS3] || seen_[kS4]; }

std::string GmEvidence::Report(GmGeneration before, bool had_any) const {
  const bool any = std::any_of(seen_.begin(), seen_.end(), [](const auto& s) { return !!s; });
  if (!any || (had_any && generation() == before)) return "";
  std::string signals;
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (!seen_[i]) continue;
    signals += (signals.empty() ? "" : "; ") + ("S" + std::to_string(i + 1)) + ": " + *seen_[i];
  }
  return std::string("GM: observed ") + GmGenerationName(generation()) + " on this connection (" +
         signals + ")";
}

GmEvidenceView GmEvidence::View(const std::string& gm_address, const std::string& protocol) const {
  GmEvidenceView v;
  v.link =
      gm_address.empty()
          ? "local"
          : (connected_ ? "connected" : (ever_connected_ ? "disconnected" : "never connected"));
  v.protocol = protocol;
  v.observed = GmGenerationName(generation());
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (seen_[i]) v.signals.push_back({"S" + std::to_string(i + 1), *seen_[i]});
  }
  return v;
}

std::string EncodeGmEvidenceJson(const GmEvidenceView& v) {
  Json signals = Json::array();
  for (const auto& s : v.signals) signals.push_back(Json{{"id", s.id}, {"what", s.what}});
  return Json{
      {"link", v.link}, {"protocol", v.protocol}, {"observed", v.observed}, {"signals", signals}}
      .dump();
}

std::string AddGmEvidenceToStatusJson(const std::string& status_json, const GmEvidenceView& v) {
  const size_t open = status_json.find('{');
  if (open == std::string::npos) return status_json;
  const size_t next = status_json.find_first_not_of(" \t\r\n", open + 1);
  const bool empty = next != std::string::npos && status_json[next] == '}';
  return status_json.substr(0, open + 1) + "\"gm\":" + EncodeGmEvidenceJson(v) +
         (empty ? "" : ",") + status_json.substr(open + 1);
}

namespace {
Result<std::optional<GmEvidenceView>> DecodeGm(const std::string& text) {
  const Json j = Parse(text);
  if (!j.is_object()) {
    return Result<std::optional<GmEvidenceView>>::Error("status: not a JSON object");
  }
  auto g = j.find("gm");
  if (g == j.end() || !g->is_object()) return std::optional<GmEvidenceView>();
  auto str = [&](const char* k) {
    auto it = g->find(k);
    return it != g->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  GmEvidenceView v;
  v.link = str("link");
  v.protocol = str("protocol");
  v.observed = str("observed");
  if (auto s = g->find("signals"); s != g->end() && s->is_array()) {
    for (const auto& e : *s) {
      if (!e.is_object()) continue;
      v.signals.push_back({e.value("id", ""), e.value("what", "")});
    }
  }
  return std::optional<GmEvidenceView>(std::move(v));
}
}  // namespace

Result<std::optional<GmEvidenceView>> DecodeGmEvidenceFromStatusJson(const std::string& text) {
  try {
    return DecodeGm(text);
  } catch (const std::exception& e) {
    return Result<std::optional<GmEvidenceView>>::Error(std::string("status: gm: ") + e.what());
  }
}

std::string RenderGmLine(const GmEvidenceView& v) {
  std::string line = "GM: " + v.link + ", protocol " + v.protocol + ", observed " + v.observed;
  if (v.link == "disconnected") line += " on the last connection";
  std::string signals;
  for (const auto& s : v.signals) signals += (signals.empty() ? "" : "; ") + s.id + ": " + s.what;
  if (!signals.empty()) line += " (" + signals + ")";
  return line;
}

}  // namespace sedna::app
