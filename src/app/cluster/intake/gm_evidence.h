// GM evidence: what the GM's job objects on the current connection say about its generation
// (docs/protocol.md §H3.1, signals S1-S7), for the log, /status and `sedna-lc status`. The
// operator's evidence for --gm-protocol (§H3.2 "Fallback flag"); the design itself does not depend
// on it.
//
// Owns: the signals seen on this connection (the first object showing each), per job the count
//   of conditions in its first message on this connection and how far its conditions were read.
// Calls: nothing (pure: fed decoded objects, returns the lines to log).
// Called by: GmFrames (each decoded job, each delete, each (re)connection), the status endpoint
//   (View).
//
// Evidence is per connection, never per job: a GM upgrade is a GM restart, which drops the
// websocket, so OnConnected forgets everything.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "adapters/json/resource_codec.h"
#include "core/resources.h"
#include "core/status.h"

namespace sedna::app {

enum class GmGeneration {
  kUnknown,
  kG1,           // S5: 44609f00 .. v0.4.x
  kAtLeastV04,   // S2 only: v0.4 (G1) or G2
  kG2,           // S1: >= v0.5
  kG2V06,        // S3 or S4: >= v0.6
  kConflicting,  // S5 and one of S1, S3, S4 on one connection
};
// "unknown", "G1", ">= v0.4", "G2", "G2 >= v0.6", "conflicting".
const char* GmGenerationName(GmGeneration g);

struct GmSignal {
  std::string id;    // "S1" .. "S7"
  std::string what;  // e.g. "IL (Deploy,Waiting) for default/helmet"
  friend bool operator==(const GmSignal&, const GmSignal&) = default;
};

// What /status shows under "gm".
struct GmEvidenceView {
  std::string link;      // "connected", "disconnected", "never connected", "local" (no GM_ADDRESS)
  std::string protocol;  // --gm-protocol
  std::string observed;  // GmGenerationName
  std::vector<GmSignal> signals;  // S1..S7 in order, hints (S6, S7) included
  friend bool operator==(const GmEvidenceView&, const GmEvidenceView&) = default;
};

class GmEvidence {
 public:
  // A new GM connection: everything observed before is forgotten.
  void OnConnected();
  void OnDisconnected();
  // Each IL/LL job the GM sent (insert or update), decoded. Returns the line to log when it
  // brought the connection's first signal or changed the conclusion, else "".
  std::string OnIlJob(const json::Decoded<core::IlJob>& d);
  std::string OnLlJob(const json::Decoded<core::LlJob>& d);
  // The GM deleted the job: a job of that name later starts a new baseline.
  void OnDelete(const std::string& key);

  GmGeneration generation() const;
  // S1, S3 or S4 seen on this connection: the GM publishes (Deploy, Waiting) (§H3.2 may prefer
  // waiting for it).
  bool SawG2() const;
  // `gm_address` empty: "local". `protocol`: the configured --gm-protocol.
  GmEvidenceView View(const std::string& gm_address, const std::string& protocol) const;

 private:
  struct JobSeen {
    size_t baseline = 0;  // conditions in the first message on this connection
    size_t read = 0;      // conditions [0, read) already looked at for S4
  };
  // The conditions of `key` appended on this connection that were not looked at yet.
  std::pair<size_t, size_t> NewConditions(const std::string& key, size_t count);
  void CheckClasses(const std::string& who, const std::vector<core::JobCondition>& conds,
                    size_t from, size_t to);
  void Record(int signal, std::string what);
  std::string Report(GmGeneration before, bool had_any) const;

  bool connected_ = false;
  bool ever_connected_ = false;
  std::array<std::optional<std::string>, 7> seen_;  // index 0 = S1
  std::map<std::string, JobSeen> jobs_;
};

// The "gm" member /status adds: {"link":..,"protocol":..,"observed":..,"signals":[{"id","what"}]}.
std::string EncodeGmEvidenceJson(const GmEvidenceView& v);
// `status_json` (EncodeStatusJson's document) with the "gm" member added as its first member.
std::string AddGmEvidenceToStatusJson(const std::string& status_json, const GmEvidenceView& v);
// The "gm" member of a /status document; nullopt when it has none (an older daemon).
Result<std::optional<GmEvidenceView>> DecodeGmEvidenceFromStatusJson(const std::string& text);
// "GM: connected, protocol auto, observed G2 (S1: IL (Deploy,Waiting) for default/helmet)".
std::string RenderGmLine(const GmEvidenceView& v);

}  // namespace sedna::app
