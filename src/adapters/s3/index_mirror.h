// A local mirror file of a dataset index kept in S3 (docs/protocol.md §P7.3 with an s3:// index
// URL), so that the host-path index reader (adapters/dataset/index_reader.h) reads it unchanged:
// appends to the object become appends to the mirror (same inode, more bytes), anything else
// replaces the mirror with a new inode (which the reader treats as a rewrite).
//
// Committed state lives in a sidecar "<mirror_path>.state" (the object's URL, the mirrored size
// and ETag; replaced atomically: temp file, fsync, rename, directory fsync). The mirror's first
// <size> bytes are the object's first <size> bytes as of that ETag; anything beyond them was
// never committed (a crash mid-append) and is cut off by the next call.
#pragma once

#include <cstdint>
#include <string>

#include "adapters/s3/s3_client.h"
#include "core/status.h"

namespace sedna::s3 {

// Bytes compared at the end of what is mirrored when the object grew.
inline constexpr int64_t kBoundaryCheck = 1024;

struct MirrorSync {
  bool changed = false;       // the committed mirror changed (new bytes, a rewrite, first sync)
  bool rewritten = false;     // the mirror was replaced by a new file (new inode)
  bool missing = false;       // HEAD answered 404 (no such key or bucket): nothing else was done
  int64_t bytes_fetched = 0;  // object bytes downloaded into the mirror by this call
  int64_t bytes_checked = 0;  // object bytes downloaded to check that a longer object was appended
  int requests = 0;           // HTTP requests sent by this call (every attempt, retries included)
};

// Brings `mirror_path` up to date with the object at `url`. Steps:
// 1. Read the sidecar. None: committed size 0 (and no ETag). Unreadable as a sidecar, or written
//    for another URL: nothing in the mirror is trusted (step 4 rewrites it).
// 2. Truncate the mirror to the committed size if it is longer (uncommitted bytes of a crash).
//    A mirror shorter than the committed size, or missing while that size is > 0, is rewritten.
// 3. One HEAD. 404: missing = true, return (the mirror stays as it is). Another 4xx, which has no
//    body to say why: one ranged GET fetches the S3 error document, and the error reads e.g.
//    "HEAD s3://b/k: 403 Forbidden (GET: 403 SignatureDoesNotMatch: The request signature …)".
// 4. Remote size and ETag equal to the committed ones: nothing else (requests = 1, bytes 0).
//    Remote size larger: first one ranged GET (If-Match) of the last kBoundaryCheck bytes
//    before the committed size; if they differ from the mirror's, the object was rewritten, not
//    appended to (below). Remote size larger with those bytes unchanged (or no sidecar yet): one
//    ranged GET of [committed size, remote size) with If-Match on the HEAD's ETag, written to the
//    mirror as chunks arrive (memory does not depend on the size), fdatasync, then the sidecar.
//    Otherwise (smaller, or the same size with another ETag, a longer object whose mirrored tail
//    changed, or step 1/2 said so): the whole object is fetched (If-Match) into
//    "<mirror_path>.tmp", fsynced and renamed over the mirror (rewritten = true), then the
//    sidecar.
// S3 has no append, so "larger" means the writer uploaded a longer object: only the last
// kBoundaryCheck bytes of what was mirrored are checked, not all of it (a host file that grew is
// assumed appended to without any check).
//
// Errors leave the committed state (sidecar, and the mirror's first <committed size> bytes) as
// it was; bytes appended by a failed call are truncated away, so the mirror never holds bytes
// that are not in the object. A transfer cut short is resumed by the client; if the object
// changed between the HEAD and the GET: "GET s3://b/k: the object changed during the sync (412
// PreconditionFailed: …); the mirror keeps its last committed state". S3 errors are the client's
// ("GET s3://b/k: 503 SlowDown: …", "… connection to http://h:9000 failed: … (4 attempts)");
// local ones read "mirror of s3://b/k at <path>: writing <path>: No space left on device". The
// secret key never appears.
//
// One call at a time per mirror path. Read the mirror between calls, not during one: an append
// in progress is visible before it is committed (those bytes are the object's, but a crash may
// cut them off again).
Result<MirrorSync> SyncIndexMirror(Client& client, const S3Url& url,
                                   const std::string& mirror_path);

}  // namespace sedna::s3
