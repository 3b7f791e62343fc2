// How http::HttpServer reads requests off a connection's bytes: the connection's input buffer
// and an HTTP/1.1 request parser (Boost.Beast's, which only request_reader.cc includes) that
// writes straight into a reused HttpRequest, under the server's limits:
//  * a header (request line and fields) over kHeaderLimit bytes: kHeaderLimit;
//  * a body over the body limit: kBodyLimit;
//  * a chunk-size line's extensions or a trailer section over kChunkLineLimit: kHeaderLimit;
//    trailer fields are discarded, never merged into HttpRequest::headers;
//  * Transfer-Encoding other than exactly "chunked": kUnsupportedCoding; anything else the
//    parser rejects (Transfer-Encoding twice or with Content-Length, a bad line): kBad.
// Field names are lower-cased; a repeated field is joined with ", " in arrival order. The
// reader does no IO and keeps no clock: the connection fills Prepare()/Commit() and calls Parse().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "adapters/http/http_server.h"

namespace sedna::http {

inline constexpr size_t kHeaderLimit = 64 * 1024;
// The longest chunk-size line or trailer section accepted: bounded while incomplete (the bytes
// buffered for it) and once parsed (a line's extensions; the trailer fields' names and values).
inline constexpr size_t kChunkLineLimit = 8 * 1024;

class RequestReader {
 public:
  using HeaderNode = decltype(HttpRequest::headers)::node_type;

  enum class Error {
    kNone,               // the parse advanced, or the request is done
    kNeedMore,           // every buffered byte is used and the request is not done
    kHeaderLimit,        // see the limits above: the server answers 431
    kBodyLimit,          // 413
    kUnsupportedCoding,  // 501
    kBad,                // 400
  };
  struct Parsed {
    size_t used = 0;  // bytes consumed from the buffer
    Error error = Error::kNone;
  };

  RequestReader();
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // The input buffer: room for up to `n` more bytes, then Commit() of those received.
  std::span<char> Prepare(size_t n);
  void Commit(size_t n);
  size_t buffered() const;  // received and not yet parsed
  void DiscardBuffered();   // drops the bytes received and not parsed
  // Frees the buffer's memory when it is empty and its capacity grew past `keep` bytes.
  void ShrinkIfEmpty(size_t keep);

  // Starts a new request, parsed into `req` (cleared by the caller) with header map nodes taken
  // from `spare` while it has any. Both must outlive the request's parse.
  void Begin(HttpRequest& req, std::vector<HeaderNode>& spare, size_t body_limit);
  // Parses as much of the buffer as it can (Begin() first).
  Parsed Parse();

  bool started() const;  // Begin() was called
  bool header_done() const;
  bool done() const;  // the whole request (body and trailer included) is parsed
  std::optional<uint64_t> content_length() const;  // once the header is done
  bool keep_alive() const;                         // by the request's version and Connection field
  int version() const;                             // 10 or 11; 11 before Begin()
  bool expects_continue() const;                   // `Expect: 100-continue`

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sedna::http
