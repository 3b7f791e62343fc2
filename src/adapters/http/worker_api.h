// HTTP-level rules of the worker API (protocol §P5.1/§P5.2): routing and go-restful's media-type
// checks. Pure: no sockets, no JSON.
#pragma once

#include <functional>
#include <string_view>

#include "adapters/http/http_server.h"

namespace sedna::http {

// Handles a well-formed worker report; `worker_name` is the URL-decoded path segment and `body`
// the raw request body. Must not throw (a throw is answered 500 `500: Internal Server Error`).
using WorkerMessageHandler =
    std::function<HttpResponse(std::string_view worker_name, std::string_view body)>;

// Routes one request of the worker API (`req.headers` names lower-case, as HttpServer gives
// them). For a well-formed `POST /sedna/workers/{worker-name}/info` it returns
// on_message(worker_name, body); otherwise it answers itself (text/plain), checking in
// go-restful's order:
//  1. path: anything but /sedna/workers/{name}/info, with {name} the one non-empty segment after
//     %XX-decoding (a query string is ignored; bad %-escapes, empty names, names containing '/',
//     a trailing '/' all fail) → 404 `404: Page Not Found`;
//  2. method other than POST (case-sensitive) → 405 `405: Method Not Allowed`, `Allow: POST`;
//  3. non-empty body whose Content-Type is missing or not application/json or application/xml
//     (case-insensitive, parameters and comma lists allowed) → 415 `415: Unsupported Media Type`;
//  4. Accept present and allowing none of application/json, application/xml, application/*,
//     */* (case-insensitive, parameters ignored except that q=0 excludes the range)
//     → 406 `406: Not Acceptable\n\nAvailable representations: application/json, application/xml`.
// Never throws.
HttpResponse RouteWorkerApi(const HttpRequest& req, const WorkerMessageHandler& on_message);

}  // namespace sedna::http
