#include "adapters/json/k8s_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sedna::json {
namespace {

struct Case {
  std::string value;
  std::string want;  // "" : valid; else the error after "f: "
};

const char kNotLabel[] =
    "is not a valid namespace: a DNS-1123 label is at most 63 lower case alphanumeric "
    "characters or '-', starting and ending with an alphanumeric character";
const char kNotSubdomain[] =
    "is not a valid name: a DNS-1123 subdomain is at most 253 lower case alphanumeric "
    "characters, '-' or '.', each '.'-separated part starting and ending with an alphanumeric "
    "character";

TEST(K8sNamesTest, Namespaces) {
  const std::vector<Case> cases = {
      {"default", ""},
      {"kube-system", ""},
      {"a", ""},
      {"0", ""},
      {"1-a", ""},
      {std::string(63, 'n'), ""},
      {"", "missing"},
      {std::string(64, 'n'), "\"" + std::string(64, 'n') + "\" " + kNotLabel},
      {"Default", std::string("\"Default\" ") + kNotLabel},
      {"a.b", std::string("\"a.b\" ") + kNotLabel},
      {"-a", std::string("\"-a\" ") + kNotLabel},
      {"a-", std::string("\"a-\" ") + kNotLabel},
      {"a_b", std::string("\"a_b\" ") + kNotLabel},
      {"a b", std::string("\"a b\" ") + kNotLabel},
      {"ns/x", "\"ns/x\" must not contain '/'"},
      {"..", "\"..\" " + std::string(kNotLabel)},
      {"a\n", "\"a\\n\" " + std::string(kNotLabel)},
  };
  for (const Case& c : cases) {
    Status s = CheckNamespace("f", c.value);
    if (c.want.empty()) {
      EXPECT_TRUE(s.ok()) << c.value << ": " << s.message();
    } else {
      EXPECT_EQ(s.message(), "f: " + c.want) << c.value;
    }
  }
}

TEST(K8sNamesTest, ObjectNames) {
  const std::string l63(63, 'x');
  const std::string n253 = l63 + "." + l63 + "." + l63 + "." + std::string(61, 'y');
  ASSERT_EQ(n253.size(), 253u);
  const std::vector<Case> cases = {
      {"helmet-detection-demo", ""},
      {"incremental-dataset", ""},
      {"a.b.c", ""},
      {"0a", ""},
      {"x", ""},
      {n253, ""},
      {std::string(100, 'z'), ""},  // one label may be longer than 63 in a subdomain
      {"", "missing"},
      {n253 + "y", "\"" + (n253 + "y").substr(0, 80) + "\"... (254 bytes) " + kNotSubdomain},
      {"a/b", "\"a/b\" must not contain '/'"},
      {"../etc", "\"../etc\" must not contain '/'"},
      {"/", "\"/\" must not contain '/'"},
      {"..", std::string("\"..\" ") + kNotSubdomain},
      {".", std::string("\".\" ") + kNotSubdomain},
      {"a..b", std::string("\"a..b\" ") + kNotSubdomain},
      {"a.", std::string("\"a.\" ") + kNotSubdomain},
      {".a", std::string("\".a\" ") + kNotSubdomain},
      {"a-.b", std::string("\"a-.b\" ") + kNotSubdomain},
      {"A", std::string("\"A\" ") + kNotSubdomain},
      {"job_1", std::string("\"job_1\" ") + kNotSubdomain},
      {"n\u003e", std::string("\"n\\u003e\" ") + kNotSubdomain},
      {"a b", std::string("\"a b\" ") + kNotSubdomain},
  };
  for (const Case& c : cases) {
    Status s = CheckObjectName("f", c.value);
    if (c.want.empty()) {
      EXPECT_TRUE(s.ok()) << c.value << ": " << s.message();
    } else {
      EXPECT_EQ(s.message(), "f: " + c.want) << c.value;
    }
  }
}

}  // namespace
}  // namespace sedna::json
