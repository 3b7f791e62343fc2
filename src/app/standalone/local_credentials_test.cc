// Standalone mode's credential injection (docs/protocol.md §P2.5): the sedna.io/credential
// annotation the local GM puts on the objects it sends, byte for byte as Sedna's GM makes it; and
// the S3 variables its local workers get for their s3:// URLs (§P4.4, §P4.5).
#include "app/standalone/local_credentials.h"

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

// ------------------------------------------------------------------ S3 env of local workers

constexpr const char* kJob = "IncrementalLearningJob default/j";
constexpr const char* kDataset = "Dataset default/ds";

WorkerUrl Url(const std::string& var, const std::string& url, const std::string& owner,
              const std::string& credential_name, const std::string& ns = "default",
              const std::string& fallback_owner = "",
              const std::string& fallback_credential_name = "") {
  return WorkerUrl{var, url, owner, ns, credential_name, fallback_owner, fallback_credential_name};
}

// The README's Secret (annotations + data) and a MinIO-style one with s3-usehttps "0".
SecretMap S3Secrets() {
  SecretMap secrets;
  secrets[{"default", "mysecret"}] =
      MakeSecret("default", "mysecret", {{"s3-endpoint", "s3.amazonaws.com"}, {"s3-usehttps", "1"}},
                 {{"ACCESS_KEY_ID", "XXXX"}, {"SECRET_ACCESS_KEY", "XXXXXXXX"}});
  secrets[{"default", "minio"}] =
      MakeSecret("default", "minio", {{"s3-endpoint", "127.0.0.1:9000"}, {"s3-usehttps", "0"}},
                 {{"ACCESS_KEY_ID", "AKIA-MINIO"}, {"SECRET_ACCESS_KEY", "minio-secret-value"}});
  return secrets;
}

// No warning ever holds a key of any Secret.
void ExpectNoValueIn(const WorkerS3Env& r) {
  for (const auto& w : r.warnings) {
    for (const char* v : {"XXXX", "AKIA-MINIO", "minio-secret-value"}) {
      EXPECT_EQ(w.find(v), std::string::npos) << w;
    }
  }
}

// An IL train worker whose outputDir (MODEL_URL) and round data are on S3, with the job's
// Secret: exactly the three variables of the GM's buildS3SecretEnvs.
TEST(WorkerS3Env, S3UrlsWithTheJobSecretGetTheGmVariables) {
  const SecretMap secrets = S3Secrets();
  WorkerS3Env r = S3EnvForWorker(
      {Url("BASE_MODEL_URL", "/models/base/model.bin", kJob, "mysecret"),
       Url("MODEL_URL", "s3://kubeedge/out/j", kJob, "mysecret"),
       Url("TRAIN_DATASET_URL", "s3://kubeedge/out/j/data/train/1.txt", kJob, "mysecret"),
       Url("ORIGINAL_DATASET_URL", "/data/index.txt", kDataset, "")},
      secrets);
  EXPECT_EQ(r.env,
            (std::map<std::string, std::string>{{"S3_ENDPOINT_URL", "https://s3.amazonaws.com"},
                                                {"ACCESS_KEY_ID", "XXXX"},
                                                {"SECRET_ACCESS_KEY", "XXXXXXXX"}}));
  EXPECT_EQ(r.secret, "default/mysecret");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];

  // s3-usehttps "0" is plain HTTP; the scheme is case-insensitive (Go lower-cases it); a dataset
  // URL takes the Dataset's Secret.
  r = S3EnvForWorker({Url("MODEL_URL", "/out/j", kJob, "mysecret"),
                      Url("ORIGINAL_DATASET_URL", "S3://bucket/index.txt", kDataset, "minio")},
                     secrets);
  EXPECT_EQ(r.env,
            (std::map<std::string, std::string>{{"S3_ENDPOINT_URL", "http://127.0.0.1:9000"},
                                                {"ACCESS_KEY_ID", "AKIA-MINIO"},
                                                {"SECRET_ACCESS_KEY", "minio-secret-value"}}));
  EXPECT_EQ(r.secret, "default/minio");
  EXPECT_TRUE(r.warnings.empty());
}

// s3-usehttps absent: HTTPS. Keys in the data or the annotations (the credential map, data over
// annotations), s3-endpoint in stringData too; other Secret entries ignored.
TEST(WorkerS3Env, SecretKeysReadLikeTheCredentialAnnotation) {
  SecretMap secrets;
  secrets[{"team", "s"}] = MakeSecret(
      "team", "s", {{"s3-endpoint", "old.example:1"}, {"kubectl.kubernetes.io/x", "{}"}},
      {{"s3-endpoint", "s3.example:9000"}, {"ACCESS_KEY_ID", "A"}, {"SECRET_ACCESS_KEY", "B"}});
  WorkerS3Env r = S3EnvForWorker(
      {Url("OUTPUT_URL", "s3://b/o", "LifelongLearningJob team/ll", "s", "team")}, secrets);
  EXPECT_EQ(r.env,
            (std::map<std::string, std::string>{{"S3_ENDPOINT_URL", "https://s3.example:9000"},
                                                {"ACCESS_KEY_ID", "A"},
                                                {"SECRET_ACCESS_KEY", "B"}}));
  EXPECT_EQ(r.secret, "team/s");
}

// Host paths and http(s) URLs need no S3 variables, whatever Secret their owner names.
TEST(WorkerS3Env, HostPathsGetNone) {
  const SecretMap secrets = S3Secrets();
  WorkerS3Env r = S3EnvForWorker(
      {Url("BASE_MODEL_URL", "/models/base/model.bin", "Model default/base", "mysecret"),
       Url("MODEL_URL", "/out/j", kJob, "mysecret"),
       Url("TRAIN_DATASET_URL", "/out/j/data/train/1.txt", kJob, ""),
       Url("ORIGINAL_DATASET_URL", "https://example.com/index.txt", kDataset, "nope"),
       Url("TEST_DATASET_URL", "", kDataset, "nope"),
       Url("MODEL_URLS", "relative/s3://not-a-scheme", kJob, "")},
      secrets);
  EXPECT_TRUE(r.env.empty());
  EXPECT_EQ(r.secret, "");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
}

// s3:// URLs without a usable Secret: no variables, and a warning naming the variables, the
// owner and why (no credentialName; a Secret not in the manifests; one without s3-endpoint).
TEST(WorkerS3Env, MissingSecretGetsNoneAndAWarning) {
  SecretMap secrets = S3Secrets();
  WorkerS3Env r = S3EnvForWorker(
      {Url("MODEL_URL", "s3://kubeedge/out/j", kJob, "creds"),
       Url("TRAIN_DATASET_URL", "s3://kubeedge/out/j/data/train/1.txt", kJob, "creds")},
      secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "MODEL_URL, TRAIN_DATASET_URL: s3:// URLs of IncrementalLearningJob default/j: its "
            "Secret default/creds (spec.credentialName) is not in the manifests; the worker gets "
            "no S3 variables (S3_ENDPOINT_URL, ACCESS_KEY_ID, SECRET_ACCESS_KEY; a container env "
            "may set them)");

  r = S3EnvForWorker({Url("MODEL_URL", "s3://kubeedge/out/j", kJob, ""),
                      Url("ORIGINAL_DATASET_URL", "s3://kubeedge/index.txt", kDataset, "")},
                     secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0],
            "MODEL_URL: s3:// URL of IncrementalLearningJob default/j: it sets no "
            "spec.credentialName; the worker gets no S3 variables (S3_ENDPOINT_URL, ACCESS_KEY_ID, "
            "SECRET_ACCESS_KEY; a container env may set them)");
  EXPECT_NE(r.warnings[1].find("ORIGINAL_DATASET_URL: s3:// URL of Dataset default/ds: it sets no "
                               "spec.credentialName"),
            std::string::npos)
      << r.warnings[1];

  // The Secret is in another namespace than the owner: missing, as the GM's lookup is.
  r = S3EnvForWorker(
      {Url("MODEL_URL", "s3://b/o", "IncrementalLearningJob team/j", "mysecret", "team")}, secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("its Secret team/mysecret (spec.credentialName) is not in the "
                               "manifests"),
            std::string::npos);

  secrets[{"default", "noendpoint"}] = MakeSecret(
      "default", "noendpoint", {}, {{"ACCESS_KEY_ID", "XXXX"}, {"SECRET_ACCESS_KEY", "XXXXXXXX"}});
  r = S3EnvForWorker({Url("MODEL_URL", "s3://b/o", kJob, "noendpoint")}, secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "MODEL_URL: s3:// URL of IncrementalLearningJob default/j: its Secret "
            "default/noendpoint has no s3-endpoint; the worker gets no S3 variables "
            "(S3_ENDPOINT_URL, ACCESS_KEY_ID, SECRET_ACCESS_KEY; a container env may set them)");
  ExpectNoValueIn(r);
}

// One set of variables per worker, as the GM merges them: the first usable Secret in mount order
// wins; a URL whose Secret differs is warned about (names only), one without a Secret too.
TEST(WorkerS3Env, FirstUsableSecretWins) {
  const SecretMap secrets = S3Secrets();
  WorkerS3Env r =
      S3EnvForWorker({Url("MODEL_URLS", "s3://kubeedge/out/j/model.bin", kJob, "nope"),
                      Url("OUTPUT_URL", "s3://kubeedge/out/j", kJob, "mysecret"),
                      Url("TEST_DATASET_URL", "s3://data/eval.txt", kDataset, "minio"),
                      Url("ORIGINAL_DATASET_URL", "s3://data/index.txt", kDataset, "minio")},
                     secrets);
  EXPECT_EQ(r.secret, "default/mysecret");
  EXPECT_EQ(r.env.at("S3_ENDPOINT_URL"), "https://s3.amazonaws.com");
  EXPECT_EQ(r.env.at("SECRET_ACCESS_KEY"), "XXXXXXXX");
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0],
            "MODEL_URLS: s3:// URL of IncrementalLearningJob default/j: its Secret default/nope "
            "(spec.credentialName) is not in the manifests; the worker gets the S3 variables of "
            "Secret default/mysecret");
  EXPECT_EQ(r.warnings[1],
            "TEST_DATASET_URL, ORIGINAL_DATASET_URL: s3:// URLs of Dataset default/ds: its Secret "
            "default/minio differs from Secret default/mysecret; the worker gets the S3 variables "
            "of Secret default/mysecret");
  ExpectNoValueIn(r);

  // The same Secret for the job and the dataset: no warning.
  r = S3EnvForWorker({Url("OUTPUT_URL", "s3://kubeedge/out/j", kJob, "mysecret"),
                      Url("TEST_DATASET_URL", "s3://data/eval.txt", kDataset, "mysecret")},
                     secrets);
  EXPECT_EQ(r.secret, "default/mysecret");
  EXPECT_TRUE(r.warnings.empty());
}

// An owner that sets no credentialName: its fallback's Secret applies (the eval worker's
// TEST_DATASET_URL, a file under the job's s3:// outputDir, of a Dataset without a Secret). An
// owner that names a Secret does not fall back, even when that Secret is missing.
TEST(WorkerS3Env, FallbackSecretWhenTheOwnerNamesNone) {
  const SecretMap secrets = S3Secrets();
  WorkerS3Env r =
      S3EnvForWorker({Url("TEST_DATASET_URL", "s3://kubeedge/out/j/data/eval/2/data.txt", kDataset,
                          "", "default", kJob, "minio")},
                     secrets);
  EXPECT_EQ(r.secret, "default/minio");
  EXPECT_EQ(r.env.at("S3_ENDPOINT_URL"), "http://127.0.0.1:9000");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];

  r = S3EnvForWorker(
      {Url("TEST_DATASET_URL", "s3://b/eval.txt", kDataset, "", "default", kJob, "")}, secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "TEST_DATASET_URL: s3:// URL of Dataset default/ds: it sets no spec.credentialName, "
            "nor does IncrementalLearningJob default/j; the worker gets no S3 variables "
            "(S3_ENDPOINT_URL, ACCESS_KEY_ID, SECRET_ACCESS_KEY; a container env may set them)");

  r = S3EnvForWorker(
      {Url("TEST_DATASET_URL", "s3://b/eval.txt", kDataset, "", "default", kJob, "gone")}, secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("s3:// URL of Dataset default/ds: the Secret of "
                               "IncrementalLearningJob default/j, default/gone "
                               "(spec.credentialName) is not in the manifests"),
            std::string::npos)
      << r.warnings[0];

  r = S3EnvForWorker(
      {Url("TEST_DATASET_URL", "s3://b/eval.txt", kDataset, "gone", "default", kJob, "minio")},
      secrets);
  EXPECT_TRUE(r.env.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("its Secret default/gone"), std::string::npos) << r.warnings[0];
}

// A Secret without the keys: the GM gives them empty; the warning says which is missing.
TEST(WorkerS3Env, MissingKeysAreEmptyWithAWarning) {
  SecretMap secrets;
  secrets[{"default", "half"}] =
      MakeSecret("default", "half", {{"s3-endpoint", "s3.local"}}, {{"ACCESS_KEY_ID", "XXXX"}});
  WorkerS3Env r = S3EnvForWorker({Url("MODEL_URL", "s3://b/o", kJob, "half")}, secrets);
  EXPECT_EQ(r.env, (std::map<std::string, std::string>{{"S3_ENDPOINT_URL", "https://s3.local"},
                                                       {"ACCESS_KEY_ID", "XXXX"},
                                                       {"SECRET_ACCESS_KEY", ""}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(
      r.warnings[0],
      "Secret default/half has no SECRET_ACCESS_KEY; the worker gets SECRET_ACCESS_KEY empty");
  ExpectNoValueIn(r);
}

}  // namespace
}  // namespace sedna::app
