// SyncIndexMirror against moto_server with signature checking on (tests/support/moto_server.h);
// request counts and bytes on the wire are checked through a relaying FaultProxy (moto closes
// every connection, so each request is one proxied connection).
#include "adapters/s3/index_mirror.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/fs/files.h"
#include "fault_proxy.h"
#include "moto_server.h"

namespace sedna::s3 {
namespace {

using namespace std::chrono_literals;
using sedna::testing::FaultProxy;
using sedna::testing::MotoServer;
namespace stdfs = std::filesystem;

// "datasets/train/images/img_000000042.jpeg 2\n" (43 bytes): index lines [first, first + n).
std::string Lines(int64_t first, int64_t n, const std::string& tag = "img") {
  std::string out;
  char line[96];
  for (int64_t i = first; i < first + n; ++i) {
    const int len =
        std::snprintf(line, sizeof(line), "datasets/train/images/%s_%09lld.jpeg %lld\n",
                      tag.c_str(), static_cast<long long>(i), static_cast<long long>(i % 10));
    out.append(line, static_cast<size_t>(len));
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& data, bool append = false) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << data;
}

uint64_t Inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

int64_t ProcStatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

class IndexMirrorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new MotoServer();
    problem_ = server_->Start(&skip_);
  }
  static void TearDownTestSuite() {
    server_->Stop();
    if (problem_.empty()) server_->RemoveLog();
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (skip_) GTEST_SKIP() << problem_;
    ASSERT_TRUE(problem_.empty()) << problem_;
    std::string tmpl = (stdfs::temp_directory_path() / "index_mirror_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    mirror_ = dir_ + "/index.txt";
    bucket_ = "mirror-" + std::to_string(++buckets_);
    Status s = server_->CreateBucket(bucket_);
    ASSERT_TRUE(s.ok()) << s.message();
    url_ = S3Url{bucket_, "datasets/train/index.txt"};
  }
  void TearDown() override {
    fs::SetWriteFaultForTest(nullptr);
    std::error_code ec;
    if (!dir_.empty()) stdfs::remove_all(dir_, ec);
  }

  static ClientOptions Fast() {
    ClientOptions o;
    o.timeout = 30s;
    o.retries = 2;
    o.backoff = 10ms;
    return o;
  }
  static Client Direct() { return Client(server_->credentials(), Fast()); }

  void Put(const std::string& data) {
    Client c = Direct();
    Status s = c.PutBytes(url_, data);
    ASSERT_TRUE(s.ok()) << s.message();
  }

  // The mirror's content equals `want` (large strings: reports sizes and the first difference).
  ::testing::AssertionResult MirrorIs(const std::string& want) const {
    const std::string got = ReadFile(mirror_);
    if (got == want) return ::testing::AssertionSuccess();
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    return ::testing::AssertionFailure()
           << "mirror has " << got.size() << " bytes, want " << want.size()
           << "; first difference at " << i << ": got \"" << got.substr(i, 40) << "\", want \""
           << want.substr(i, 40) << "\"";
  }

  MirrorSync Sync(Client& c) {
    auto r = SyncIndexMirror(c, url_, mirror_);
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? *r : MirrorSync{};
  }
  MirrorSync Sync() {
    Client c = Direct();
    return Sync(c);
  }

  // The samples the host-path index reader takes from the mirror now (and its result).
  std::vector<std::string> ReadSamples(dataset::IndexCursor& cursor,
                                       dataset::ReadResult* result = nullptr) {
    std::vector<std::string> got;
    auto r = dataset::ReadNewSamples(mirror_, dataset::IndexFormat::kTxt, cursor, false, 0,
                                     [&](std::string_view line) {
                                       got.emplace_back(line);
                                       return Status::Ok();
                                     });
    EXPECT_TRUE(r.ok()) << r.message();
    if (r.ok() && result != nullptr) *result = *r;
    return got;
  }

  static inline MotoServer* server_ = nullptr;
  static inline std::string problem_;
  static inline bool skip_ = false;
  static inline int buckets_ = 0;
  std::string dir_, mirror_, bucket_;
  S3Url url_;
};

TEST_F(IndexMirrorTest, FirstSyncFetchesEverything) {
  const std::string v1 = Lines(0, 1000);
  Put(v1);
  MirrorSync s = Sync();
  EXPECT_TRUE(s.changed);
  EXPECT_FALSE(s.rewritten);
  EXPECT_FALSE(s.missing);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v1.size()));
  EXPECT_EQ(s.requests, 2);  // HEAD + GET
  EXPECT_TRUE(MirrorIs(v1));
  const std::string state = ReadFile(mirror_ + ".state");
  EXPECT_NE(state.find("\nsize " + std::to_string(v1.size()) + "\n"), std::string::npos) << state;
  EXPECT_FALSE(Exists(mirror_ + ".tmp"));
}

TEST_F(IndexMirrorTest, UnchangedIsOneHeadAndNoGet) {
  Put(Lines(0, 1000));
  Sync();
  const uint64_t ino = Inode(mirror_);
  FaultProxy proxy(server_->port());
  Client c(server_->credentials_via(proxy.endpoint()), Fast());
  for (int i = 0; i < 3; ++i) {
    MirrorSync s = Sync(c);
    EXPECT_FALSE(s.changed);
    EXPECT_FALSE(s.rewritten);
    EXPECT_EQ(s.bytes_fetched, 0);
    EXPECT_EQ(s.requests, 1);
  }
  // What actually crossed the wire: three HEADs, no GET; no body bytes.
  EXPECT_EQ(proxy.request_count(), 3) << proxy.requests();
  EXPECT_EQ(proxy.connections(), 3);
  const std::string requests = proxy.requests();
  EXPECT_EQ(requests.rfind("HEAD /" + bucket_ + "/datasets/train/index.txt HTTP/1.1\r\n", 0), 0u);
  EXPECT_EQ(requests.find("GET "), std::string::npos) << requests;
  EXPECT_LT(proxy.bytes_to_client(), 3 * 1024) << "only response heads";
  EXPECT_EQ(Inode(mirror_), ino);
}

TEST_F(IndexMirrorTest, AppendFetchesOnlyTheNewBytes) {
  const std::string v1 = Lines(0, 1000);
  Put(v1);
  Sync();
  const uint64_t ino = Inode(mirror_);
  const std::string v2 = v1 + Lines(1000, 250);
  Put(v2);
  FaultProxy proxy(server_->port());
  Client c(server_->credentials_via(proxy.endpoint()), Fast());
  MirrorSync s = Sync(c);
  EXPECT_TRUE(s.changed);
  EXPECT_FALSE(s.rewritten);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size() - v1.size()));
  EXPECT_EQ(s.bytes_checked, kBoundaryCheck);
  EXPECT_EQ(s.requests, 3);  // HEAD, the boundary check, the new bytes
  EXPECT_TRUE(MirrorIs(v2));
  EXPECT_EQ(Inode(mirror_), ino) << "an append keeps the inode";
  const std::string requests = proxy.requests();
  EXPECT_NE(requests.find("range: bytes=" + std::to_string(v1.size() - kBoundaryCheck) + "-" +
                          std::to_string(v1.size() - 1) + "\r\n"),
            std::string::npos)
      << requests;
  EXPECT_NE(requests.find("range: bytes=" + std::to_string(v1.size()) + "-" +
                          std::to_string(v2.size() - 1) + "\r\n"),
            std::string::npos)
      << requests;
  EXPECT_NE(requests.find("if-match: \""), std::string::npos) << requests;
  EXPECT_LT(proxy.bytes_to_client(),
            static_cast<int64_t>(v2.size() - v1.size()) + kBoundaryCheck + 4096);
}

TEST_F(IndexMirrorTest, ShrinkRewritesWithANewInode) {
  Put(Lines(0, 1000));
  Sync();
  const uint64_t ino = Inode(mirror_);
  const std::string v2 = Lines(0, 10, "other");
  Put(v2);
  MirrorSync s = Sync();
  EXPECT_TRUE(s.changed);
  EXPECT_TRUE(s.rewritten);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size()));
  EXPECT_EQ(s.requests, 2);
  EXPECT_TRUE(MirrorIs(v2));
  EXPECT_NE(Inode(mirror_), ino);
  EXPECT_FALSE(Exists(mirror_ + ".tmp"));
  EXPECT_FALSE(Sync().changed);
}

TEST_F(IndexMirrorTest, SameSizeDifferentContentRewrites) {
  const std::string v1 = Lines(0, 100, "aaa");
  const std::string v2 = Lines(0, 100, "bbb");
  ASSERT_EQ(v1.size(), v2.size());
  Put(v1);
  Sync();
  const uint64_t ino = Inode(mirror_);
  Put(v2);
  MirrorSync s = Sync();
  EXPECT_TRUE(s.changed);
  EXPECT_TRUE(s.rewritten);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size()));
  EXPECT_TRUE(MirrorIs(v2));
  EXPECT_NE(Inode(mirror_), ino);
}

TEST_F(IndexMirrorTest, EmptyObjectThenGrowth) {
  Put("");
  MirrorSync s = Sync();
  EXPECT_TRUE(s.changed);
  EXPECT_EQ(s.requests, 1);  // nothing to GET
  EXPECT_TRUE(Exists(mirror_));
  EXPECT_TRUE(MirrorIs(""));
  EXPECT_FALSE(Sync().changed);
  const std::string v2 = Lines(0, 5);
  Put(v2);
  s = Sync();
  EXPECT_FALSE(s.rewritten);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size()));
  EXPECT_TRUE(MirrorIs(v2));
}

TEST_F(IndexMirrorTest, MissingObjectLeavesTheMirrorAlone) {
  MirrorSync s = Sync();
  EXPECT_TRUE(s.missing);
  EXPECT_FALSE(s.changed);
  EXPECT_EQ(s.requests, 1);
  EXPECT_FALSE(Exists(mirror_));
  EXPECT_FALSE(Exists(mirror_ + ".state"));

  const std::string v1 = Lines(0, 50);
  Put(v1);
  Sync();
  const std::string state = ReadFile(mirror_ + ".state");
  Client c = Direct();
  ASSERT_TRUE(c.Delete(url_).ok());
  s = Sync();
  EXPECT_TRUE(s.missing);
  EXPECT_FALSE(s.changed);
  EXPECT_EQ(s.requests, 1);
  EXPECT_TRUE(MirrorIs(v1));
  EXPECT_EQ(ReadFile(mirror_ + ".state"), state);

  // A missing bucket is missing too (HEAD has no body to tell them apart).
  auto r = SyncIndexMirror(c, S3Url{"no-such-bucket", "index.txt"}, dir_ + "/other.txt");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->missing);
}

TEST_F(IndexMirrorTest, UncommittedBytesOfACrashAreCutOff) {
  const std::string v1 = Lines(0, 500);
  Put(v1);
  Sync();
  const uint64_t ino = Inode(mirror_);
  // A crash mid-append: bytes written to the mirror, the sidecar not updated.
  WriteFile(mirror_, "data/half_written_line", /*append=*/true);
  MirrorSync s = Sync();
  EXPECT_FALSE(s.changed);
  EXPECT_EQ(s.requests, 1);
  EXPECT_TRUE(MirrorIs(v1));
  EXPECT_EQ(Inode(mirror_), ino);

  // The same, and the object grew meanwhile: cut off, then the real new bytes appended.
  WriteFile(mirror_, "garbage that was never in the object\n", /*append=*/true);
  const std::string v2 = v1 + Lines(500, 20);
  Put(v2);
  s = Sync();
  EXPECT_TRUE(s.changed);
  EXPECT_FALSE(s.rewritten);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size() - v1.size()));
  EXPECT_TRUE(MirrorIs(v2));
  EXPECT_EQ(Inode(mirror_), ino);
}

TEST_F(IndexMirrorTest, NoSidecarMeansAnEmptyMirror) {
  WriteFile(mirror_, "left over from who knows what\n");
  const std::string v1 = Lines(0, 30);
  Put(v1);
  MirrorSync s = Sync();
  EXPECT_TRUE(s.changed);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v1.size()));
  EXPECT_TRUE(MirrorIs(v1));
}

TEST_F(IndexMirrorTest, CrashAfterRenameBeforeSidecarConverges) {
  const std::string v1 = Lines(0, 100);
  Put(v1);
  Sync();
  const std::string old_state = ReadFile(mirror_ + ".state");
  for (const std::string& v2 : {Lines(0, 300, "new"), Lines(0, 40, "new"), Lines(0, 100, "new")}) {
    SCOPED_TRACE(v2.size());
    Put(v2);
    // A rewrite that crashed after renaming the new mirror in, before the sidecar was replaced.
    WriteFile(mirror_ + ".tmp", v2);
    ASSERT_EQ(::rename((mirror_ + ".tmp").c_str(), mirror_.c_str()), 0);
    ASSERT_EQ(ReadFile(mirror_ + ".state"), old_state);
    MirrorSync s = Sync();
    EXPECT_TRUE(s.changed);
    EXPECT_TRUE(MirrorIs(v2));
    EXPECT_FALSE(Sync().changed);
    // Back to v1, committed.
    Put(v1);
    WriteFile(mirror_ + ".tmp", v1);
    ASSERT_EQ(::rename((mirror_ + ".tmp").c_str(), mirror_.c_str()), 0);
    WriteFile(mirror_ + ".state", old_state);
    ASSERT_FALSE(Sync().changed);
  }
}

TEST_F(IndexMirrorTest, BadOrForeignSidecarRewrites) {
  const std::string v1 = Lines(0, 100);
  Put(v1);
  Sync();
  for (const std::string& bad :
       {std::string("garbage"), std::string(""), ReadFile(mirror_ + ".state").replace(0, 0, "x"),
        // A valid sidecar of another object.
        std::string("sedna-s3-index-mirror 1\nurl s3://other/index.txt\nsize 3\netag abc\n")}) {
    WriteFile(mirror_ + ".state", bad);
    const uint64_t ino = Inode(mirror_);
    MirrorSync s = Sync();
    EXPECT_TRUE(s.rewritten);
    EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v1.size()));
    EXPECT_TRUE(MirrorIs(v1));
    EXPECT_NE(Inode(mirror_), ino);
    EXPECT_FALSE(Sync().changed);
  }
}

TEST_F(IndexMirrorTest, LostMirrorIsRefetched) {
  const std::string v1 = Lines(0, 100);
  Put(v1);
  Sync();
  ASSERT_EQ(::unlink(mirror_.c_str()), 0);
  MirrorSync s = Sync();
  EXPECT_TRUE(s.rewritten);
  EXPECT_TRUE(MirrorIs(v1));
  ASSERT_EQ(::truncate(mirror_.c_str(), 10), 0);
  s = Sync();
  EXPECT_TRUE(s.rewritten);
  EXPECT_TRUE(MirrorIs(v1));
}

TEST_F(IndexMirrorTest, WrongSecretIsAClearErrorAndTouchesNothing) {
  const std::string v1 = Lines(0, 100);
  Put(v1);
  Sync();
  Put(v1 + Lines(100, 10));
  const std::string state = ReadFile(mirror_ + ".state");
  Credentials bad = server_->credentials();
  bad.secret_key = "wrong-secret-value-0123456789";
  Client c(bad, Fast());
  auto r = SyncIndexMirror(c, url_, mirror_);
  ASSERT_FALSE(r.ok());
  // HEAD answers have no body (moto's reason phrase is "FORBIDDEN"); the GET tells the S3 code.
  EXPECT_EQ(r.message().rfind("HEAD s3://" + bucket_ + "/datasets/train/index.txt: 403 ", 0), 0u)
      << r.message();
  EXPECT_NE(r.message().find("(GET: 403 SignatureDoesNotMatch: The request signature we "
                             "calculated does not match the signature you provided."),
            std::string::npos)
      << r.message();
  EXPECT_EQ(r.message().find(bad.secret_key), std::string::npos);
  EXPECT_EQ(r.message().find(server_->secret_key()), std::string::npos);
  // The HEAD's 403 decided the explanation, and is what the caller gets as a value.
  EXPECT_EQ(r.status().http_status(), 403);
  EXPECT_EQ(r.code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE(MirrorIs(v1));
  EXPECT_EQ(ReadFile(mirror_ + ".state"), state);
}

TEST_F(IndexMirrorTest, ObjectReplacedBetweenHeadAndGetIs412AndKeepsTheCommittedState) {
  const std::string v1 = Lines(0, 100);
  Put(v1);
  Sync();
  const std::string state = ReadFile(mirror_ + ".state");
  const std::string v2 = v1 + Lines(100, 100);
  const std::string v3 = Lines(0, 40, "replaced");  // shorter: a rewrite
  Put(v2);
  // Connection 0 is the HEAD (sees v2); when the GET's connection arrives the object becomes v3.
  FaultProxy proxy(server_->port(), [&](int i) {
    if (i == 1) {
      Client direct = Direct();
      EXPECT_TRUE(direct.PutBytes(url_, v3).ok());
    }
    return FaultProxy::Plan{};
  });
  Client c(server_->credentials_via(proxy.endpoint()), Fast());
  auto r = SyncIndexMirror(c, url_, mirror_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message().rfind("GET s3://" + bucket_ +
                                  "/datasets/train/index.txt: the object changed during the sync "
                                  "(412 PreconditionFailed: ",
                              0),
            0u)
      << r.message();
  EXPECT_NE(r.message().find("the mirror keeps its last committed state"), std::string::npos);
  EXPECT_EQ(r.status().http_status(), 412);
  EXPECT_EQ(r.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(proxy.connections(), 2) << "412 is not retried";
  EXPECT_TRUE(MirrorIs(v1));
  EXPECT_EQ(ReadFile(mirror_ + ".state"), state);
  // The next poll picks v3 up.
  MirrorSync s = Sync();
  EXPECT_TRUE(s.rewritten);
  EXPECT_TRUE(MirrorIs(v3));
}

TEST_F(IndexMirrorTest, DroppedConnectionMidGetIsResumed) {
  const std::string v1 = Lines(0, 1000);
  Put(v1);
  Sync();
  const std::string v2 = v1 + Lines(1000, 100000);  // ~3.4 MB more
  Put(v2);
  FaultProxy proxy(server_->port());
  std::atomic<bool> dropped{false};
  proxy.on_relay = [&](int64_t total) {
    if (!dropped && total > (1 << 20)) {  // in the middle of the GET's body
      dropped = true;
      // Refuse first: dropped first, a retry could reach the listener before it closes.
      proxy.SetModeFor(FaultProxy::Mode::kRefuse, 150ms);
      proxy.DropConnections();
    }
  };
  ClientOptions o = Fast();
  o.retries = 5;
  o.backoff = 50ms;  // attempts at +0, +50, +150, +350 ms: refused, refused, (maybe) ok…
  Client c(server_->credentials_via(proxy.endpoint()), o);
  auto r = SyncIndexMirror(c, url_, mirror_);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(dropped);
  EXPECT_TRUE(r->changed);
  EXPECT_FALSE(r->rewritten);
  EXPECT_EQ(r->bytes_fetched, static_cast<int64_t>(v2.size() - v1.size()));
  EXPECT_GE(r->requests, 4);  // HEAD, the cut GET, >= 1 refused attempt, the resumed GET
  EXPECT_TRUE(MirrorIs(v2));
  const std::string requests = proxy.requests();
  const size_t last_range = requests.rfind("range: bytes=");
  ASSERT_NE(last_range, std::string::npos);
  EXPECT_NE(requests.substr(last_range, 13 + std::to_string(v1.size()).size() + 1),
            "range: bytes=" + std::to_string(v1.size()) + "-")
      << "resumed past the bytes already written";
}

TEST_F(IndexMirrorTest, ConnectionLostForGoodIsAClearErrorAndNothingUncommittedStays) {
  const std::string v1 = Lines(0, 1000);
  Put(v1);
  Sync();
  const std::string state = ReadFile(mirror_ + ".state");
  const std::string v2 = v1 + Lines(1000, 100000);
  Put(v2);
  FaultProxy proxy(server_->port());
  std::atomic<bool> dropped{false};
  proxy.on_relay = [&](int64_t total) {
    if (!dropped && total > (1 << 20)) {
      dropped = true;
      // Refuse first: dropped first, a retry could reach the listener before it closes and
      // resume the GET (seen once under ctest -j2).
      proxy.SetMode(FaultProxy::Mode::kRefuse);
      proxy.DropConnections();
    }
  };
  Client c(server_->credentials_via(proxy.endpoint()), Fast());
  auto r = SyncIndexMirror(c, url_, mirror_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message().rfind("GET s3://" + bucket_ + "/datasets/train/index.txt: connection to " +
                                  "http://" + proxy.endpoint() + " failed: ",
                              0),
            0u)
      << r.message();
  EXPECT_NE(r.message().find("(3 attempts)"), std::string::npos) << r.message();
  EXPECT_EQ(r.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(r.status().http_status(), 0);
  EXPECT_TRUE(MirrorIs(v1)) << "the partly fetched bytes are truncated away";
  EXPECT_EQ(ReadFile(mirror_ + ".state"), state);

  proxy.SetMode(FaultProxy::Mode::kNormal);
  MirrorSync s = Sync(c);
  EXPECT_TRUE(s.changed);
  EXPECT_TRUE(MirrorIs(v2));
}

TEST_F(IndexMirrorTest, DiskErrorKeepsTheCommittedState) {
  const std::string v1 = Lines(0, 100);
  Put(v1);
  Sync();
  const std::string state = ReadFile(mirror_ + ".state");
  const std::string v2 = v1 + Lines(100, 5000);  // ~210 KB: several chunks
  Put(v2);
  int writes = 0;
  fs::SetWriteFaultForTest([&](const std::string& path) {
    return path == mirror_ && ++writes > 1 ? ENOSPC : 0;  // the first chunk lands, then full
  });
  Client c = Direct();
  auto r = SyncIndexMirror(c, url_, mirror_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "mirror of s3://" + bucket_ + "/datasets/train/index.txt at " + mirror_ +
                             ": writing " + mirror_ + ": No space left on device");
  EXPECT_EQ(writes, 2);
  fs::SetWriteFaultForTest(nullptr);
  EXPECT_TRUE(MirrorIs(v1));
  EXPECT_EQ(ReadFile(mirror_ + ".state"), state);
  EXPECT_TRUE(Sync().changed);
  EXPECT_TRUE(MirrorIs(v2));
}

TEST_F(IndexMirrorTest, TwentyMegabyteObject) {
  const std::string v1 = Lines(0, 500000);  // 21.5 MB
  ASSERT_GT(v1.size(), 20u << 20);
  Put(v1);
  Client c = Direct();
  // Peak RSS from here (writing "5" to clear_refs resets VmHWM to the current RSS): a rough
  // check that the object is not held in memory; timing is not checked.
  std::ofstream("/proc/self/clear_refs") << "5";
  const int64_t rss_before = ProcStatusKb("VmRSS");
  MirrorSync s = Sync(c);
  const int64_t peak = ProcStatusKb("VmHWM");
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v1.size()));
  EXPECT_EQ(s.requests, 2);
  EXPECT_LT(peak - rss_before, 8 * 1024) << "peak " << peak << " kB, before " << rss_before;
  EXPECT_TRUE(MirrorIs(v1));
  const std::string v2 = v1 + Lines(500000, 1000);
  Put(v2);
  s = Sync();
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size() - v1.size()));
  EXPECT_TRUE(MirrorIs(v2));
}

// The point of the mirror: the host-path index reader works on it unchanged.
TEST_F(IndexMirrorTest, IndexReaderSeesAppendsAndRewrites) {
  dataset::IndexCursor cursor;
  auto read = [&](dataset::ReadResult* result) { return ReadSamples(cursor, result); };
  dataset::ReadResult rr;
  Put("a.png 1\nb.png 2\n");
  Sync();
  EXPECT_EQ(read(&rr), (std::vector<std::string>{"a.png 1", "b.png 2"}));
  Put("a.png 1\nb.png 2\nc.png 3\n");
  Sync();
  EXPECT_EQ(read(&rr), std::vector<std::string>{"c.png 3"});
  EXPECT_FALSE(rr.rewritten);
  Sync();  // unchanged
  EXPECT_TRUE(read(&rr).empty());
  // Replaced by a shorter file: the new inode says rewrite.
  Put("x.png 1\n");
  ASSERT_TRUE(Sync().rewritten);
  // It does not start with what was consumed: a new file, all of whose samples are new.
  EXPECT_EQ(read(&rr), std::vector<std::string>{"x.png 1"});
  EXPECT_EQ(rr.rewrite, dataset::Rewrite::kNewFile);
  Put("x.png 1\ny.png 2\nz.png 3\nw.png 4\n");
  EXPECT_FALSE(Sync().rewritten);
  EXPECT_EQ(read(&rr), (std::vector<std::string>{"y.png 2", "z.png 3", "w.png 4"}));
  EXPECT_FALSE(rr.rewritten);
}

// A longer object whose bytes at the end of what was mirrored changed is a rewrite, not an
// append (design-notes §D4: a new file whose samples are all new, never a piece of a line).
TEST_F(IndexMirrorTest, LongerObjectWithAChangedMirroredTailIsARewrite) {
  dataset::IndexCursor cursor;
  auto read = [&] { return ReadSamples(cursor); };
  Put("aaaa.png 1\nbbbb.png 2\n");
  Sync();
  EXPECT_EQ(read(), (std::vector<std::string>{"aaaa.png 1", "bbbb.png 2"}));
  const uint64_t ino = Inode(mirror_);
  const std::string v2 = "x.png 1\ny.png 2\nz.png 3\nw.png 4\n";  // longer, other lines
  Put(v2);
  MirrorSync s = Sync();
  EXPECT_TRUE(s.rewritten);
  EXPECT_EQ(s.bytes_checked, 22);
  EXPECT_EQ(s.bytes_fetched, static_cast<int64_t>(v2.size()));
  EXPECT_TRUE(MirrorIs(v2));
  EXPECT_NE(Inode(mirror_), ino);
  // Read as a new file: it does not start with the 22 bytes consumed, so all its samples are new,
  // whole lines (taken as an append it would have been "png 3" and "w.png 4": bytes from 22).
  EXPECT_EQ(read(), (std::vector<std::string>{"x.png 1", "y.png 2", "z.png 3", "w.png 4"}));
}

// Task figure: the cost of polling an unchanged 1e6-line (~44 MB) index.
TEST_F(IndexMirrorTest, UnchangedMillionLineIndexCostsOneHead) {
  const std::string v1 = Lines(0, 1000000);
  Put(v1);
  auto t0 = std::chrono::steady_clock::now();
  MirrorSync first = Sync();
  const auto first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(first.bytes_fetched, static_cast<int64_t>(v1.size()));

  FaultProxy proxy(server_->port());
  Client c(server_->credentials_via(proxy.endpoint()), Fast());
  constexpr int kPolls = 10;
  int64_t bytes = 0;
  int requests = 0;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kPolls; ++i) {
    MirrorSync s = Sync(c);
    EXPECT_FALSE(s.changed);
    bytes += s.bytes_fetched;
    requests += s.requests;
  }
  const auto poll_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      kPolls;
  EXPECT_EQ(bytes, 0);
  EXPECT_EQ(requests, kPolls);
  EXPECT_EQ(proxy.request_count(), kPolls);
  std::cout << "[ figures  ] index " << v1.size() << " bytes, 1000000 lines; first sync "
            << first.bytes_fetched << " bytes, " << first.requests << " requests, " << first_ms
            << " ms; unchanged sync (mean of " << kPolls
            << "): " << static_cast<double>(bytes) / kPolls << " object bytes, "
            << static_cast<double>(requests) / kPolls << " requests ("
            << proxy.request_count() / kPolls << " on the wire: HEAD), "
            << proxy.bytes_to_client() / kPolls << " response bytes on the wire, "
            << proxy.requests().size() / kPolls << " request bytes, " << poll_ms << " ms\n";
  RecordProperty("unchanged_sync_requests", std::to_string(requests / kPolls));
  RecordProperty("unchanged_sync_bytes_fetched", std::to_string(bytes / kPolls));
}

}  // namespace
}  // namespace sedna::s3
