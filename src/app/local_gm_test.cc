// Standalone mode's credential injection (sedna-protocol.md §2.5): the sedna.io/credential
// annotation the local GM puts on the objects it sends, byte for byte as Sedna's GM makes it.
#include "app/local_gm.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "adapters/json/resource_codec.h"
#include "adapters/json/test_util.h"
#include "adapters/manifest/manifest.h"

namespace sedna::app {
namespace {

using NJ = nlohmann::json;
using json::testing::ReadTestdata;

manifest::Secret MakeSecret(const std::string& ns, const std::string& name,
                            std::map<std::string, std::string> annotations,
                            std::map<std::string, std::string> data) {
  return manifest::Secret{ns, name, std::move(annotations), std::move(data), "test"};
}

// The value the GM gave the IL job of testdata/il_job_round2.json, for the Secret of Sedna's
// examples/storage/s3/README.md.
constexpr const char* kReadmeCredential =
    R"({"ACCESS_KEY_ID":"XXXX","SECRET_ACCESS_KEY":"XXXXXXXX","s3-endpoint":"s3.amazonaws.com",)"
    R"("s3-usehttps":"1"})";

// The README's Secret, written as a manifest (annotations + stringData), gives the GM's value.
TEST(Credential, ReadmeSecretGivesTheGmValue) {
  manifest::LoadResult r = manifest::LoadManifestText(R"(apiVersion: v1
kind: Secret
metadata:
  name: mysecret
  annotations:
    s3-endpoint: s3.amazonaws.com # replace with your s3 endpoint
    s3-usehttps: "1" # by default 1, if testing with minio you can set to 0
stringData: # use `stringData` for raw credential string or `data` for base64 encoded string
  ACCESS_KEY_ID: XXXX
  SECRET_ACCESS_KEY: XXXXXXXX
)",
                                                      "s.yaml");
  ASSERT_TRUE(r.errors.empty());
  ASSERT_EQ(r.secrets.size(), 1u);
  EXPECT_EQ(CredentialJson(r.secrets[0]), kReadmeCredential);
}

// Annotations and data in one map (data wins), keys sorted bytewise (upper case before lower
// case, UTF-8 after ASCII), strings escaped as Go's encoding/json escapes them: HTML characters,
// U+2028/U+2029, control characters (\n \r \t short, others \u00XX), invalid UTF-8 as \ufffd,
// '/' and valid UTF-8 verbatim.
TEST(Credential, GoMarshalOfAnnotationsAndData) {
  manifest::Secret s =
      MakeSecret("default", "creds",
                 {{"s3-endpoint", "minio.local:9000"}, {"s3-usehttps", "1"}, {"note", "a<b>&c"}},
                 {{"ACCESS_KEY_ID", "AKIA"},
                  {"SECRET_ACCESS_KEY", "p\"q\\r/s\nt\tu\r\xE2\x80\xA8v\xE2\x80\xA9"},
                  {"s3-usehttps", "0"},
                  {"bin", std::string("\xFF\x01\x00\x7F", 4)},
                  {"\xC3\xA9", "\xC3\xBC"}});
  EXPECT_EQ(CredentialJson(s), R"({"ACCESS_KEY_ID":"AKIA",)"
                               R"("SECRET_ACCESS_KEY":"p\"q\\r/s\nt\tu\r\u2028v\u2029",)"
                               R"("bin":"\ufffd\u0001\u0000)"
                               "\x7F"
                               R"(",)"
                               R"("note":"a\u003cb\u003e\u0026c",)"
                               R"("s3-endpoint":"minio.local:9000",)"
                               R"("s3-usehttps":"0",)"
                               "\"\xC3\xA9\":\"\xC3\xBC\"}");
  EXPECT_EQ(CredentialJson(MakeSecret("default", "empty", {}, {})), "{}");
}

// The GM's injection into the objects it sends: the value above as
// metadata.annotations["sedna.io/credential"], other annotations kept; what the controller
// decodes from it is exactly that value.
TEST(Credential, InjectedIntoEveryKind) {
  SecretMap secrets;
  secrets[{"default", "mysecret"}] =
      MakeSecret("default", "mysecret", {{"s3-endpoint", "s3.amazonaws.com"}, {"s3-usehttps", "1"}},
                 {{"ACCESS_KEY_ID", "XXXX"}, {"SECRET_ACCESS_KEY", "XXXXXXXX"}});

  // The IL job the GM sent with the credential, minus the credential: injecting it back gives the
  // GM's annotations.
  NJ il = NJ::parse(ReadTestdata("il_job_round2.json"));
  const NJ gm_annotations = il["metadata"]["annotations"];
  il["metadata"]["annotations"].erase("sedna.io/credential");
  CredentialInjection c = InjectCredential(il.dump(), secrets);
  EXPECT_FALSE(c.missing);
  EXPECT_EQ(c.secret, "default/mysecret");
  NJ got = NJ::parse(c.object_json);
  EXPECT_EQ(got["metadata"]["annotations"], gm_annotations);
  got["metadata"]["annotations"].erase("sedna.io/credential");
  il["metadata"]["annotations"].erase("sedna.io/credential");
  EXPECT_EQ(got, il) << "nothing but the annotation changes";
  auto il_decoded = json::DecodeIlJob(c.object_json);
  ASSERT_TRUE(il_decoded.ok()) << il_decoded.message();
  ASSERT_TRUE(il_decoded->credential_json.has_value());
  EXPECT_EQ(*il_decoded->credential_json, kReadmeCredential);

  // LL job (no annotations before), Dataset and Model.
  NJ ll = NJ::parse(ReadTestdata("ll_job.json"));
  ll["spec"]["credentialName"] = "mysecret";
  auto ll_decoded = json::DecodeLlJob(InjectCredential(ll.dump(), secrets).object_json);
  ASSERT_TRUE(ll_decoded.ok()) << ll_decoded.message();
  ASSERT_TRUE(ll_decoded->credential_json.has_value());
  EXPECT_EQ(*ll_decoded->credential_json, kReadmeCredential);

  const std::string dataset =
      R"({"apiVersion":"sedna.io/v1alpha1","kind":"Dataset","metadata":{"name":"ds",)"
      R"("namespace":"default","annotations":{"team":"a"}},"spec":{"url":"s3://b/index.txt",)"
      R"("format":"txt","nodeName":"edge","credentialName":"mysecret"}})";
  c = InjectCredential(dataset, secrets);
  auto ds_decoded = json::DecodeDataset(c.object_json);
  ASSERT_TRUE(ds_decoded.ok()) << ds_decoded.message();
  ASSERT_TRUE(ds_decoded->credential_json.has_value());
  EXPECT_EQ(*ds_decoded->credential_json, kReadmeCredential);
  EXPECT_EQ(NJ::parse(c.object_json)["metadata"]["annotations"]["team"], "a");

  const std::string model =
      R"({"apiVersion":"sedna.io/v1alpha1","kind":"Model","metadata":{"name":"m"},)"
      R"("spec":{"url":"s3://b/m.pb","format":"pb","credentialName":"mysecret"}})";
  auto model_decoded = json::DecodeModel(InjectCredential(model, secrets).object_json);
  ASSERT_TRUE(model_decoded.ok()) << model_decoded.message();
  ASSERT_TRUE(model_decoded->credential_json.has_value());
  EXPECT_EQ(*model_decoded->credential_json, kReadmeCredential);
}

// No credentialName: sent as it is. A Secret that does not exist (or lives in another namespace):
// sent as it is, reported as missing with the Secret's namespace/name.
TEST(Credential, NotSetOrMissing) {
  SecretMap secrets;
  secrets[{"default", "creds"}] = MakeSecret("default", "creds", {}, {{"k", "v"}});
  const std::string plain =
      R"({"kind":"Dataset","metadata":{"name":"ds"},"spec":{"url":"/d.txt","format":"txt"}})";
  CredentialInjection c = InjectCredential(plain, secrets);
  EXPECT_EQ(c.object_json, plain);
  EXPECT_EQ(c.secret, "");
  EXPECT_FALSE(c.missing);

  const std::string empty_name =
      R"({"kind":"Dataset","metadata":{"name":"ds"},"spec":{"credentialName":""}})";
  c = InjectCredential(empty_name, secrets);
  EXPECT_EQ(c.object_json, empty_name);
  EXPECT_FALSE(c.missing);

  const std::string other_ns = R"({"kind":"Dataset","metadata":{"name":"ds","namespace":"team"},)"
                               R"("spec":{"credentialName":"creds"}})";
  c = InjectCredential(other_ns, secrets);
  EXPECT_EQ(c.object_json, other_ns);
  EXPECT_EQ(c.secret, "team/creds");
  EXPECT_TRUE(c.missing);

  secrets[{"team", "creds"}] = MakeSecret("team", "creds", {}, {{"k", "team-v"}});
  c = InjectCredential(other_ns, secrets);
  EXPECT_FALSE(c.missing);
  EXPECT_EQ(NJ::parse(c.object_json)["metadata"]["annotations"]["sedna.io/credential"],
            R"({"k":"team-v"})");

  const std::string unknown =
      R"({"kind":"Model","metadata":{"name":"m"},"spec":{"credentialName":"nope"}})";
  c = InjectCredential(unknown, secrets);
  EXPECT_EQ(c.object_json, unknown);
  EXPECT_EQ(c.secret, "default/nope");
  EXPECT_TRUE(c.missing);
}

}  // namespace
}  // namespace sedna::app
