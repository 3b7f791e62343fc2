#include "adapters/http/worker_api.h"

#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace sedna::http {
namespace {

constexpr char kOkBody[] = "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}";
constexpr char kJsonBody[] = R"({"name": "w1", "kind": "train"})";
constexpr char k406Body[] =
    "406: Not Acceptable\n\nAvailable representations: application/json, application/xml";

struct Case {
  std::string label;
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int want_status;
  std::string want_content_type;
  std::string want_body;
  std::string want_worker;  // expected on_message name; empty = on_message must not run
};

HttpRequest MakeRequest(const Case& c) {
  HttpRequest req;
  req.method = c.method;
  req.target = c.target;
  for (const auto& [k, v] : c.headers) req.headers[k] = v;
  req.body = c.body;
  return req;
}

const Case kOk{"",        "POST", "/sedna/workers/w1/info", {{"content-type", "application/json"}},
               kJsonBody, 200,    "application/json",       kOkBody,
               "w1"};

Case Ok(std::string label, std::string target, std::string worker,
        std::vector<std::pair<std::string, std::string>> headers = {{"content-type",
                                                                     "application/json"}},
        std::string body = kJsonBody) {
  return {std::move(label),   "POST",  std::move(target), std::move(headers), std::move(body), 200,
          "application/json", kOkBody, std::move(worker)};
}

Case Reject(std::string label, std::string method, std::string target,
            std::vector<std::pair<std::string, std::string>> headers, std::string body, int status,
            std::string reply) {
  return {std::move(label),   std::move(method), std::move(target),
          std::move(headers), std::move(body),   status,
          "text/plain",       std::move(reply),  ""};
}

std::vector<Case> Cases() {
  const std::string p = "/sedna/workers/w1/info";
  const std::vector<std::pair<std::string, std::string>> json = {
      {"content-type", "application/json"}};
  auto with = [&](std::string k, std::string v) {
    auto h = json;
    h.emplace_back(std::move(k), std::move(v));
    return h;
  };
  const std::string nf = "404: Page Not Found";
  const std::string mna = "405: Method Not Allowed";
  const std::string ums = "415: Unsupported Media Type";
  return {
      // 200
      Ok("json", p, "w1"),
      Ok("xml content type", p, "w1", {{"content-type", "application/xml"}}),
      Ok("content type with charset", p, "w1",
         {{"content-type", "application/json; charset=utf-8"}}),
      Ok("content type upper case", p, "w1", {{"content-type", "Application/JSON"}}),
      Ok("content type list", p, "w1", {{"content-type", "text/plain, application/json"}}),
      Ok("empty body without content type", p, "w1", {}, ""),
      Ok("empty body with odd content type", p, "w1", {{"content-type", "text/plain"}}, ""),
      Ok("query string ignored", p + "?x=1&y=%zz", "w1"),
      Ok("url-decoded name", "/sedna/workers/train%2Dworker%20x/info", "train-worker x"),
      Ok("plus stays plus", "/sedna/workers/a+b/info", "a+b"),
      Ok("python requests headers", "/sedna/workers/train-worker-h4k9q/info", "train-worker-h4k9q",
         {{"content-type", "application/json"},
          {"accept", "*/*"},
          {"accept-encoding", "gzip, deflate"}}),
      Ok("accept json", p, "w1", with("accept", "application/json")),
      Ok("accept xml", p, "w1", with("accept", "application/xml")),
      Ok("accept application/*", p, "w1", with("accept", "application/*")),
      Ok("accept list with q", p, "w1", with("accept", "text/html;q=0.9, application/json;q=0.8")),
      Ok("accept case-insensitive", p, "w1", with("accept", "APPLICATION/JSON")),
      Ok("accept empty", p, "w1", with("accept", "")),
      // 404
      Reject("other path", "POST", "/sedna/workers/w1/status", json, kJsonBody, 404, nf),
      Reject("root", "GET", "/", {}, "", 404, nf),
      Reject("missing name", "POST", "/sedna/workers/info", json, kJsonBody, 404, nf),
      Reject("empty name", "POST", "/sedna/workers//info", json, kJsonBody, 404, nf),
      Reject("name with slash", "POST", "/sedna/workers/a/b/info", json, kJsonBody, 404, nf),
      Reject("encoded slash", "POST", "/sedna/workers/a%2Fb/info", json, kJsonBody, 404, nf),
      Reject("bad escape", "POST", "/sedna/workers/a%zzb/info", json, kJsonBody, 404, nf),
      Reject("truncated escape", "POST", "/sedna/workers/a%2/info", json, kJsonBody, 404, nf),
      Reject("trailing slash", "POST", p + "/", json, kJsonBody, 404, nf),
      // 404 before 405 before 415 before 406
      Reject("path checked first", "GET", "/nope", {{"accept", "text/html"}}, "x", 404, nf),
      // 405
      Reject("GET", "GET", p, {}, "", 405, mna),
      Reject("PUT", "PUT", p, json, kJsonBody, 405, mna),
      Reject("lower-case post", "post", p, json, kJsonBody, 405, mna),
      Reject("method before media", "PUT", p, {{"accept", "text/html"}}, "x", 405, mna),
      // 415
      Reject("no content type", "POST", p, {}, kJsonBody, 415, ums),
      Reject("text/plain", "POST", p, {{"content-type", "text/plain"}}, kJsonBody, 415, ums),
      Reject("text/plain with charset", "POST", p, {{"content-type", "text/plain; charset=utf-8"}},
             kJsonBody, 415, ums),
      Reject("form", "POST", p, {{"content-type", "application/x-www-form-urlencoded"}}, kJsonBody,
             415, ums),
      Reject("415 before 406", "POST", p, {{"content-type", "text/plain"}, {"accept", "text/html"}},
             kJsonBody, 415, ums),
      // 406
      Reject("accept html", "POST", p, with("accept", "text/html"), kJsonBody, 406, k406Body),
      Reject("accept text/*", "POST", p, with("accept", "text/*"), kJsonBody, 406, k406Body),
      Reject("accept json with q=0", "POST", p, with("accept", "application/json;q=0, text/html"),
             kJsonBody, 406, k406Body),
      Reject("accept json with q=0.000", "POST", p, with("accept", "application/json; q=0.000"),
             kJsonBody, 406, k406Body),
      Reject("accept no body", "POST", p, {{"accept", "image/png"}}, "", 406, k406Body),
  };
}

class RouteWorkerApiTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(RouteWorkerApiTableTest, Answers) {
  const Case& c = GetParam();
  std::string seen_name;
  std::string seen_body;
  int calls = 0;
  HttpResponse r =
      RouteWorkerApi(MakeRequest(c), [&](std::string_view name, std::string_view body) {
        ++calls;
        seen_name = name;
        seen_body = body;
        HttpResponse ok;
        ok.body = kOkBody;
        return ok;
      });
  EXPECT_EQ(r.status, c.want_status);
  EXPECT_EQ(r.content_type, c.want_content_type);
  EXPECT_EQ(r.body, c.want_body);
  if (c.want_worker.empty()) {
    EXPECT_EQ(calls, 0);
  } else {
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(seen_name, c.want_worker);
    EXPECT_EQ(seen_body, c.body);
  }
  if (c.want_status == 405) {
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0].first, "Allow");
    EXPECT_EQ(r.headers[0].second, "POST");
  } else {
    EXPECT_TRUE(r.headers.empty());
  }
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::to_string(info.param.want_status) + "_";
  for (char ch : info.param.label) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Section5_2, RouteWorkerApiTableTest, ::testing::ValuesIn(Cases()),
                         CaseName);

TEST(RouteWorkerApiTest, PassesOnMessageResponseThrough) {
  HttpRequest req = MakeRequest(kOk);
  HttpResponse r = RouteWorkerApi(req, [](std::string_view, std::string_view) {
    HttpResponse bad;
    bad.status = 400;
    bad.body = R"({"Status":400,"Message":"x"})";
    bad.headers.emplace_back("X-Test", "1");
    return bad;
  });
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"Status":400,"Message":"x"})");
  ASSERT_EQ(r.headers.size(), 1u);
}

TEST(RouteWorkerApiTest, ThrowingOnMessageIsAnswered500) {
  HttpResponse r = RouteWorkerApi(
      MakeRequest(kOk),
      [](std::string_view, std::string_view) -> HttpResponse { throw std::runtime_error("boom"); });
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.content_type, "text/plain");
  EXPECT_EQ(r.body, "500: Internal Server Error");
}

}  // namespace
}  // namespace sedna::http
