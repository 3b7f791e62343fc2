// How http::HttpServer words a reply: the status line and header fields it writes before the
// body ("Behaviour on the wire" in http_server.h). No IO: the connection sends the bytes.
#pragma once

#include <string>

#include "adapters/http/http_server.h"

namespace sedna::http {

// A reply of `status` with a text/plain `body`: the form of every answer the server gives itself.
HttpResponse TextResponse(int status, std::string body);

// Replaces `head` with the head of `response` (status already in 200..999) for an HTTP/1.0
// (`version` 10) or HTTP/1.1 request: the status line with its reason phrase (none for a code
// without one), Content-Type unless empty, the extra fields except Content-Length,
// Transfer-Encoding, Connection and any with CR or LF, Content-Length of the body,
// `Connection: close` when the connection closes after it (or `Connection: keep-alive` for
// HTTP/1.0 when it does not), and the blank line.
// Returns whether the connection stays open: `keep_alive`, unless a Connection field of the
// response contains "close".
bool FormatResponseHead(const HttpResponse& response, int version, bool keep_alive,
                        std::string& head);

}  // namespace sedna::http
