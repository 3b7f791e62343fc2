// GM frames and the start-up reload (gm_frames.h).
#include "app/cluster/intake/gm_frames.h"

#include "adapters/log/log.h"

#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"

namespace sedna::app {

namespace {

// "<ns>/<kind>/<name> " from a frame's header when it is readable, for error messages.
std::string FrameObjectName(const std::string& text) {
  auto h = json::DecodeFrameHeader(text);  // bounded, like the frame decode itself
  if (!h.ok()) return "";
  return core::ResourceKey(h->ns, h->resource_kind, h->resource_name) + " ";
}

// Kinds of Sedna v0.5+ that no LC manages: their GM controllers send nothing to the edge and their
// workers never report to the LC; the v0.7 LC has no manager for them either (§H4.5).
bool IsKindWithoutLcPart(const std::string& kind) {
  return kind == "featureextractionservice" || kind == "objectsearchservice" ||
         kind == "objecttrackingservice" || kind == "reidjob" || kind == "videoanalyticsjob";
}

}  // namespace

void GmFrames::Warn(const std::string& key, const std::vector<std::string>& warnings) {
  if (warnings.empty()) {
    warned_jobs_.erase(key);
    return;
  }
  auto [it, inserted] = warned_jobs_.try_emplace(key);
  if (!inserted && it->second == warnings) return;
  for (const auto& w : warnings) spdlog::warn("GM object {}: {}", key, w);
  it->second = warnings;
}

void GmFrames::Reject(const std::string& key, const std::string& msg) {
  spdlog::error("GM object {} rejected: {}", key, msg);
  ctx_.metrics.rejected_objects++;
}

void GmFrames::OnFrame(const std::string& text) {
  ctx_.metrics.frames_received++;
  // "<key> update" / "<key> delete" names the frame in the log line of one that waits (decoded
  // only then: it parses the frame).
  std::string what = "GM frame";
  if (inbound_.may_wait()) {
    if (auto h = json::DecodeFrameHeader(text); h.ok()) {
      what = core::ResourceKey(h->ns, h->resource_kind, h->resource_name) +
             (h->operation == "delete" ? " delete" : " update");
    }
  }
  inbound_.Add({"", std::move(what), [this, text] { Apply(text); }});
}

void GmFrames::Apply(const std::string& text) {
  ctx_.trim.Schedule();
  auto f = json::DecodeFrame(text);
  if (!f.ok()) {
    spdlog::warn("GM frame {}skipped: {}", FrameObjectName(text), f.message());
    ctx_.metrics.rejected_frames++;
    return;
  }
  const auto& h = f->header;
  const std::string& kind = h.resource_kind;
  const std::string key = core::ResourceKey(h.ns, kind, h.resource_name);
  if (h.operation == "delete") {
    warned_jobs_.erase(key);
    if (kind == core::kKindIlJob) {
      evidence_.OnDelete(key);
      jobs_.Delete(key, JobKind::kIl);
    } else if (kind == core::kKindLlJob) {
      evidence_.OnDelete(key);
      jobs_.Delete(key, JobKind::kLl);
    } else if (kind == core::kKindDataset) {
      datasets_.Delete(key);
    } else if (kind == core::kKindJointInference || kind == core::kKindFederated) {
      passthrough_.Delete(key);
    } else if (kind == core::kKindModel) {
      models_.Delete(key);
    } else if (warned_kinds_.insert(kind).second) {
      spdlog::warn("resource kind \"{}\" {}; ignored", kind,
                   IsKindWithoutLcPart(kind) ? "has no LC part" : "is unknown");
    }
    return;
  }
  if (h.operation != "insert" && h.operation != "update") {
    spdlog::warn("GM frame for {} skipped: header.operation: unknown \"{}\"", key, h.operation);
    ctx_.metrics.rejected_frames++;
    return;
  }
  if (kind == core::kKindDataset) {
    auto d = json::DecodeDataset(f->content);
    if (!d.ok()) return Reject(key, d.message());
    datasets_.Upsert(std::move(*d), true);
  } else if (kind == core::kKindModel) {
    auto d = json::DecodeModel(f->content);
    if (!d.ok()) return Reject(key, d.message());
    models_.Upsert(std::move(*d), true);
  } else if (kind == core::kKindIlJob) {
    auto d = json::DecodeIlJob(f->content);
    if (!d.ok()) return Reject(key, d.message());
    Warn(key, d->warnings);
    if (auto line = evidence_.OnIlJob(*d); !line.empty()) spdlog::info("{}", line);
    jobs_.UpsertIl(std::move(*d), true);
  } else if (kind == core::kKindLlJob) {
    auto d = json::DecodeLlJob(f->content);
    if (!d.ok()) return Reject(key, d.message());
    Warn(key, d->warnings);
    if (auto line = evidence_.OnLlJob(*d); !line.empty()) spdlog::info("{}", line);
    jobs_.UpsertLl(std::move(*d), true);
  } else if (kind == core::kKindJointInference || kind == core::kKindFederated) {
    auto d = json::DecodeOpaqueObject(f->content, kind == core::kKindJointInference
                                                      ? "JointInferenceService"
                                                      : "FederatedLearningJob");
    if (!d.ok()) return Reject(key, d.message());
    passthrough_.Upsert(key, *d);
  } else {
    // Ignored, but under the same limits as every object: a hostile one is named in the log.
    if (Status s = json::CheckObjectLimits(f->content); !s.ok()) return Reject(key, s.message());
    if (warned_kinds_.insert(kind).second) {
      spdlog::warn("resource kind \"{}\" {}; ignored", kind,
                   IsKindWithoutLcPart(kind) ? "has no LC part" : "is unknown");
    }
  }
}

Status GmFrames::Reload() {
  auto rows = ctx_.store->LoadResources();
  if (!rows.ok()) return rows.status();
  std::vector<const store::ResourceRow*> ds, ms, job_rows;
  for (const auto& r : *rows) {
    if (r.name.find("/dataset/") != std::string::npos)
      ds.push_back(&r);
    else if (r.name.find("/model/") != std::string::npos)
      ms.push_back(&r);
    else if (r.name.find("/jointinferenceservice/") != std::string::npos ||
             r.name.find("/federatedlearningjob/") != std::string::npos)
      passthrough_.Reloaded(r.name);
    else if (r.name.find("/incrementallearningjob/") != std::string::npos ||
             r.name.find("/lifelonglearningjob/") != std::string::npos)
      job_rows.push_back(&r);
  }
  auto assemble = [](const store::ResourceRow& r, const std::string& status) {
    return json::AssembleObject(r.type_meta, r.object_meta, r.spec, status, std::nullopt);
  };
  for (auto* r : ds) {
    auto d = json::DecodeDataset(assemble(*r, ""));
    if (d.ok())
      datasets_.Upsert(std::move(*d), false);
    else
      spdlog::error("stored {}: {}", r->name, d.message());
  }
  for (auto* r : ms) {
    auto d = json::DecodeModel(assemble(*r, ""));
    if (d.ok())
      models_.Upsert(std::move(*d), false);
    else
      spdlog::error("stored {}: {}", r->name, d.message());
  }
  for (auto* r : job_rows) {
    std::string status;
    if (auto s = ctx_.store->GetState(kScopeStatus, r->name); s.ok() && s->has_value()) {
      status = **s;
    }
    const std::string obj = assemble(*r, status);
    if (r->name.find("/incrementallearningjob/") != std::string::npos) {
      auto d = json::DecodeIlJob(obj);
      if (!d.ok()) {
        spdlog::error("stored {}: {}", r->name, d.message());
        continue;
      }
      Warn(r->name, d->warnings);
      jobs_.UpsertIl(std::move(*d), false);
    } else {
      auto d = json::DecodeLlJob(obj);
      if (!d.ok()) {
        spdlog::error("stored {}: {}", r->name, d.message());
        continue;
      }
      Warn(r->name, d->warnings);
      jobs_.UpsertLl(std::move(*d), false);
    }
  }
  if (!rows->empty()) {
    spdlog::info("reloaded {} datasets, {} models, {} jobs from {}", ds.size(), ms.size(),
                 job_rows.size(), ctx_.cfg.db_path);
  }
  return Status::Ok();
}

}  // namespace sedna::app
