// Expected values come from two places only:
//  * AWS's published aws-sig-v4-test-suite (as shipped in aws/aws-sdk-js-v3
//    packages/signature-v4/src/suite.fixture.ts), the AWS docs' signing-key example and the S3 API
//    reference "Example: GET Object"; each of these was also reproduced with botocore 1.43.11.
//  * botocore 1.43.11's own S3 signer, for path-style S3 requests: a throwaway script built a
//    botocore.awsrequest.AWSRequest (URL path encoded as botocore's serializer does,
//    quote(key, safe="/~"); query passed as request params), pinned
//    botocore.auth.get_current_datetime to the timestamp, called
//    botocore.auth.S3SigV4Auth(Credentials(ak, sk), "s3", region).add_auth(request), and printed
//    S3SigV4Auth.canonical_request(request) (Authorization removed) and the Authorization header.
#include "adapters/s3/sigv4.h"

#include <gtest/gtest.h>

#include <chrono>

namespace sedna::s3 {
namespace {

using namespace std::chrono_literals;

std::chrono::system_clock::time_point At(int y, unsigned mo, unsigned d, int h, int mi, int s) {
  return std::chrono::sys_days{std::chrono::year{y} / mo / d} + std::chrono::hours{h} +
         std::chrono::minutes{mi} + std::chrono::seconds{s};
}

// ---- aws-sig-v4-test-suite (service "service") --------------------------------------------------

const SigningIdentity kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1",
                             "service"};
const auto kSuiteTime = At(2015, 8, 30, 12, 36, 0);

RequestToSign SuiteRequest(std::string method, std::string path, Params query = {},
                           Params extra_headers = {}, std::string_view body = "") {
  RequestToSign r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.query = std::move(query);
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  for (auto& h : extra_headers) r.headers.push_back(std::move(h));
  r.payload_sha256 = Sha256Hex(body);
  return r;
}

std::string SuiteAuthorization(std::string_view signed_headers, std::string_view signature) {
  return "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
         "SignedHeaders=" +
         std::string(signed_headers) + ", Signature=" + std::string(signature);
}

TEST(SigV4Suite, GetVanillaEveryStage) {
  Signature s = SignV4(SuiteRequest("GET", "/"), kSuite, kSuiteTime);
  EXPECT_EQ(s.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(s.signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(s.authorization,
            SuiteAuthorization("host;x-amz-date",
                               "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
}

struct SuiteCase {
  const char* name;
  RequestToSign request;
  const char* signed_headers;
  const char* signature;
};

TEST(SigV4Suite, PublishedVectors) {
  const SuiteCase cases[] = {
      {"get-vanilla-query-order-key-case",
       SuiteRequest("GET", "/", {{"Param2", "value2"}, {"Param1", "value1"}}), "host;x-amz-date",
       "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
      {"get-vanilla-query-unreserved",
       SuiteRequest("GET", "/",
                    {{"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                      "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}}),
       "host;x-amz-date", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
      {"get-vanilla-utf8-query", SuiteRequest("GET", "/", {{"\xE1\x88\xB4", "bar"}}),
       "host;x-amz-date", "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
      {"get-unreserved",
       SuiteRequest("GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
       "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
      {"get-utf8", SuiteRequest("GET", "/\xE1\x88\xB4"), "host;x-amz-date",
       "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
      {"get-header-key-duplicate",
       SuiteRequest("GET", "/", {},
                    {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}}),
       "host;my-header1;x-amz-date",
       "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
      {"get-header-value-trim",
       SuiteRequest("GET", "/", {}, {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}}),
       "host;my-header1;my-header2;x-amz-date",
       "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
      {"post-vanilla", SuiteRequest("POST", "/"), "host;x-amz-date",
       "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
      {"post-vanilla-query", SuiteRequest("POST", "/", {{"Param1", "value1"}}), "host;x-amz-date",
       "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
      {"post-vanilla-query-nonunreserved",
       SuiteRequest("POST", "/", {{"@#$%^", ""}, {"+", "/,?><`\";:\\|][{}"}}), "host;x-amz-date",
       "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"},
      {"post-header-key-sort", SuiteRequest("POST", "/", {}, {{"My-Header1", "value1"}}),
       "host;my-header1;x-amz-date",
       "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
      {"post-header-value-case", SuiteRequest("POST", "/", {}, {{"My-Header1", "VALUE1"}}),
       "host;my-header1;x-amz-date",
       "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
      {"post-x-www-form-urlencoded",
       SuiteRequest("POST", "/", {}, {{"Content-Type", "application/x-www-form-urlencoded"}},
                    "Param1=value1"),
       "content-type;host;x-amz-date",
       "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
      {"post-x-www-form-urlencoded-parameters",
       SuiteRequest("POST", "/", {},
                    {{"Content-Type", "application/x-www-form-urlencoded; charset=utf8"}},
                    "Param1=value1"),
       "content-type;host;x-amz-date",
       "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"},
  };
  for (const SuiteCase& c : cases) {
    SCOPED_TRACE(c.name);
    Signature s = SignV4(c.request, kSuite, kSuiteTime);
    EXPECT_EQ(s.signature, c.signature);
    EXPECT_EQ(s.authorization, SuiteAuthorization(c.signed_headers, c.signature));
  }
}

TEST(SigV4Suite, QueryAndHeaderCanonicalForms) {
  EXPECT_EQ(CanonicalQueryString({{"@#$%^", ""}, {"+", "/,?><`\";:\\|][{}"}}),
            "%2B=%2F%2C%3F%3E%3C%60%22%3B%3A%5C%7C%5D%5B%7B%7D&%40%23%24%25%5E=");
  EXPECT_EQ(CanonicalQueryString({{"b", "2"}, {"a", "z"}, {"a", "y"}}), "a=y&a=z&b=2");
  EXPECT_EQ(CanonicalQueryString({}), "");
  Signature s =
      SignV4(SuiteRequest("GET", "/", {}, {{"My-Header2", " \"a   b   c\""}, {"my-header1", "x"}}),
             kSuite, kSuiteTime);
  EXPECT_NE(s.canonical_request.find("my-header1:x\nmy-header2:\"a b c\"\n"), std::string::npos)
      << s.canonical_request;
}

// AWS docs, "Examples of how to derive a signing key for Signature Version 4".
TEST(SigV4, SigningKeyDocExample) {
  EXPECT_EQ(HexEncode(SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215",
                                 "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

TEST(SigV4, AmzDate) {
  EXPECT_EQ(AmzDate(kSuiteTime), "20150830T123600Z");
  EXPECT_EQ(AmzDate(At(2024, 1, 2, 3, 4, 5) + 999ms), "20240102T030405Z");
}

TEST(SigV4, UriEncoding) {
  EXPECT_EQ(UriEncode("a b/c~d._-*+=&%", true), "a%20b%2Fc~d._-%2A%2B%3D%26%25");
  EXPECT_EQ(UriEncode("a b/c", false), "a%20b/c");
  EXPECT_EQ(UriEncode("\xC3\xBC", true), "%C3%BC");
  EXPECT_EQ(CanonicalUri(""), "/");
  EXPECT_EQ(CanonicalUri("/b/./x//y/../z"), "/b/./x//y/../z");  // S3: never normalised
}

TEST(SigV4, Sha256) {
  EXPECT_EQ(Sha256Hex(""), kEmptySha256);
  Sha256 h;
  h.Update("hello ");
  h.Update("world\n");
  EXPECT_EQ(h.FinalHex(), Sha256Hex("hello world\n"));
  EXPECT_EQ(h.FinalHex(), kEmptySha256);  // reset after FinalHex
  Sha256 moved = std::move(h);
  moved.Update("hello world\n");
  EXPECT_EQ(moved.FinalHex(), "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447");
}

// ---- S3 ----------------------------------------------------------------------------------------

// S3 API reference, "Signature Calculations for the Authorization Header: Transferring Payload in a
// Single Chunk", Example: GET Object (virtual-hosted style: the bucket is in the host).
TEST(SigV4S3, DocGetObjectExample) {
  RequestToSign r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {{"Range", "bytes=0-9"}};
  r.payload_sha256 = std::string(kEmptySha256);
  const SigningIdentity id{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                           "us-east-1", "s3"};
  Params headers = SignS3Request(r, "examplebucket.s3.amazonaws.com", id, At(2013, 5, 24, 0, 0, 0));
  ASSERT_FALSE(headers.empty());
  EXPECT_EQ(headers.back().first, "Authorization");
  EXPECT_EQ(headers.back().second,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

  r.headers.emplace_back("host", "examplebucket.s3.amazonaws.com");
  r.headers.emplace_back("x-amz-content-sha256", std::string(kEmptySha256));
  r.headers.emplace_back("x-amz-date", "20130524T000000Z");
  Signature s = SignV4(r, id, At(2013, 5, 24, 0, 0, 0));
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

// Path-style requests as the client sends them, against botocore's S3SigV4Auth (see top).
const SigningIdentity kS3{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                          "us-east-1", "s3"};
const auto kS3Time = At(2024, 1, 2, 3, 4, 5);

struct S3Case {
  const char* name;
  RequestToSign request;
  const char* host;
  SigningIdentity id;
  const char* canonical_request;
  const char* authorization;
};

RequestToSign S3Request(std::string method, std::string path, std::string_view body,
                        Params query = {}, Params headers = {}) {
  RequestToSign r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.query = std::move(query);
  r.headers = std::move(headers);
  r.payload_sha256 = Sha256Hex(body);
  return r;
}

TEST(SigV4S3, MatchesBotocore) {
  SigningIdentity eu = kS3;
  eu.region = "eu-west-1";
  const S3Case cases[] = {
      {"put-plain", S3Request("PUT", "/my-bucket/data/train.txt", "hello world\n"),
       "127.0.0.1:9000", kS3,
       "PUT\n/my-bucket/data/train.txt\n\nhost:127.0.0.1:9000\n"
       "x-amz-content-sha256:a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447\n"
       "x-amz-date:20240102T030405Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
       "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
       "Signature=3754b29ac702046d60883afefb762f2afba234c9934e21eea059f60a04d6a7ec"},
      {"put-special-key", S3Request("PUT", "/my-bucket/dir one/a+b=c&d~(1)*'!\xC3\xBC.txt", "x"),
       "127.0.0.1:9000", kS3,
       "PUT\n/my-bucket/dir%20one/a%2Bb%3Dc%26d~%281%29%2A%27%21%C3%BC.txt\n\n"
       "host:127.0.0.1:9000\n"
       "x-amz-content-sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\n"
       "x-amz-date:20240102T030405Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
       "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
       "Signature=5d56ae9d16c2968738523ccde8ea2c7d251a6e15d6451b8352a79e5a0b718da9"},
      {"get-range",
       S3Request("GET", "/my-bucket/models/m.bin", "", {}, {{"Range", "bytes=100-199"}}),
       "127.0.0.1:9000", kS3,
       "GET\n/my-bucket/models/m.bin\n\nhost:127.0.0.1:9000\nrange:bytes=100-199\n"
       "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
       "x-amz-date:20240102T030405Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
       "Signature=500a35a5582fcbb382704a3fb97fca0000f8581ea26e0cc0db89c242e25b5344"},
      {"head", S3Request("HEAD", "/my-bucket/models/m.bin", ""), "127.0.0.1:9000", kS3,
       "HEAD\n/my-bucket/models/m.bin\n\nhost:127.0.0.1:9000\n"
       "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
       "x-amz-date:20240102T030405Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
       "Signature=21ea4c7d7548b6f67b4c2098ed005252cb04fcb426de79472fbc2e898c812aa0"},
      {"delete", S3Request("DELETE", "/my-bucket/a/b", ""), "127.0.0.1:9000", kS3,
       "DELETE\n/my-bucket/a/b\n\nhost:127.0.0.1:9000\n"
       "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
       "x-amz-date:20240102T030405Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
       "Signature=a7a99b51d7d2874f942f7bc025e0c86d32a118875db8ff9958d5a66eee81e281"},
      {"copy",
       S3Request("PUT", "/dst-bucket/out/model.pb", "", {},
                 {{"x-amz-copy-source", "/src-bucket/in/" + UriEncode("m v1.pb", false)}}),
       "127.0.0.1:9000", kS3,
       "PUT\n/dst-bucket/out/model.pb\n\nhost:127.0.0.1:9000\n"
       "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
       "x-amz-copy-source:/src-bucket/in/m%20v1.pb\nx-amz-date:20240102T030405Z\n\n"
       "host;x-amz-content-sha256;x-amz-copy-source;x-amz-date\n"
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-copy-source;x-amz-date, "
       "Signature=d6cc902b507dcb8e9e3576be7238881ef524e2d1d7f2e123ecd66e61b7b11331"},
      {"list-v2",
       S3Request("GET", "/my-bucket", "",
                 {{"list-type", "2"},
                  {"prefix", "data/a b+/"},
                  {"encoding-type", "url"},
                  {"continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="}}),
       "127.0.0.1:9000", kS3,
       "GET\n/my-bucket\n"
       "continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&encoding-type=url&"
       "list-type=2&prefix=data%2Fa%20b%2B%2F\n"
       "host:127.0.0.1:9000\n"
       "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
       "x-amz-date:20240102T030405Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
       "Signature=a607456a579365eef3bea113100999a545d05c4ebd34389d2789f47eb57f768a"},
      {"create-bucket-eu-west-1",
       S3Request("PUT", "/new-bucket",
                 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                 "<LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>"),
       "s3.example.com", eu,
       "PUT\n/new-bucket\n\nhost:s3.example.com\n"
       "x-amz-content-sha256:a2531158b25edb57200e54140cc1b12d0af943f596ea467c2fbbedcc16223cc5\n"
       "x-amz-date:20240102T030405Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
       "a2531158b25edb57200e54140cc1b12d0af943f596ea467c2fbbedcc16223cc5",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240102/eu-west-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
       "Signature=a2bf260cb2923bb36e8fd5edf3515cab1004c9e7588b47d3ed4668acc36779b1"},
  };
  for (const S3Case& c : cases) {
    SCOPED_TRACE(c.name);
    Params headers = SignS3Request(c.request, c.host, c.id, kS3Time);
    ASSERT_EQ(headers.back().first, "Authorization");
    EXPECT_EQ(headers.back().second, c.authorization);

    RequestToSign full = c.request;
    full.headers.assign(headers.begin(), headers.end() - 1);
    EXPECT_EQ(CanonicalRequest(full), c.canonical_request);
  }
}

TEST(SigV4S3, SignS3RequestAddsTheS3Headers) {
  Params headers = SignS3Request(S3Request("GET", "/b/k", ""), "h:1", kS3, kS3Time);
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[0], (std::pair<std::string, std::string>{"host", "h:1"}));
  EXPECT_EQ(headers[1], (std::pair<std::string, std::string>{"x-amz-content-sha256",
                                                             std::string(kEmptySha256)}));
  EXPECT_EQ(headers[2], (std::pair<std::string, std::string>{"x-amz-date", "20240102T030405Z"}));
  EXPECT_EQ(headers[3].first, "Authorization");
}

}  // namespace
}  // namespace sedna::s3
