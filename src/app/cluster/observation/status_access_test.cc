#include "app/cluster/observation/status_access.h"

#include <gtest/gtest.h>

namespace sedna::app {
namespace {

http::HttpRequest Get(std::string host, std::string method = "GET") {
  http::HttpRequest r;
  r.method = std::move(method);
  r.target = "/api/dashboard";
  if (!host.empty()) r.headers["host"] = std::move(host);
  return r;
}

// The kubelet probes 127.0.0.1:<port> with that as Host; the CLI sends `localhost`.
TEST(StatusAccessTest, LoopbackNamesTheBindAddressAndTheListAreServed) {
  const auto hosts = StatusHosts("10.0.0.7", {"lc.example", "FD00::5"});
  for (const char* ok :
       {"127.0.0.1", "127.0.0.1:9101", "localhost", "LocalHost:9101", "[::1]", "[::1]:9101",
        "10.0.0.7", "10.0.0.7:80", "lc.example", "LC.example:9101", "[fd00::5]:9101"}) {
    SCOPED_TRACE(ok);
    EXPECT_TRUE(StatusHostAllowed(ok, hosts));
    EXPECT_FALSE(RefuseStatusRequest(Get(ok), hosts).has_value());
    EXPECT_FALSE(RefuseStatusRequest(Get(ok, "HEAD"), hosts).has_value());
  }
}

// DNS rebinding: a page at evil.example whose name now resolves to 127.0.0.1 sends its own
// name; so does anything that is not exactly a served name and an optional numeric port.
TEST(StatusAccessTest, OtherHostsGet421) {
  const auto hosts = StatusHosts("127.0.0.1", {});
  for (const char* bad : {"evil.example", "evil.example:9101", "127.0.0.1.evil.example",
                          "localhost.", "127.0.0.2", "127.0.0.1:x", "127.0.0.1:", "[::1", "[::1]x",
                          "[::1]:", ":9101", "::1", "localhost, evil", "0.0.0.0"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(StatusHostAllowed(bad, hosts));
    auto r = RefuseStatusRequest(Get(bad), hosts);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 421);
    EXPECT_EQ(r->content_type, "text/plain");
  }
  auto none = RefuseStatusRequest(Get(""), hosts);  // no Host header at all
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 421);
}

TEST(StatusAccessTest, OnlyGetAndHeadAreAnswered) {
  const auto hosts = StatusHosts("127.0.0.1", {});
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get", "TRACE"}) {
    SCOPED_TRACE(method);
    auto r = RefuseStatusRequest(Get("127.0.0.1:9101", method), hosts);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 405);
    ASSERT_EQ(r->headers.size(), 1u);
    EXPECT_EQ(r->headers[0].first, "Allow");
    EXPECT_EQ(r->headers[0].second, "GET, HEAD");
  }
}

TEST(StatusAccessTest, AWildcardBindAddressIsAServedName) {
  EXPECT_TRUE(StatusHostAllowed("0.0.0.0:9101", StatusHosts("0.0.0.0", {})));
  EXPECT_TRUE(StatusHostAllowed("[::]:9101", StatusHosts("::", {})));
  EXPECT_FALSE(StatusHostAllowed("192.168.1.5:9101", StatusHosts("0.0.0.0", {})));
}

}  // namespace
}  // namespace sedna::app
