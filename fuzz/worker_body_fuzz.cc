// A worker's POST body (json::DecodeWorkerMessage, json::WorkerNameIn) on arbitrary bytes, with
// parsed documents kept for reuse as on the LC's loop thread. Invariants: two parses of the body
// dump the same; WorkerNameIn agrees with a successful decode's name; namespace and ownerName are
// Kubernetes names (no '/'); there is one ModelRef per `results` element; the forwarded message
// is valid JSON, and when the LC found no problem in the results (results_error empty) the GM can
// derive its condition data from it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/json/go_json.h"
#include "adapters/json/upstream_codec.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As on the LC's loop thread: parsed documents are kept and reused, here across inputs.
  static const bool keeping = (sedna::json::KeepParsedDocuments(4), true);
  (void)keeping;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  {
    // Two parses of the same bytes, each in a document an earlier input left (or a new one),
    // read the same.
    auto first = sedna::json::RawJson::Parse(body, sedna::json::kMaxWorkerBodyValues);
    auto second = sedna::json::RawJson::Parse(body, sedna::json::kMaxWorkerBodyValues);
    FUZZ_CHECK(first.ok() == second.ok(), body);
    if (first.ok()) FUZZ_CHECK(first->Dump() == second->Dump(), body);
  }
  std::string name = sedna::json::WorkerNameIn(body);
  auto msg = sedna::json::DecodeWorkerMessage(body);
  if (!msg.ok()) {
    FUZZ_CHECK(!msg.message().empty(), "an error without a message");
    return 0;
  }
  FUZZ_CHECK(name == msg->report.worker_name, name);
  FUZZ_CHECK(NameAlphabetOk(msg->report.ns, true), msg->report.ns);
  FUZZ_CHECK(NameAlphabetOk(msg->report.owner_name, false), msg->report.owner_name);
  FUZZ_CHECK(msg->results.is_null() || msg->results.is_array(), msg->results.type_name());
  FUZZ_CHECK(msg->report.results.size() == msg->results.size(), body);

  std::string forwarded = sedna::json::EncodeForwardedWorkerMessage(*msg);
  auto parsed = sedna::json::RawJson::Parse(forwarded);
  FUZZ_CHECK(parsed.ok(), parsed.message() + " in " + forwarded);
  FUZZ_CHECK(parsed->is_object(), forwarded);
  if (msg->report.results_error.empty()) {
    auto cond = sedna::json::CondDataFromUpstreamContent(forwarded);
    FUZZ_CHECK(cond.ok(), cond.message() + " in " + forwarded);
  }
  return 0;
}
