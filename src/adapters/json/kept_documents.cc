// Parsed documents kept for reuse, per thread (go_json.h, KeepParsedDocuments).
#include "adapters/json/kept_documents.h"

#include <new>
#include <string_view>
#include <vector>

#include "adapters/json/go_json.h"

namespace sedna::json {
namespace {

// A parsed document's blocks, in bytes.
size_t BlockBytes(const RawJson::Doc& d) {
  return d.nodes.capacity() * sizeof(RawJson::Node) + d.kids.capacity() * sizeof(RawJson) +
         d.keys.capacity() * sizeof(std::string_view) + d.text_capacity;
}

// The documents the calling thread keeps, emptied and ready for a parse. `kept_max` and
// `kept_gone` are trivially destructible, so a document freed while the thread's objects are
// destroyed (after Kept()'s) still reads them.
thread_local size_t kept_max = 0;
thread_local bool kept_gone = false;
struct KeptDocs {
  std::vector<RawJson::Doc*> docs;  // capacity kept_max: keeping one never allocates
  ~KeptDocs() {
    kept_gone = true;
    for (RawJson::Doc* d : docs) delete d;
  }
};
KeptDocs& Kept() {
  thread_local KeptDocs kept;
  return kept;
}

}  // namespace

namespace internal {

void KeepOrDelete::operator()(RawJson::Doc* d) const noexcept {
  if (kept_max > 0 && !kept_gone) {
    KeptDocs& k = Kept();
    if (k.docs.size() < kept_max && BlockBytes(*d) <= kMaxKeptDocumentBytes) {
      d->nodes.clear();
      d->kids.clear();  // a parsed document's children are borrowed: nothing else dies
      d->keys.clear();
      k.docs.push_back(d);
      return;
    }
  }
  delete d;
}

DocOwner TakeDoc() {
  if (kept_max > 0 && !kept_gone) {
    KeptDocs& k = Kept();
    if (!k.docs.empty()) {
      DocOwner d(k.docs.back());
      k.docs.pop_back();
      return d;
    }
  }
  return DocOwner(new RawJson::Doc());
}

}  // namespace internal

void KeepParsedDocuments(size_t max_documents) {
  if (kept_gone) return;
  KeptDocs& k = Kept();
  while (k.docs.size() > max_documents) {
    delete k.docs.back();
    k.docs.pop_back();
  }
  if (max_documents > kept_max) {
    try {
      k.docs.reserve(max_documents);
    } catch (const std::bad_alloc&) {
      return;  // keeps what it kept
    }
  }
  kept_max = max_documents;
}

size_t KeptParsedDocuments() { return kept_max == 0 || kept_gone ? 0 : Kept().docs.size(); }

void ReleaseKeptDocuments() {
  if (kept_max == 0 || kept_gone) return;
  KeptDocs& k = Kept();
  for (RawJson::Doc* d : k.docs) delete d;
  k.docs.clear();
}

}  // namespace sedna::json
