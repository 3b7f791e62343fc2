// Internal to sedna_json: the parsed documents a thread keeps for reuse (KeepParsedDocuments in
// go_json.h). RawJson::Parse takes its document from here and hands its ownership to the result
// with this deleter, so the document's last owner gives it back.
#pragma once

#include <memory>

#include "adapters/json/go_json_internal.h"

namespace sedna::json::internal {

// Owns a parsed document: its last owner keeps it for the thread's next parse when the thread
// keeps documents, has room and the document is small (kMaxKeptDocumentBytes); else frees it.
struct KeepOrDelete {
  void operator()(RawJson::Doc* d) const noexcept;
};
using DocOwner = std::unique_ptr<RawJson::Doc, KeepOrDelete>;

// An empty document for a parse: one the calling thread kept, else a new one.
DocOwner TakeDoc();

}  // namespace sedna::json::internal
