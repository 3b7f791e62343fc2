// Sample files and model copies on the disk and on a real S3 server (moto_server with signature
// checking on, from tests/support).
#include "adapters/storage/storage.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "moto_server.h"

namespace sedna::storage {
namespace {

using namespace std::chrono_literals;
using sedna::testing::MotoServer;
namespace stdfs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  stdfs::create_directories(stdfs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

class StorageTest : public ::testing::Test {
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
    std::string tmpl = (stdfs::temp_directory_path() / "storage_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    ctx_.rootfs = dir_ + "/rootfs";
    ctx_.staging_dir = dir_ + "/staging";
    ctx_.s3_options.timeout = 30s;
    ctx_.s3_options.retries = 1;
    ctx_.s3_options.backoff = 10ms;
    // A spool with three samples; the middle one has no label.
    spool_ = dir_ + "/train.spool";
    WriteFile(spool_, "skip this 0\nimg/a.jpg 1 2\nimg/b.jpg\nimg/c d.jpg x\n");
  }
  void TearDown() override {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  // S3 tests: moto must be there; each test gets its own bucket.
  void UseS3() {
    if (skip_) GTEST_SKIP() << problem_;
    ASSERT_TRUE(problem_.empty()) << problem_;
    bucket_ = "storage-" + std::to_string(++buckets_);
    Status s = server_->CreateBucket(bucket_);
    ASSERT_TRUE(s.ok()) << s.message();
    ctx_.credentials = server_->credentials();
  }

  std::string Get(const std::string& key) {
    s3::Client c(server_->credentials(), ctx_.s3_options);
    std::string out;
    Status s = c.Get({bucket_, key}, 0, -1, [&](std::string_view chunk) {
      out.append(chunk);
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.message();
    return out;
  }

  SampleFile Samples(const std::string& url, const std::string& index_url = "") {
    SampleFile f;
    f.url = url;
    f.ranges = {{spool_, 12, 50}};  // the last three samples
    f.index_url = index_url;
    f.index_prefix = "s3://data/helmet/train/";
    return f;
  }

  bool StagingEmpty() const {
    return !stdfs::exists(ctx_.staging_dir) || stdfs::is_empty(ctx_.staging_dir);
  }

  static inline MotoServer* server_ = nullptr;
  static inline std::string problem_;
  static inline bool skip_ = false;
  static inline int buckets_ = 0;
  std::string dir_, spool_, bucket_;
  Context ctx_;
};

const char kSamples[] = "img/a.jpg 1 2\nimg/b.jpg\nimg/c d.jpg x\n";
const char kIndex[] = "s3://data/helmet/train/\nimg/a.jpg\nimg/b.jpg\nimg/c\n";

TEST_F(StorageTest, UrlPrefixIsTheDirectoryWithASlash) {
  EXPECT_EQ(UrlPrefix("s3://kubeedge/data/helmet_detection/train_data/train_data.txt"),
            "s3://kubeedge/data/helmet_detection/train_data/");
  EXPECT_EQ(UrlPrefix("s3://b/index.txt"), "s3://b/");
}

TEST_F(StorageTest, HostSampleFileAndIndex) {
  SampleFile f = Samples("/out/data/train/1/data.txt", "/out/data/train/1/dataIndex.txt");
  f.prefix = "header\n";
  Status s = WriteSampleFile(ctx_, f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/1/data.txt"),
            "header\n" + std::string(kSamples));
  // The index never carries the csv header: its first line is the dataset's URL prefix.
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/1/dataIndex.txt"), kIndex);
  EXPECT_TRUE(StagingEmpty());
}

TEST_F(StorageTest, HostSampleFileWithoutIndex) {
  ASSERT_TRUE(WriteSampleFile(ctx_, Samples("/out/d/data.txt")).ok());
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/d/data.txt"), kSamples);
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/out/d/dataIndex.txt"));
}

TEST_F(StorageTest, HostRangePastTheSpoolEndIsAnErrorAndNothingIsVisible) {
  SampleFile f = Samples("/out/e/data.txt", "/out/e/dataIndex.txt");
  f.ranges = {{spool_, 12, 4800}};
  Status s = WriteSampleFile(ctx_, f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(spool_), std::string::npos) << s.message();
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/out/e/data.txt"));
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/out/e/dataIndex.txt"));
  EXPECT_TRUE(StagingEmpty());
}

TEST_F(StorageTest, HostModelCopy) {
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", "model-bytes");
  ASSERT_TRUE(CopyModel(ctx_, "/out/train/1/model.pb", "/models/deploy/model.pb").ok());
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/model.pb"), "model-bytes");
}

TEST_F(StorageTest, S3WithoutCredentialsIsAClearError) {
  Status s = WriteSampleFile(ctx_, Samples("s3://b/out/data/train/1/data.txt"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("s3://b/out/data/train/1/data.txt is on S3 but"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("sedna.io/credential"), std::string::npos) << s.message();
  s = CopyModel(ctx_, "/m.pb", "s3://b/deploy/m.pb");
  EXPECT_NE(s.message().find("s3://b/deploy/m.pb is on S3 but"), std::string::npos) << s.message();
}

// §7.4 with an S3 outputDir (B20: the URL keeps its "s3://", the index name is set).
TEST_F(StorageTest, S3SampleFileAndIndexAreUploaded) {
  UseS3();
  const std::string out = "s3://" + bucket_ + "/output/data/train/2/";
  Status s = WriteSampleFile(ctx_, Samples(out + "data.txt", out + "dataIndex.txt"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Get("output/data/train/2/data.txt"), kSamples);
  EXPECT_EQ(Get("output/data/train/2/dataIndex.txt"), kIndex);
  EXPECT_TRUE(StagingEmpty());
}

TEST_F(StorageTest, S3ModelCopiesEveryDirection) {
  UseS3();
  const std::string b = "s3://" + bucket_;
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", std::string(300000, 'm'));
  // host -> S3 (upload), S3 -> S3 (server-side copy), S3 -> host (download).
  Status s = CopyModel(ctx_, "/out/train/1/model.pb", b + "/out/train/1/model.pb");
  ASSERT_TRUE(s.ok()) << s.message();
  s = CopyModel(ctx_, b + "/out/train/1/model.pb", b + "/deploy/model.pb");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Get("deploy/model.pb"), std::string(300000, 'm'));
  s = CopyModel(ctx_, b + "/deploy/model.pb", "/models/deploy/model.pb");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/model.pb"), std::string(300000, 'm'));
  EXPECT_TRUE(StagingEmpty());
}

TEST_F(StorageTest, S3ErrorsNameTheObjectAndTheS3CodeNeverTheSecret) {
  UseS3();
  // A missing source object.
  Status s = CopyModel(ctx_, "s3://" + bucket_ + "/nope.pb", "/models/m.pb");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("s3://" + bucket_ + "/nope.pb"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("NoSuchKey"), std::string::npos) << s.message();
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/models/m.pb"));
  // A missing bucket.
  s = WriteSampleFile(ctx_, Samples("s3://no-such-bucket-x/out/data.txt"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NoSuchBucket"), std::string::npos) << s.message();
  // A wrong secret.
  ctx_.credentials->secret_key = "wrong-secret-value";
  s = WriteSampleFile(ctx_, Samples("s3://" + bucket_ + "/out/data.txt"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("SignatureDoesNotMatch"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("wrong-secret-value"), std::string::npos) << s.message();
  EXPECT_TRUE(StagingEmpty());
}

}  // namespace
}  // namespace sedna::storage
