// Client tests against a real S3 implementation: moto_server, started per test suite as a child
// process on 127.0.0.1 with signature checking switched on (tests/support/moto_server.h), plus a
// small TCP proxy that injects faults (cut connections, canned 5xx/4xx answers;
// tests/support/fault_proxy.h).
#include "adapters/s3/s3_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/s3/sigv4.h"
#include "fault_proxy.h"
#include "moto_server.h"

namespace sedna::s3 {
namespace {

using namespace std::chrono_literals;

using sedna::testing::FaultProxy;
using sedna::testing::MotoServer;

int FreePort() { return sedna::testing::FreeLoopbackPort(); }

// ---- canned answers -----------------------------------------------------------------------------

std::string CannedAnswer(const std::string& status_line, const std::string& xml) {
  return "HTTP/1.1 " + status_line +
         "\r\nContent-Type: application/xml\r\nContent-Length: " + std::to_string(xml.size()) +
         "\r\nConnection: close\r\n\r\n" + xml;
}

std::string ErrorXml(const std::string& code, const std::string& message) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
         message + "</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>";
}

// ---- helpers --------------------------------------------------------------------------------

std::string Pattern(size_t n, uint64_t seed) {
  std::string out(n, '\0');
  uint64_t x = seed | 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x);
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

int64_t ProcStatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

Result<std::string> GetAll(Client& c, const S3Url& url, int64_t offset = 0, int64_t length = -1) {
  std::string out;
  Status s = c.Get(url, offset, length, [&](std::string_view chunk) {
    out.append(chunk);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sedna_s3_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- fixture --------------------------------------------------------------------------------

class S3ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new MotoServer();
    problem_ = server_->Start(&skip_);
  }
  static void TearDownTestSuite() {
    server_->Stop();
    if (problem_.empty()) server_->RemoveLog();  // kept when startup failed
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (skip_) GTEST_SKIP() << problem_;
    ASSERT_TRUE(problem_.empty()) << problem_;
  }

  static Credentials Creds() { return server_->credentials(); }
  static ClientOptions Fast() {
    ClientOptions o;
    o.timeout = 30s;
    o.retries = 2;
    o.backoff = 10ms;
    return o;
  }
  // A new bucket for the calling test.
  std::string NewBucket(Client& c) {
    const std::string name = "bucket-" + std::to_string(++buckets_);
    Status s = c.CreateBucket(name);
    EXPECT_TRUE(s.ok()) << s.message();
    return name;
  }

  static inline MotoServer* server_ = nullptr;
  static inline std::string problem_;
  static inline bool skip_ = false;
  static inline int buckets_ = 0;
};

TEST_F(S3ServerTest, PutHeadGetWholeAndRanged) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  const std::string data = Pattern(1000, 1);
  const S3Url url{b, "data/train.bin"};
  ASSERT_TRUE(c.PutBytes(url, data).ok());

  auto info = c.Head(url);
  ASSERT_TRUE(info.ok()) << info.message();
  EXPECT_EQ(info->size, 1000);
  EXPECT_EQ(info->etag.size(), 32u) << info->etag;  // MD5 hex, quotes stripped

  auto all = GetAll(c, url);
  ASSERT_TRUE(all.ok()) << all.message();
  EXPECT_EQ(*all, data);
  auto mid = GetAll(c, url, 10, 20);
  ASSERT_TRUE(mid.ok()) << mid.message();
  EXPECT_EQ(*mid, data.substr(10, 20));
  auto tail = GetAll(c, url, 990, -1);
  ASSERT_TRUE(tail.ok()) << tail.message();
  EXPECT_EQ(*tail, data.substr(990));
  auto past = GetAll(c, url, 995, 100);  // reaches past the end: the bytes up to the end
  ASSERT_TRUE(past.ok()) << past.message();
  EXPECT_EQ(*past, data.substr(995));
  auto none = GetAll(c, url, 5, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");

  auto beyond = GetAll(c, url, 1000, 10);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.message().rfind("GET s3://" + b + "/data/train.bin: 416 InvalidRange", 0), 0u)
      << beyond.message();

  ASSERT_TRUE(c.PutBytes(S3Url{b, "empty"}, "").ok());
  auto empty = GetAll(c, S3Url{b, "empty"});
  ASSERT_TRUE(empty.ok()) << empty.message();
  EXPECT_EQ(*empty, "");
  EXPECT_EQ(c.Head(S3Url{b, "empty"})->size, 0);
}

// Signature checking is switched off here: moto verifies against the URL as werkzeug rebuilds it
// (reserved characters in the path left raw, %2F in the query decoded), so it rejects these
// requests even when botocore's own client sends them (checked with boto3 against moto 5.2.1).
// What is tested is the encoding round trip; the signatures of such requests are pinned against
// botocore in sigv4_test.
TEST_F(S3ServerTest, KeysAndPrefixesNeedingEscapesRoundTrip) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  ASSERT_TRUE(server_->SetAuthCount("inf"));
  struct AuthBackOn {
    ~AuthBackOn() { server_->SetAuthCount("0"); }
  } auth_back_on;
  const std::string keys[] = {"dir one/a+b=c&d~(1)*'!\xC3\xBC.txt", "x/%41 100%",
                              "semi;colon,comma", "q?and#hash"};
  for (const std::string& k : keys) {
    SCOPED_TRACE(k);
    Status put = c.PutBytes(S3Url{b, k}, "v:" + k);
    ASSERT_TRUE(put.ok()) << put.message();
    auto got = GetAll(c, S3Url{b, k});
    ASSERT_TRUE(got.ok()) << got.message();
    EXPECT_EQ(*got, "v:" + k);
    Status copied = c.Copy(S3Url{b, k}, S3Url{b, "copy/" + k});
    ASSERT_TRUE(copied.ok()) << copied.message();
  }
  auto listed = c.List(b, "");
  ASSERT_TRUE(listed.ok()) << listed.message();
  std::vector<std::string> want;
  for (const std::string& k : keys) {
    want.push_back(k);
    want.push_back("copy/" + k);
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(*listed, want);
  auto under = c.List(b, "copy/dir one/");
  ASSERT_TRUE(under.ok()) << under.message();
  EXPECT_EQ(*under, std::vector<std::string>{"copy/dir one/a+b=c&d~(1)*'!\xC3\xBC.txt"});
}

TEST_F(S3ServerTest, PutFileAndStreamFiftyMegabytesWithBoundedMemory) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  TempDir dir;
  const std::string path = dir.path() + "/big.bin";
  constexpr int64_t kSize = 50 << 20;
  Sha256 written;
  {
    std::ofstream out(path, std::ios::binary);
    for (int64_t i = 0; i < kSize / (1 << 20); ++i) {
      const std::string block = Pattern(1 << 20, static_cast<uint64_t>(i) + 7);
      written.Update(block);
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
    }
  }
  const std::string want_sha = written.FinalHex();
  const S3Url url{b, "models/big.bin"};
  Status put = c.PutFile(url, path);
  ASSERT_TRUE(put.ok()) << put.message();
  ASSERT_EQ(c.Head(url)->size, kSize);

  // Peak RSS is measured from here: writing "5" to clear_refs resets VmHWM to the current RSS.
  std::ofstream("/proc/self/clear_refs") << "5";
  const int64_t rss_before = ProcStatusKb("VmRSS");
  Sha256 got;
  int64_t bytes = 0;
  size_t max_chunk = 0;
  Status s = c.Get(url, 0, -1, [&](std::string_view chunk) {
    got.Update(chunk);
    bytes += static_cast<int64_t>(chunk.size());
    max_chunk = std::max(max_chunk, chunk.size());
    return Status::Ok();
  });
  const int64_t peak = ProcStatusKb("VmHWM");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(bytes, kSize);
  EXPECT_EQ(got.FinalHex(), want_sha);
  EXPECT_LE(max_chunk, 16u << 10);
  RecordProperty("rss_growth_kb", std::to_string(peak - rss_before));
  EXPECT_LT(peak - rss_before, 8 * 1024)
      << "peak " << peak << " kB, before " << rss_before << " kB";
}

TEST_F(S3ServerTest, PutFileErrors) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  TempDir dir;
  Status missing = c.PutFile(S3Url{b, "k"}, dir.path() + "/nope");
  EXPECT_EQ(missing.message(),
            "PUT s3://" + b + "/k: opening " + dir.path() + "/nope: No such file or directory");
  Status directory = c.PutFile(S3Url{b, "k"}, dir.path());
  EXPECT_EQ(directory.message(), "PUT s3://" + b + "/k: " + dir.path() + " is not a regular file");
  EXPECT_EQ(c.PutBytes(S3Url{b, ""}, "x").message(), "PUT s3://" + b + "/: empty key");
}

// The proxy changes the file when the upload connection arrives, i.e. after the hashing pass and
// before curl reads the body (for bodies over 1 MiB curl first waits for "100 Continue").
TEST_F(S3ServerTest, FileChangedDuringUploadIsNotStored) {
  Client setup(Creds(), Fast());
  const std::string b = NewBucket(setup);
  TempDir dir;
  const std::string path = dir.path() + "/f.bin";
  for (const bool truncate : {false, true}) {
    SCOPED_TRACE(truncate);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << Pattern(2 << 20, 5);
    }
    FaultProxy proxy(server_->port(), [&](int) {
      if (truncate) {
        EXPECT_EQ(::truncate(path.c_str(), 1 << 20), 0);
      } else {
        std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(12345);
        f.put('!');
      }
      return FaultProxy::Plan{};
    });
    Credentials via = Creds();
    via.endpoint = "127.0.0.1:" + std::to_string(proxy.port());
    Client c(via, Fast());
    Status s = c.PutFile(S3Url{b, "f"}, path);
    EXPECT_EQ(s.message(),
              "PUT s3://" + b + "/f: " + path +
                  (truncate ? " shrank during the upload" : " changed during the upload"));
    EXPECT_EQ(proxy.connections(), 1);
    EXPECT_FALSE(setup.Head(S3Url{b, "f"}).ok());
  }
}

TEST_F(S3ServerTest, UploadRetriedAfter5xxSendsTheWholeFileAgain) {
  Client setup(Creds(), Fast());
  const std::string b = NewBucket(setup);
  TempDir dir;
  const std::string path = dir.path() + "/f.bin";
  const std::string data = Pattern(3 << 20, 6);
  std::ofstream(path, std::ios::binary) << data;
  FaultProxy proxy(server_->port(), [](int i) {
    FaultProxy::Plan p;
    if (i == 0) {
      p.kind = FaultProxy::Plan::kCanned;
      p.canned = CannedAnswer("500 Internal Server Error",
                              ErrorXml("InternalError", "We encountered an internal error."));
    }
    return p;
  });
  Credentials via = Creds();
  via.endpoint = "127.0.0.1:" + std::to_string(proxy.port());
  Client c(via, Fast());
  Status s = c.PutFile(S3Url{b, "f"}, path);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(proxy.connections(), 2);
  auto got = GetAll(setup, S3Url{b, "f"});
  ASSERT_TRUE(got.ok()) << got.message();
  EXPECT_TRUE(*got == data);
}

TEST_F(S3ServerTest, CopyServerSide) {
  Client c(Creds(), Fast());
  const std::string b1 = NewBucket(c);
  const std::string b2 = NewBucket(c);
  const std::string data = Pattern(100000, 3);
  ASSERT_TRUE(c.PutBytes(S3Url{b1, "in/m v1.pb"}, data).ok());
  Status s = c.Copy(S3Url{b1, "in/m v1.pb"}, S3Url{b2, "out/model.pb"});
  ASSERT_TRUE(s.ok()) << s.message();
  auto got = GetAll(c, S3Url{b2, "out/model.pb"});
  ASSERT_TRUE(got.ok()) << got.message();
  EXPECT_EQ(*got, data);

  Status missing = c.Copy(S3Url{b1, "absent"}, S3Url{b2, "x"});
  EXPECT_EQ(missing.message().rfind(
                "PUT s3://" + b2 + "/x (copy of s3://" + b1 + "/absent): 404 NoSuchKey", 0),
            0u)
      << missing.message();
}

TEST_F(S3ServerTest, ListPaginatesPastAThousandKeys) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  std::vector<std::string> want;
  for (int i = 0; i < 1005; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "p/k%05d", i);
    want.push_back(key);
    ASSERT_TRUE(c.PutBytes(S3Url{b, key}, "x").ok());
  }
  ASSERT_TRUE(c.PutBytes(S3Url{b, "other/k"}, "x").ok());
  ASSERT_TRUE(c.PutBytes(S3Url{b, "q"}, "x").ok());

  // No '/' in the prefix: moto's signature check mishandles %2F in a query (see above).
  auto listed = c.List(b, "p");
  ASSERT_TRUE(listed.ok()) << listed.message();
  EXPECT_EQ(*listed, want);
  auto everything = c.List(b, "");
  ASSERT_TRUE(everything.ok()) << everything.message();
  EXPECT_EQ(everything->size(), 1007u);
  auto nothing = c.List(b, "zzz");
  ASSERT_TRUE(nothing.ok()) << nothing.message();
  EXPECT_TRUE(nothing->empty());
}

TEST_F(S3ServerTest, Delete) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  const S3Url url{b, "tmp/x"};
  ASSERT_TRUE(c.PutBytes(url, "x").ok());
  ASSERT_TRUE(c.Delete(url).ok());
  auto head = c.Head(url);
  ASSERT_FALSE(head.ok());
  // HEAD answers have no body: the reason phrase ("NOT FOUND" from moto's werkzeug).
  EXPECT_EQ(Lower(head.message()), "head s3://" + b + "/tmp/x: 404 not found");
  EXPECT_EQ(head.status().http_status(), 404);  // callers decide on this, not on the text
  EXPECT_EQ(head.code(), ErrorCode::kNotFound);
  EXPECT_TRUE(c.Delete(url).ok());  // already gone
  auto listed = c.List(b, "tmp");
  ASSERT_TRUE(listed.ok()) << listed.message();
  EXPECT_TRUE(listed->empty());
}

TEST_F(S3ServerTest, WrongSecretIsAClear403WithoutTheSecret) {
  Client good(Creds(), Fast());
  const std::string b = NewBucket(good);
  Credentials bad = Creds();
  bad.secret_key = "wrong-secret-value-0123456789";
  Client c(bad, Fast());
  Status s = c.PutBytes(S3Url{b, "k"}, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.message().rfind("PUT s3://" + b +
                            "/k: 403 SignatureDoesNotMatch: The request "
                            "signature we calculated does not match the signature you provided.",
                        0),
      0u)
      << s.message();
  EXPECT_EQ(s.message().find("(2 attempts)"), std::string::npos) << "4xx must not be retried";
  EXPECT_EQ(s.message().find(bad.secret_key), std::string::npos);
  EXPECT_EQ(s.message().find(server_->secret_key()), std::string::npos);

  Credentials unknown = Creds();
  unknown.access_key = "AKIAUNKNOWNUNKNOWN00";
  Client u(unknown, Fast());
  Status s2 = u.PutBytes(S3Url{b, "k"}, "x");
  EXPECT_EQ(s2.message().rfind("PUT s3://" + b + "/k: 403 InvalidAccessKeyId", 0), 0u)
      << s2.message();
  EXPECT_FALSE(good.Head(S3Url{b, "k"}).ok());  // nothing was stored
}

TEST_F(S3ServerTest, MissingBucketIs404NoSuchBucket) {
  Client c(Creds(), Fast());
  const std::string prefix = "GET s3://no-such-bucket/k: 404 NoSuchBucket";
  auto got = GetAll(c, S3Url{"no-such-bucket", "k"});
  EXPECT_EQ(got.message().rfind(prefix, 0), 0u) << got.message();
  EXPECT_EQ(got.status().http_status(), 404);
  EXPECT_EQ(c.PutBytes(S3Url{"no-such-bucket", "k"}, "x")
                .message()
                .rfind("PUT s3://no-such-bucket/k: 404 NoSuchBucket", 0),
            0u);
  auto listed = c.List("no-such-bucket", "p");
  EXPECT_EQ(listed.message().rfind("LIST s3://no-such-bucket/p: 404 NoSuchBucket", 0), 0u)
      << listed.message();
  EXPECT_EQ(listed.status().http_status(), 404);
}

TEST_F(S3ServerTest, CutTransferResumesWhereItStopped) {
  Client setup(Creds(), Fast());
  const std::string b = NewBucket(setup);
  const std::string data = Pattern(1 << 20, 9);
  ASSERT_TRUE(setup.PutBytes(S3Url{b, "obj"}, data).ok());
  for (const auto& [offset, length] :
       std::vector<std::pair<int64_t, int64_t>>{{0, -1}, {1000, 700000}}) {
    SCOPED_TRACE(offset);
    FaultProxy proxy(server_->port(), [](int i) {
      FaultProxy::Plan p;
      if (i == 0) {
        p.kind = FaultProxy::Plan::kCutAfter;
        p.cut_after = 300000;
      }
      return p;
    });
    Credentials via = Creds();
    via.endpoint = "127.0.0.1:" + std::to_string(proxy.port());
    Client c(via, Fast());
    auto got = GetAll(c, S3Url{b, "obj"}, offset, length);
    ASSERT_TRUE(got.ok()) << got.message();
    EXPECT_EQ(*got, length < 0 ? data.substr(offset) : data.substr(offset, length));
    EXPECT_EQ(proxy.connections(), 2);
    const std::string requests = proxy.requests();
    EXPECT_NE(requests.find("if-match: "), std::string::npos);
    const size_t second = requests.rfind("range: bytes=");
    ASSERT_NE(second, std::string::npos);
    EXPECT_NE(requests.substr(second, 20), "range: bytes=" + std::to_string(offset));
  }
}

// The fixture's fault modes as the client sees them.
TEST_F(S3ServerTest, RefusedAndBlackholedConnections) {
  Client setup(Creds(), Fast());
  const std::string b = NewBucket(setup);
  ASSERT_TRUE(setup.PutBytes(S3Url{b, "k"}, "x").ok());
  FaultProxy proxy(server_->port());
  ClientOptions o;
  o.timeout = 1s;
  o.retries = 0;
  Client c(server_->credentials_via(proxy.endpoint()), o);
  const std::string failed =
      "HEAD s3://" + b + "/k: connection to http://" + proxy.endpoint() + " failed: ";

  // The window is long enough that a loaded machine (CI runs two tests at once) still makes the
  // Head inside it (300 ms once was not); its end is awaited, not slept for.
  proxy.SetModeFor(FaultProxy::Mode::kRefuse, 3s);
  auto refused = c.Head(S3Url{b, "k"});
  EXPECT_EQ(refused.message().rfind(failed, 0), 0u) << refused.message();
  EXPECT_EQ(proxy.connections(), 0);
  const auto reverts_by = std::chrono::steady_clock::now() + 10s;
  while (proxy.mode() != FaultProxy::Mode::kNormal && std::chrono::steady_clock::now() < reverts_by)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(proxy.mode(), FaultProxy::Mode::kNormal);
  EXPECT_TRUE(c.Head(S3Url{b, "k"}).ok());

  proxy.SetMode(FaultProxy::Mode::kBlackhole);
  const auto start = std::chrono::steady_clock::now();
  auto hung = c.Head(S3Url{b, "k"});
  EXPECT_EQ(hung.message().rfind(failed, 0), 0u) << hung.message();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);  // the client's own timeout
  EXPECT_EQ(proxy.connections(), 2);
  proxy.SetMode(FaultProxy::Mode::kNormal);
  EXPECT_TRUE(c.Head(S3Url{b, "k"}).ok());
  EXPECT_EQ(proxy.request_count(), 2) << "the blackholed request was never read";
}

TEST_F(S3ServerTest, SinkErrorStopsTheTransferAndIsReturnedAsIs) {
  Client c(Creds(), Fast());
  const std::string b = NewBucket(c);
  ASSERT_TRUE(c.PutBytes(S3Url{b, "obj"}, Pattern(200000, 4)).ok());
  int calls = 0;
  Status s = c.Get(S3Url{b, "obj"}, 0, -1, [&](std::string_view) {
    ++calls;
    return Status::Error("disk full");
  });
  EXPECT_EQ(s.message(), "disk full");
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(c.Head(S3Url{b, "obj"}).ok());  // the handle is still usable
}

// ---- no S3 server needed ----------------------------------------------------------------------

Credentials LocalCreds(int port) {
  Credentials c;
  c.endpoint = "127.0.0.1:" + std::to_string(port);
  c.use_https = false;
  c.access_key = "AKIAIOSFODNN7EXAMPLE";
  c.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  return c;
}

TEST(S3Client, ConnectionRefusedFailsAfterRetries) {
  const int port = FreePort();  // nothing listens there
  ClientOptions o;
  o.retries = 2;
  o.backoff = 20ms;
  Client c(LocalCreds(port), o);
  const auto start = std::chrono::steady_clock::now();
  Status s = c.PutBytes(S3Url{"b", "k"}, "x");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s.ok());
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(s.message().rfind("PUT s3://b/k: connection to " + base + " failed: ", 0), 0u)
      << s.message();
  EXPECT_NE(s.message().find("(3 attempts)"), std::string::npos) << s.message();
  EXPECT_GE(elapsed, 60ms);  // 20 + 40 ms of backoff
  EXPECT_EQ(s.message().find("wJalrXUtnFEMI"), std::string::npos);
}

// moto closes every connection (werkzeug answers "Connection: close"), so reuse is checked
// against a canned keep-alive server.
TEST(S3Client, ConnectionsAreReused) {
  FaultProxy server(FreePort(), [](int) {
    FaultProxy::Plan p;
    p.kind = FaultProxy::Plan::kCannedKeepAlive;
    p.canned =
        "HTTP/1.1 200 OK\r\nETag: \"d41d8cd98f00b204e9800998ecf8427e\"\r\nContent-Length: "
        "0\r\n\r\n";
    return p;
  });
  Client c(LocalCreds(server.port()), ClientOptions{});
  for (int i = 0; i < 3; ++i) {
    auto info = c.Head(S3Url{"b", "k"});
    ASSERT_TRUE(info.ok()) << info.message();
    EXPECT_EQ(info->etag, "d41d8cd98f00b204e9800998ecf8427e");
  }
  ASSERT_TRUE(GetAll(c, S3Url{"b", "k"}).ok());
  ASSERT_TRUE(c.Delete(S3Url{"b", "k"}).ok());
  EXPECT_EQ(server.connections(), 1);
}

TEST(S3Client, ServerErrorsAreRetriedThenReported) {
  FaultProxy proxy(FreePort(), [](int) {
    FaultProxy::Plan p;
    p.kind = FaultProxy::Plan::kCanned;
    p.canned =
        CannedAnswer("503 Slow Down", ErrorXml("SlowDown", "Please reduce your request rate."));
    return p;
  });
  ClientOptions o;
  o.retries = 2;
  o.backoff = 1ms;
  Client c(LocalCreds(proxy.port()), o);
  auto got = GetAll(c, S3Url{"b", "k"});
  EXPECT_EQ(got.message(),
            "GET s3://b/k: 503 SlowDown: Please reduce your request rate. (3 attempts)");
  EXPECT_EQ(proxy.connections(), 3);
}

TEST(S3Client, ClientErrorsAreNotRetried) {
  FaultProxy proxy(FreePort(), [](int) {
    FaultProxy::Plan p;
    p.kind = FaultProxy::Plan::kCanned;
    p.canned = CannedAnswer("403 Forbidden", ErrorXml("AccessDenied", "Access Denied"));
    return p;
  });
  ClientOptions o;
  o.retries = 3;
  o.backoff = 1ms;
  Client c(LocalCreds(proxy.port()), o);
  auto info = c.Head(S3Url{"b", "k"});  // HEAD: no body, so the reason phrase
  EXPECT_EQ(info.message(), "HEAD s3://b/k: 403 Forbidden");
  auto got = GetAll(c, S3Url{"b", "k"});
  EXPECT_EQ(got.message(), "GET s3://b/k: 403 AccessDenied: Access Denied");
  EXPECT_EQ(proxy.connections(), 2);
}

TEST(S3Client, CopyAnswering200WithAnErrorDocumentFails) {
  FaultProxy proxy(FreePort(), [](int) {
    FaultProxy::Plan p;
    p.kind = FaultProxy::Plan::kCanned;
    p.canned = CannedAnswer(
        "200 OK", ErrorXml("InternalError", "We encountered an internal error. Please try again."));
    return p;
  });
  ClientOptions o;
  o.retries = 1;
  o.backoff = 1ms;
  Client c(LocalCreds(proxy.port()), o);
  Status s = c.Copy(S3Url{"a", "k"}, S3Url{"b", "k"});
  EXPECT_EQ(s.message(),
            "PUT s3://b/k (copy of s3://a/k): 200 InternalError: We encountered an internal error. "
            "Please try again. (2 attempts)");
  EXPECT_NE(proxy.requests().find("x-amz-copy-source: /a/k\r\n"), std::string::npos);
}

TEST(S3Client, EveryRequestCarriesThePayloadHash) {
  FaultProxy proxy(FreePort(), [](int) {
    FaultProxy::Plan p;
    p.kind = FaultProxy::Plan::kCanned;
    p.canned =
        CannedAnswer("404 Not Found", ErrorXml("NoSuchKey", "The specified key does not exist."));
    return p;
  });
  ClientOptions o;
  o.retries = 0;
  Client c(LocalCreds(proxy.port()), o);
  (void)c.Head(S3Url{"b", "k"});
  (void)c.Delete(S3Url{"b", "k"});
  (void)c.List("b", "p");
  const std::string r = proxy.requests();
  size_t n = 0;
  for (size_t pos = 0; (pos = r.find("x-amz-content-sha256: " + std::string(kEmptySha256), pos)) !=
                       std::string::npos;
       ++pos) {
    ++n;
  }
  EXPECT_EQ(n, 3u) << r;
  EXPECT_NE(r.find("GET /b?encoding-type=url&list-type=2&prefix=p HTTP/1.1"), std::string::npos)
      << r;
  EXPECT_EQ(r.find("wJalrXUtnFEMI"), std::string::npos);
}

// ---- parsing ----------------------------------------------------------------------------------

TEST(ParseCredentialAnnotation, SpecExample) {
  // docs/protocol.md §P2.5, the decoded annotation value.
  auto c = ParseCredentialAnnotation(
      R"({"ACCESS_KEY_ID":"XXXX","SECRET_ACCESS_KEY":"XXXXXXXX","s3-endpoint":"s3.amazonaws.com","s3-usehttps":"1"})");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->endpoint, "s3.amazonaws.com");
  EXPECT_TRUE(c->use_https);
  EXPECT_EQ(c->access_key, "XXXX");
  EXPECT_EQ(c->secret_key, "XXXXXXXX");
  EXPECT_EQ(c->region, "us-east-1");
}

TEST(ParseCredentialAnnotation, HttpsFlagAndExtraKeys) {
  const std::string base =
      R"("ACCESS_KEY_ID":"ak","SECRET_ACCESS_KEY":"s\u0026k","s3-endpoint":"minio.local:9000")";
  auto plain = ParseCredentialAnnotation("{" + base + R"(,"s3-usehttps":"0"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->use_https);
  EXPECT_EQ(plain->secret_key, "s&k");  // Go's json.Marshal escapes '&'
  EXPECT_TRUE(ParseCredentialAnnotation("{" + base + "}")->use_https);
  EXPECT_TRUE(ParseCredentialAnnotation("{" + base + R"(,"s3-usehttps":"false"})")->use_https);
  auto extra = ParseCredentialAnnotation(
      "{" + base +
      R"(,"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\"}","n":{"x":[1,2]}})");
  ASSERT_TRUE(extra.ok()) << extra.message();
  EXPECT_EQ(extra->endpoint, "minio.local:9000");
}

TEST(ParseCredentialAnnotation, ErrorsNameTheKeyNotTheValue) {
  EXPECT_EQ(ParseCredentialAnnotation(R"({"ACCESS_KEY_ID":"ak","s3-endpoint":"e"})").message(),
            "credential annotation: missing \"SECRET_ACCESS_KEY\"");
  EXPECT_EQ(
      ParseCredentialAnnotation(R"({"ACCESS_KEY_ID":"ak","SECRET_ACCESS_KEY":"sk"})").message(),
      "credential annotation: missing \"s3-endpoint\"");
  EXPECT_EQ(ParseCredentialAnnotation(R"({"SECRET_ACCESS_KEY":"sk","s3-endpoint":"e"})").message(),
            "credential annotation: missing \"ACCESS_KEY_ID\"");
  EXPECT_EQ(
      ParseCredentialAnnotation(R"({"ACCESS_KEY_ID":"ak","SECRET_ACCESS_KEY":7,"s3-endpoint":"e"})")
          .message(),
      "credential annotation: \"SECRET_ACCESS_KEY\" is not a string");
  EXPECT_EQ(ParseCredentialAnnotation(
                R"({"ACCESS_KEY_ID":"ak","SECRET_ACCESS_KEY":"","s3-endpoint":"e"})")
                .message(),
            "credential annotation: \"SECRET_ACCESS_KEY\" is empty");
  EXPECT_EQ(
      ParseCredentialAnnotation(
          R"({"ACCESS_KEY_ID":"ak","SECRET_ACCESS_KEY":"topsecret","s3-endpoint":"https://e"})")
          .message(),
      "credential annotation: \"s3-endpoint\" must be host[:port], without scheme or path");
  EXPECT_EQ(ParseCredentialAnnotation(R"({"SECRET_ACCESS_KEY":"topsecret",)").message(),
            "credential annotation: invalid JSON");
  EXPECT_EQ(ParseCredentialAnnotation(R"("{\"a\":1}")").message(),
            "credential annotation: not a JSON object");
  EXPECT_EQ(ParseCredentialAnnotation("").message(), "credential annotation: invalid JSON");
}

TEST(ParseS3Url, Forms) {
  auto u = ParseS3Url("s3://kubeedge/data/helmet_detection/train_data/train_data.txt");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->bucket, "kubeedge");
  EXPECT_EQ(u->key, "data/helmet_detection/train_data/train_data.txt");
  EXPECT_EQ(ToString(*u), "s3://kubeedge/data/helmet_detection/train_data/train_data.txt");
  EXPECT_EQ(ParseS3Url("S3://b/a%20b+c")->key, "a b+c");
  EXPECT_EQ(ParseS3Url("s3://b")->key, "");
  EXPECT_EQ(ParseS3Url("s3://b/")->key, "");
  EXPECT_EQ(ParseS3Url("s3://b/out/")->key, "out/");
  EXPECT_EQ(ParseS3Url("http://b/k").message(), "invalid url(http://b/k), want s3://bucket/key");
  EXPECT_EQ(ParseS3Url("/data/x").message(), "invalid url(/data/x), want s3://bucket/key");
  EXPECT_EQ(ParseS3Url("s3:///k").message(), "invalid url(s3:///k): empty bucket");
  EXPECT_FALSE(ParseS3Url("s3://b:9000/k").ok());
  EXPECT_FALSE(ParseS3Url("s3://b/k?versionId=1").ok());
  EXPECT_EQ(ParseS3Url("s3://b/a%2").message(), "invalid url(s3://b/a%2): bad %-escape");
  EXPECT_FALSE(ParseS3Url("s3://b/a%zz").ok());
}

}  // namespace
}  // namespace sedna::s3
