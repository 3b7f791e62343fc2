// Sample files and model copies on the disk and on a real S3 server (moto_server with signature
// checking on, from tests/support).
#include "adapters/storage/storage.h"
#include "adapters/storage/ledger.h"
#include "adapters/storage/model_versions.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

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
    ctx_.job_root = "/out";
    stdfs::create_directories(ctx_.rootfs);  // the host's "/", there before the LC starts
    ctx_.s3_options.timeout = 30s;
    ctx_.s3_options.retries = 1;
    ctx_.s3_options.backoff = 10ms;
    // A spool with three samples; the middle one has no label.
    spool_ = dir_ + "/train.spool";
    WriteFile(spool_, "skip this 0\nimg/a.jpg 1 2\nimg/b.jpg\nimg/c d.jpg x\n");
  }
  void TearDown() override {
    fs::SetResolver(fs::Resolver::kAuto);
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

// With spare files for the job's root, the two files are the spares (no inode made while they
// are written); FillSpareFiles makes them for a host root only.
TEST_F(StorageTest, HostSampleFilesAreWrittenIntoTheJobsSpares) {
  fs::SpareFiles spares;
  ctx_.spares = &spares;
  FillSpareFiles(ctx_);  // no root yet, and not wanted: none
  EXPECT_EQ(spares.total(), 0u);
  stdfs::create_directories(ctx_.rootfs + "/out");
  spares.Want("/out");
  FillSpareFiles(ctx_);
  ASSERT_EQ(spares.total(), 3u);  // two files, a directory
  ino_t spare_dir = 0;
  for (const auto& e : stdfs::directory_iterator(ctx_.rootfs + "/out")) {
    if (e.path().filename().string().rfind(".sedna-spare-", 0) == 0) {
      struct stat st {};
      ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
      spare_dir = st.st_ino;
    }
  }
  ASSERT_NE(spare_dir, 0u);
  Status s = WriteSampleFile(
      ctx_, Samples("/out/data/train/1/data.txt", "/out/data/train/1/dataIndex.txt"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spares.total(), 0u);  // all used
  struct stat round_dir {};
  ASSERT_EQ(::stat((ctx_.rootfs + "/out/data/train/1").c_str(), &round_dir), 0);
  EXPECT_EQ(round_dir.st_ino, spare_dir);  // the round's directory is the spare, moved
  EXPECT_EQ(
      std::distance(stdfs::directory_iterator(ctx_.rootfs + "/out"), stdfs::directory_iterator()),
      1);  // data/ only: no spare directory left
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/1/data.txt"), kSamples);
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/1/dataIndex.txt"), kIndex);
  // Without spares left, the next round's files are written as before.
  s = WriteSampleFile(ctx_, Samples("/out/data/train/2/data.txt"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/2/data.txt"), kSamples);
  EXPECT_EQ(std::distance(stdfs::directory_iterator(ctx_.rootfs + "/out/data/train/1"),
                          stdfs::directory_iterator()),
            2);
  // An S3 root has none.
  ctx_.job_root = "s3://b/out";
  spares.Want("s3://b/out");
  FillSpareFiles(ctx_);
  EXPECT_EQ(spares.total(), 0u);
}

// PutSampleFile puts the files in place and leaves their syncs to its caller: each file's, its
// directory's, and the parent's of the directory made for the round; Finish closes the files and
// reports a failed sync naming what it was for.
TEST_F(StorageTest, PutSampleFileLeavesTheSyncsOfFilesAndNewDirectoriesToItsCaller) {
  stdfs::create_directories(ctx_.rootfs + "/out/data/train");
  auto put =
      PutSampleFile(ctx_, Samples("/out/data/train/1/data.txt", "/out/data/train/1/dataIndex.txt"));
  ASSERT_TRUE(put.ok()) << put.message();
  // In place before any sync: a crash now leaves them whole.
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/1/data.txt"), kSamples);
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/data/train/1/dataIndex.txt"), kIndex);
  std::vector<fs::SyncItem> syncs = put->Syncs();
  // dataIndex.txt, its directory, the directory's parent (train/1 was made); data.txt, its
  // directory (made already).
  ASSERT_EQ(syncs.size(), 5u);
  auto ino_of_fd = [](int fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return st.st_ino;
  };
  auto ino_of = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_ino;
  };
  const std::string round = ctx_.rootfs + "/out/data/train/1";
  EXPECT_EQ(ino_of_fd(syncs[0].fd), ino_of(round + "/dataIndex.txt"));
  EXPECT_EQ(ino_of_fd(syncs[1].fd), ino_of(round));
  EXPECT_EQ(ino_of_fd(syncs[2].fd), ino_of(ctx_.rootfs + "/out/data/train"));
  EXPECT_EQ(ino_of_fd(syncs[3].fd), ino_of(round + "/data.txt"));
  EXPECT_EQ(ino_of_fd(syncs[4].fd), ino_of(round));
  for (const fs::SyncItem& item : syncs) EXPECT_FALSE(item.data_only);
  fs::SyncAll(syncs);
  Status s = put->Finish(syncs);
  EXPECT_TRUE(s.ok()) << s.message();

  // A failed sync: the file's names the file, the new directory's parent names that directory.
  put = PutSampleFile(ctx_, Samples("/out/data/train/2/data.txt"));
  ASSERT_TRUE(put.ok()) << put.message();
  syncs = put->Syncs();
  ASSERT_EQ(syncs.size(), 3u);
  fs::SyncAll(syncs);
  syncs[2].error = EIO;
  s = put->Finish(syncs);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.errno_value(), EIO);
  EXPECT_NE(s.message().find("syncing directory " + ctx_.rootfs + "/out/data/train"),
            std::string::npos)
      << s.message();
  put = PutSampleFile(ctx_, Samples("/out/data/train/2/data.txt"));
  ASSERT_TRUE(put.ok()) << put.message();
  syncs = put->Syncs();
  ASSERT_EQ(syncs.size(), 2u);  // train/2 is there now
  syncs[0].error = EIO;
  s = put->Finish(syncs);
  EXPECT_NE(s.message().find("syncing " + ctx_.rootfs + "/out/data/train/2/data.txt"),
            std::string::npos)
      << s.message();
  // Fewer results than syncs: an error, not a success.
  put = PutSampleFile(ctx_, Samples("/out/data/train/2/data.txt"));
  ASSERT_TRUE(put.ok()) << put.message();
  EXPECT_FALSE(put->Finish({}).ok());
}

// dataIndex.txt per generation (docs/design-notes.md, "Both GM generations"): the 2021 LC lists
// the first token of each sample, the v0.5+ LC every token with a non-empty Go path.Ext.
TEST_F(StorageTest, IndexTokensPerGeneration) {
  struct Row {
    const char* name;
    std::string samples;
    IndexTokens tokens;
    std::string want;  // after the prefix line
  };
  const std::string g1 = "img.png label.png\n0.5,0.3 x\nimg\n";
  const Row rows[] = {
      {"G1FirstToken", g1, IndexTokens::kFirst, "img.png\n0.5,0.3\nimg\n"},
      {"G2ImageAndLabel", "img.png label.png\n", IndexTokens::kEveryWithExtension,
       "img.png\nlabel.png\n"},
      {"G2NumberTextHasAnExtension", "0.5,0.3 x\n", IndexTokens::kEveryWithExtension, "0.5,0.3\n"},
      {"G2NoExtensionDropped", "img\nd.x/img 1\n", IndexTokens::kEveryWithExtension, ""},
      {"G2DotAfterTheLastSlash", "a.b/c.jpg ./x .hidden end.\n", IndexTokens::kEveryWithExtension,
       "a.b/c.jpg\n.hidden\nend.\n"},
      {"G2DoubleSpaceAndUnterminatedLast", "a.jpg  b.txt\nc.png", IndexTokens::kEveryWithExtension,
       "a.jpg\nb.txt\nc.png\n"},
      {"G2Mixed", g1, IndexTokens::kEveryWithExtension, "img.png\nlabel.png\n0.5,0.3\n"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const std::string spool = dir_ + "/" + r.name + ".spool";
    WriteFile(spool, r.samples);
    SampleFile f;
    f.url = std::string("/out/") + r.name + "/data.txt";
    f.index_url = std::string("/out/") + r.name + "/dataIndex.txt";
    f.index_prefix = "s3://data/";
    f.index_tokens = r.tokens;
    f.ranges = {{spool, 0, static_cast<int64_t>(r.samples.size())}};
    Status s = WriteSampleFile(ctx_, f);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(ReadFile(ctx_.rootfs + f.index_url), "s3://data/\n" + r.want);
    EXPECT_EQ(ReadFile(ctx_.rootfs + f.url), r.samples);
  }
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
  s = CopyModel(ctx_, "/out/m.pb", "s3://b/deploy/m.pb");
  EXPECT_NE(s.message().find("s3://b/deploy/m.pb is on S3 but"), std::string::npos) << s.message();
}

// §P7.4 with an S3 outputDir ([P:B20]: the URL keeps its "s3://", the index name is set).
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

// --- Confinement ([D:I21]): a worker may write anything into its job's output directory; the
// LC's writes and model reads beneath it follow no link it plants, with either resolver. ---

// Runs `body(tag)` once per resolver ("walk", "openat2"; the latter only where the kernel has
// it), each with its own tag for fresh paths.
void ForEachResolver(const std::function<void(const std::string& tag)>& body) {
  for (fs::Resolver r : {fs::Resolver::kWalk, fs::Resolver::kOpenat2}) {
    if (r == fs::Resolver::kOpenat2 && !fs::KernelHasOpenat2()) continue;
    fs::SetResolver(r);
    const std::string tag = r == fs::Resolver::kWalk ? "walk" : "openat2";
    SCOPED_TRACE(tag);
    body(tag);
  }
  fs::SetResolver(fs::Resolver::kAuto);
}

TEST_F(StorageTest, SampleDirReplacedByALinkIsAnErrorAndTheForeignFileIsUntouched) {
  WriteFile(ctx_.rootfs + "/foreign/data.txt", "FOREIGN");
  WriteFile(ctx_.rootfs + "/foreign/dataIndex.txt", "FOREIGN-INDEX");
  ForEachResolver([&](const std::string& tag) {
    // An absolute link (the host's /foreign), a relative one, and a link one level up.
    const std::vector<std::pair<std::string, std::string>> links = {
        {"/out/data/train/" + tag + "-abs", "/foreign"},
        {"/out/data/eval/" + tag + "-rel", "../../../foreign"},
        {"/out/data/" + tag + "-up", "/foreign"},
    };
    for (const auto& [link, target] : links) {
      SCOPED_TRACE(link);
      stdfs::create_directories(stdfs::path(ctx_.rootfs + link).parent_path());
      stdfs::create_symlink(target, ctx_.rootfs + link);
      const std::string url = link + (link.find("-up") != std::string::npos ? "/7" : "");
      Status s = WriteSampleFile(ctx_, Samples(url + "/data.txt", url + "/dataIndex.txt"));
      ASSERT_FALSE(s.ok());
      EXPECT_NE(s.message().find(link), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
      EXPECT_EQ(ReadFile(ctx_.rootfs + "/foreign/data.txt"), "FOREIGN");
      EXPECT_EQ(ReadFile(ctx_.rootfs + "/foreign/dataIndex.txt"), "FOREIGN-INDEX");
    }
  });
  EXPECT_EQ(std::distance(stdfs::directory_iterator(ctx_.rootfs + "/foreign"),
                          stdfs::directory_iterator()),
            2);
  EXPECT_TRUE(StagingEmpty());
}

TEST_F(StorageTest, ALinkAtTheSampleFilesNameIsReplacedNotFollowed) {
  WriteFile(ctx_.rootfs + "/foreign/data.txt", "FOREIGN");
  ForEachResolver([&](const std::string& tag) {
    const std::string dir = "/out/data/train/" + tag;
    stdfs::create_directories(ctx_.rootfs + dir);
    stdfs::create_symlink("/foreign/data.txt", ctx_.rootfs + dir + "/data.txt");
    Status s = WriteSampleFile(ctx_, Samples(dir + "/data.txt"));
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_FALSE(stdfs::is_symlink(ctx_.rootfs + dir + "/data.txt"));
    EXPECT_EQ(ReadFile(ctx_.rootfs + dir + "/data.txt"), kSamples);
    EXPECT_EQ(ReadFile(ctx_.rootfs + "/foreign/data.txt"), "FOREIGN");
  });
}

TEST_F(StorageTest, AHostSampleFileOrModelSourceOutsideTheJobRootIsRefused) {
  WriteFile(ctx_.rootfs + "/etc/shadow", "SECRET");
  for (const std::string url : {"/elsewhere/data.txt", "/out/../elsewhere/data.txt", "/outx/d"}) {
    Status s = WriteSampleFile(ctx_, Samples(url));
    ASSERT_FALSE(s.ok()) << url;
    EXPECT_NE(s.message().find("not beneath the job's output directory /out"), std::string::npos)
        << s.message();
  }
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/elsewhere"));
  Status s = CopyModel(ctx_, "/etc/shadow", "/models/deploy/model.pb");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model source /etc/shadow"), std::string::npos) << s.message();
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/models/deploy/model.pb"));
  ctx_.job_root.clear();
  s = CopyModel(ctx_, "/out/train/1/model.pb", "/models/deploy/model.pb");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not set"), std::string::npos) << s.message();
}

TEST_F(StorageTest, AModelSourceThatIsALinkOrBeneathOneIsRefusedAndTheTargetKept) {
  WriteFile(ctx_.rootfs + "/etc/shadow", "SECRET");
  WriteFile(ctx_.rootfs + "/models/deploy/model.pb", "OLD");
  ForEachResolver([&](const std::string& tag) {
    const std::string round = "/out/train/" + tag;
    stdfs::create_directories(ctx_.rootfs + round);
    stdfs::create_symlink("/etc/shadow", ctx_.rootfs + round + "/model.pb");
    stdfs::create_symlink("/etc", ctx_.rootfs + round + "/sub");
    ASSERT_EQ(::mkfifo((ctx_.rootfs + round + "/fifo").c_str(), 0644), 0);
    for (const std::string name : {"model.pb", "sub/shadow", "fifo", "missing"}) {
      SCOPED_TRACE(name);
      bool called = false;
      Status s = CopyModelWith(ctx_, round + "/" + name, "/models/deploy/model.pb",
                               [&](s3::Client*, const fs::Dir*) {
                                 called = true;
                                 return Status::Ok();
                               });
      ASSERT_FALSE(s.ok());
      EXPECT_NE(s.message().find(round), std::string::npos) << s.message();
      EXPECT_FALSE(called) << "the hook ran for a source that was refused";
      EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/model.pb"), "OLD");
    }
  });
}

TEST_F(StorageTest, AHostTargetIsWrittenInItsOpenedDirectoryAndALinkThereIsReplaced) {
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", "NEW");
  WriteFile(ctx_.rootfs + "/foreign/model.pb", "FOREIGN");
  ForEachResolver([&](const std::string& tag) {
    const std::string dst = "/models/" + tag + "/model.pb";
    stdfs::create_directories(ctx_.rootfs + "/models/" + tag);
    stdfs::create_symlink("/foreign/model.pb", ctx_.rootfs + dst);
    std::string hook_dir;
    Status s =
        CopyModelWith(ctx_, "/out/train/1/model.pb", dst, [&](s3::Client* c, const fs::Dir* d) {
          EXPECT_EQ(c, nullptr);
          if (d) hook_dir = d->path();
          return Status::Ok();
        });
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(hook_dir, ctx_.rootfs + "/models/" + tag);
    EXPECT_FALSE(stdfs::is_symlink(ctx_.rootfs + dst));
    EXPECT_EQ(ReadFile(ctx_.rootfs + dst), "NEW");
    EXPECT_EQ(ReadFile(ctx_.rootfs + "/foreign/model.pb"), "FOREIGN");
  });
}

// LL deploys to <out>/deploy/index.pkl, beneath the job's root: a worker's link there is not
// followed (a Model's URL elsewhere is the operator's and is opened as the host would).
TEST_F(StorageTest, ATargetBeneathTheJobRootFollowsNoLinkBeneathIt) {
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", "NEW");
  WriteFile(ctx_.rootfs + "/foreign/index.pkl", "FOREIGN");
  ForEachResolver([&](const std::string& tag) {
    stdfs::create_symlink("/foreign", ctx_.rootfs + "/out/deploy-" + tag);
    Status s = CopyModel(ctx_, "/out/train/1/model.pb", "/out/deploy-" + tag + "/index.pkl");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("/out/deploy-" + tag), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
    EXPECT_EQ(ReadFile(ctx_.rootfs + "/foreign/index.pkl"), "FOREIGN");
    s = CopyModel(ctx_, "/out/train/1/model.pb", "/out/deploy/" + tag + "/index.pkl");
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(ReadFile(ctx_.rootfs + "/out/deploy/" + tag + "/index.pkl"), "NEW");
  });
}

// The source is opened once: swapping its name for a link to a host file while copies run never
// makes the LC copy the host file (each copy is the model, or an error).
TEST_F(StorageTest, SwappingTheModelSourceWithALinkNeverCopiesTheLinksTarget) {
  WriteFile(ctx_.rootfs + "/etc/shadow", "SECRET");
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", "MODEL");
  const std::string real = ctx_.rootfs + "/out/train/1/model.pb";
  const std::string alt = ctx_.rootfs + "/out/train/1/alt";
  stdfs::create_symlink("/etc/shadow", alt);
  ForEachResolver([&](const std::string&) {
    std::atomic<bool> stop{false};
    auto exchange = [&] {
      return ::syscall(SYS_renameat2, AT_FDCWD, real.c_str(), AT_FDCWD, alt.c_str(),
                       RENAME_EXCHANGE) == 0;
    };
    // The swapper exchanges the names in bursts of an even number (so each burst leaves the model
    // under its name), and after each burst waits for a copy to succeed: copies race the bursts,
    // and every burst is followed by at least one copy that must be the model.
    constexpr int kBursts = 20, kExchangesPerBurst = 64, kMaxAttempts = 100000;
    std::atomic<int> copied{0};
    std::atomic<bool> swapping{true};
    std::thread swapper([&] {
      for (int burst = 0; burst < kBursts && !stop; ++burst) {
        for (int i = 0; i < kExchangesPerBurst; ++i) exchange();
        const int before = copied.load();
        while (copied.load() == before && !stop) std::this_thread::yield();
      }
      swapping = false;
    });
    int leaked = 0, attempts = 0;
    for (; swapping && attempts < kMaxAttempts; ++attempts) {
      Status s = CopyModel(ctx_, "/out/train/1/model.pb", "/models/deploy/model.pb");
      if (!s.ok()) continue;
      leaked += ReadFile(ctx_.rootfs + "/models/deploy/model.pb") != "MODEL";
      ++copied;
    }
    stop = true;
    swapper.join();
    EXPECT_EQ(leaked, 0) << "copies of the link's target, of " << copied.load();
    EXPECT_GE(copied.load(), kBursts) << "copies that succeeded in " << attempts << " attempts";
    if (stdfs::is_symlink(real)) {
      ASSERT_TRUE(exchange());  // as it was, for the next resolver
    }
    // Settled again, the copy is the model.
    ASSERT_TRUE(CopyModel(ctx_, "/out/train/1/model.pb", "/models/deploy/model.pb").ok());
    EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/model.pb"), "MODEL");
  });
}

// --- Model versions (design-notes §D4: earlier deployed models are kept so a deploy can be rolled
// back). ---

TEST_F(StorageTest, ModelVersionUrlIsAHiddenSiblingDirectory) {
  EXPECT_EQ(ModelVersionUrl("/models/deploy/model.pb", 3),
            "/models/deploy/.sedna-versions/model.pb.3");
  EXPECT_EQ(ModelVersionUrl("s3://b/deploy/m.pkl", 12), "s3://b/deploy/.sedna-versions/m.pkl.12");
}

TEST_F(StorageTest, FirstDeployKeepsTheInitialModelWithItsExactBytes) {
  const std::string initial("initial\0model\xff\n", 15);
  WriteFile(ctx_.rootfs + "/models/deploy/model.pb", initial);
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", "trained-1");
  auto r = DeployModel(ctx_, "/out/train/1/model.pb", "/models/deploy/model.pb");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 1);
  EXPECT_TRUE(r->warning.empty()) << r->warning;
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/model.pb"), "trained-1");
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/.sedna-versions/model.pb.1"), initial);
  // The directory the workers load from holds only the model (and the hidden version dir).
  std::set<std::string> names;
  for (const auto& e : stdfs::directory_iterator(ctx_.rootfs + "/models/deploy")) {
    names.insert(e.path().filename().string());
  }
  EXPECT_EQ(names, (std::set<std::string>{"model.pb", ".sedna-versions"}));
}

TEST_F(StorageTest, DeployWithoutAnEarlierModelKeepsNothing) {
  WriteFile(ctx_.rootfs + "/out/train/1/model.pb", "trained-1");
  auto r = DeployModel(ctx_, "/out/train/1/model.pb", "/models/deploy/model.pb");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 0);
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/model.pb"), "trained-1");
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/models/deploy/.sedna-versions"));
}

TEST_F(StorageTest, DeployKeepsTheNewestFiveVersionsAndDeletesOlderOnes) {
  const std::string target = ctx_.rootfs + "/models/deploy/model.pb";
  WriteFile(target, "model-0");
  for (int i = 1; i <= 8; ++i) {
    const std::string src = "/out/train/" + std::to_string(i) + "/model.pb";
    WriteFile(ctx_.rootfs + src, "model-" + std::to_string(i));
    auto r = DeployModel(ctx_, src, "/models/deploy/model.pb");
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->kept_version, i);
  }
  EXPECT_EQ(ReadFile(target), "model-8");
  auto versions = ListModelVersions(ctx_, "/models/deploy/model.pb");
  ASSERT_TRUE(versions.ok()) << versions.message();
  ASSERT_EQ(versions->size(), 5u);
  for (int n = 4; n <= 8; ++n) {
    const ModelVersion& v = (*versions)[n - 4];
    EXPECT_EQ(v.number, n);
    // Version n is the model deploy n replaced: model-(n-1).
    EXPECT_EQ(ReadFile(v.path), "model-" + std::to_string(n - 1));
    EXPECT_EQ(v.size, 7);
    EXPECT_GT(v.mtime, 0);
  }
  for (int n = 1; n <= 3; ++n) {
    EXPECT_FALSE(
        stdfs::exists(ctx_.rootfs + "/models/deploy/.sedna-versions/model.pb." + std::to_string(n)))
        << n;
  }
}

// A reader that opens the target over and over during deploys of big models only ever sees one
// of the complete models, never a missing, empty or half-written file.
TEST_F(StorageTest, DeployTargetIsAlwaysACompleteModel) {
  const std::string target = ctx_.rootfs + "/models/deploy/model.pb";
  std::vector<std::string> models;
  for (int i = 0; i < 6; ++i) models.push_back(std::string(1 << 20, static_cast<char>('a' + i)));
  WriteFile(target, models[0]);
  for (int i = 1; i < 6; ++i) {
    WriteFile(ctx_.rootfs + "/out/" + std::to_string(i) + "/model.pb", models[i]);
  }
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::string bad_sample;
  std::thread reader([&] {
    std::set<std::string> ok(models.begin(), models.end());
    while (!done.load()) {
      const std::string got = ReadFile(target);
      ++reads;
      if (!ok.count(got) && bad++ == 0)
        bad_sample = got.substr(0, 16) + "… (" + std::to_string(got.size()) + " bytes)";
    }
  });
  while (reads.load() < 1) std::this_thread::yield();  // the reader is reading before the deploys
  for (int i = 1; i < 6; ++i) {
    auto r =
        DeployModel(ctx_, "/out/" + std::to_string(i) + "/model.pb", "/models/deploy/model.pb");
    ASSERT_TRUE(r.ok()) << r.message();
  }
  // The reader finishes at least one more read after the last deploy.
  const int after = reads.load();
  while (reads.load() < after + 2) std::this_thread::yield();
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0) << bad_sample;
  EXPECT_GT(reads.load(), 2);
  EXPECT_EQ(ReadFile(target), models[5]);
  for (int n = 1; n <= 5; ++n) {
    EXPECT_EQ(
        ReadFile(ctx_.rootfs + "/models/deploy/.sedna-versions/model.pb." + std::to_string(n)),
        models[n - 1])
        << n;
  }
  // No temp file is left beside the target or among the versions.
  int entries = 0;
  for (const auto& e : stdfs::directory_iterator(ctx_.rootfs + "/models/deploy")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2);
}

// A failed deploy copy leaves the target and the kept versions as they were (the version made
// for it is dropped), and a re-run does not keep the same model twice.
TEST_F(StorageTest, FailedDeployLeavesTargetAndVersionsAsTheyWere) {
  const std::string target = ctx_.rootfs + "/models/deploy/model.pb";
  WriteFile(target, "model-0");
  WriteFile(ctx_.rootfs + "/out/1/model.pb", "model-1");
  fs::SetWriteFaultForTest([&](const std::string& path) { return path == target ? ENOSPC : 0; });
  auto r = DeployModel(ctx_, "/out/1/model.pb", "/models/deploy/model.pb");
  fs::SetWriteFaultForTest(nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("No space left on device"), std::string::npos) << r.message();
  EXPECT_EQ(ReadFile(target), "model-0");
  auto versions = ListModelVersions(ctx_, "/models/deploy/model.pb");
  ASSERT_TRUE(versions.ok()) << versions.message();
  EXPECT_TRUE(versions->empty());
  r = DeployModel(ctx_, "/out/1/model.pb", "/models/deploy/model.pb");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 1);
  EXPECT_EQ(ReadFile(target), "model-1");
}

// The rename landed but the directory's fsync failed: the deploy fails, and the version just
// made is kept, being the only copy of the old model now.
TEST_F(StorageTest, FailureAfterTheRenameKeepsTheOldModelsVersion) {
  const std::string dir = ctx_.rootfs + "/models/deploy";
  WriteFile(dir + "/model.pb", "model-0");
  WriteFile(ctx_.rootfs + "/out/1/model.pb", "model-1");
  fs::SetWriteFaultForTest([&](const std::string& path) { return path == dir ? EIO : 0; });
  auto r = DeployModel(ctx_, "/out/1/model.pb", "/models/deploy/model.pb");
  fs::SetWriteFaultForTest(nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("already replaced"), std::string::npos) << r.message();
  EXPECT_EQ(ReadFile(dir + "/model.pb"), "model-1");
  EXPECT_EQ(ReadFile(dir + "/.sedna-versions/model.pb.1"), "model-0");
}

// A crash after the old model was recorded and linked as a version, before the rename: the re-run
// deploy finds the target already kept (same inode) and keeps it once.
TEST_F(StorageTest, ReRunAfterACrashBeforeTheRenameKeepsTheOldModelOnce) {
  const std::string dir = ctx_.rootfs + "/models/deploy";
  WriteFile(dir + "/model.pb", "model-0");
  WriteFile(ctx_.rootfs + "/out/1/model.pb", "model-1");
  stdfs::create_directories(dir + "/.sedna-versions");
  stdfs::create_hard_link(dir + "/model.pb", dir + "/.sedna-versions/model.pb.1");
  auto deployed = fs::Dir::OpenTrusted(dir, false);
  ASSERT_TRUE(deployed.ok()) << deployed.message();
  auto st = deployed->Lstat("model.pb");
  ASSERT_TRUE(st.ok() && *st) << st.message();
  ASSERT_TRUE(internal::Ledger::ForVersions(ctx_, "/models/deploy/model.pb")
                  .Update([&](std::vector<internal::Recorded>& r) -> Status {
                    r.push_back({"model.pb.1", fs::IdOf(**st)});
                    return Status::Ok();
                  })
                  .ok());
  auto r = DeployModel(ctx_, "/out/1/model.pb", "/models/deploy/model.pb");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 1);
  auto versions = ListModelVersions(ctx_, "/models/deploy/model.pb");
  ASSERT_TRUE(versions.ok()) << versions.message();
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ(ReadFile(dir + "/.sedna-versions/model.pb.1"), "model-0");
  EXPECT_EQ(ReadFile(dir + "/model.pb"), "model-1");
}

// A target that is a symlink pointing nowhere holds no model: nothing is kept, the link replaced.
TEST_F(StorageTest, BrokenSymlinkTargetIsReplacedAndKeepsNothing) {
  const std::string dir = ctx_.rootfs + "/models/deploy";
  stdfs::create_directories(dir);
  stdfs::create_symlink(dir + "/gone.pb", dir + "/model.pb");
  WriteFile(ctx_.rootfs + "/out/1/model.pb", "model-1");
  auto r = DeployModel(ctx_, "/out/1/model.pb", "/models/deploy/model.pb");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 0);
  EXPECT_FALSE(stdfs::is_symlink(dir + "/model.pb"));
  EXPECT_EQ(ReadFile(dir + "/model.pb"), "model-1");
}

TEST_F(StorageTest, CopiesThatAreNotDeploysKeepNoVersions) {
  WriteFile(ctx_.rootfs + "/models/m.pb", "old");
  WriteFile(ctx_.rootfs + "/out/m.pb", "new");
  ASSERT_TRUE(CopyModel(ctx_, "/out/m.pb", "/models/m.pb").ok());
  ASSERT_TRUE(WriteSampleFile(ctx_, Samples("/out/d/data.txt", "/out/d/dataIndex.txt")).ok());
  ASSERT_TRUE(WriteSampleFile(ctx_, Samples("/out/d/data.txt", "/out/d/dataIndex.txt")).ok());
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/m.pb"), "new");
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/models/.sedna-versions"));
  EXPECT_FALSE(stdfs::exists(ctx_.rootfs + "/out/d/.sedna-versions"));
}

// The target's directory removed by hand after deploys kept versions there: no version is listed
// (the missing directory is told by its errno, ENOENT), rather than an error.
TEST_F(StorageTest, ListingVersionsOfATargetWhoseDirectoryIsGoneListsNone) {
  WriteFile(ctx_.rootfs + "/models/deploy/model.pb", "model-0");
  WriteFile(ctx_.rootfs + "/out/1/model.pb", "model-1");
  ASSERT_TRUE(DeployModel(ctx_, "/out/1/model.pb", "/models/deploy/model.pb").ok());
  auto before = ListModelVersions(ctx_, "/models/deploy/model.pb");
  ASSERT_TRUE(before.ok()) << before.message();
  ASSERT_EQ(before->size(), 1u);
  stdfs::remove_all(ctx_.rootfs + "/models/deploy");
  auto after = ListModelVersions(ctx_, "/models/deploy/model.pb");
  ASSERT_TRUE(after.ok()) << after.message();
  EXPECT_TRUE(after->empty());
  // Restoring one is refused as not kept, not as a file-system error.
  auto restored = RestoreModelVersion(ctx_, "/models/deploy/model.pb", 1);
  ASSERT_FALSE(restored.ok());
  EXPECT_NE(restored.message().find("is not kept"), std::string::npos) << restored.message();
}

TEST_F(StorageTest, RestoreKeepsTheCurrentModelAndCanBeUndone) {
  const std::string target = ctx_.rootfs + "/models/deploy/model.pb";
  WriteFile(target, "model-0");
  for (int i = 1; i <= 2; ++i) {
    WriteFile(ctx_.rootfs + "/out/" + std::to_string(i) + "/model.pb",
              "model-" + std::to_string(i));
    ASSERT_TRUE(
        DeployModel(ctx_, "/out/" + std::to_string(i) + "/model.pb", "/models/deploy/model.pb")
            .ok());
  }
  // Versions: 1 = model-0, 2 = model-1; the target is model-2.
  auto kept = RestoreModelVersion(ctx_, "/models/deploy/model.pb", 1);
  ASSERT_TRUE(kept.ok()) << kept.message();
  EXPECT_EQ(kept->kept_version, 3);
  EXPECT_TRUE(kept->warning.empty()) << kept->warning;
  EXPECT_EQ(ReadFile(target), "model-0");
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/.sedna-versions/model.pb.3"), "model-2");
  EXPECT_EQ(ReadFile(ctx_.rootfs + "/models/deploy/.sedna-versions/model.pb.1"), "model-0");
  // Undo: version 3 back.
  kept = RestoreModelVersion(ctx_, "/models/deploy/model.pb", 3);
  ASSERT_TRUE(kept.ok()) << kept.message();
  EXPECT_EQ(kept->kept_version, 4);
  EXPECT_EQ(ReadFile(target), "model-2");
  // A number that is not kept is an error naming it and the kept ones; nothing changes.
  kept = RestoreModelVersion(ctx_, "/models/deploy/model.pb", 9);
  ASSERT_FALSE(kept.ok());
  EXPECT_NE(
      kept.message().find("version 9 of /models/deploy/model.pb is not kept (kept: 1, 2, 3, 4)"),
      std::string::npos)
      << kept.message();
  EXPECT_EQ(ReadFile(target), "model-2");
}

TEST_F(StorageTest, ListAndRestoreOnS3AreAClearError) {
  auto l = ListModelVersions(ctx_, "s3://b/deploy/m.pb");
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.message().find("s3://b/deploy/.sedna-versions/m.pb.1"), std::string::npos)
      << l.message();
  auto r = RestoreModelVersion(ctx_, "s3://b/deploy/m.pb", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not listed or restored here"), std::string::npos) << r.message();
}

// Deploys on S3 with moto's signature check on: no LIST (the newest number is in <name>.newest);
// the prune deletes exactly the version that fell out of the newest 5.
TEST_F(StorageTest, S3DeployKeepsTheOldObjectAsAVersion) {
  UseS3();
  const std::string b = "s3://" + bucket_;
  for (int i = 0; i <= 6; ++i) {
    WriteFile(ctx_.rootfs + "/out/" + std::to_string(i) + "/m.pkl", "model-" + std::to_string(i));
  }
  auto r = DeployModel(ctx_, "/out/0/m.pkl", b + "/deploy/m.pkl");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 0);
  for (int i = 1; i <= 6; ++i) {
    r = DeployModel(ctx_, "/out/" + std::to_string(i) + "/m.pkl", b + "/deploy/m.pkl");
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->kept_version, i);
    EXPECT_TRUE(r->warning.empty()) << r->warning;
  }
  EXPECT_EQ(Get("deploy/m.pkl"), "model-6");
  // The deploys above ran with moto's signature check on; this LIST needs it off (its prefix has a
  // '/', see s3_client_test KeysAndPrefixesNeedingEscapesRoundTrip).
  ASSERT_TRUE(server_->SetAuthCount("inf"));
  struct AuthBackOn {
    ~AuthBackOn() { server_->SetAuthCount("0"); }
  } auth_back_on;
  s3::Client c(server_->credentials(), ctx_.s3_options);
  auto keys = c.List(bucket_, "deploy/.sedna-versions/");
  ASSERT_TRUE(keys.ok()) << keys.message();
  EXPECT_EQ(*keys, (std::vector<std::string>{
                       "deploy/.sedna-versions/m.pkl.2", "deploy/.sedna-versions/m.pkl.3",
                       "deploy/.sedna-versions/m.pkl.4", "deploy/.sedna-versions/m.pkl.5",
                       "deploy/.sedna-versions/m.pkl.6", "deploy/.sedna-versions/m.pkl.newest"}));
  EXPECT_EQ(Get("deploy/.sedna-versions/m.pkl.newest"), "6");
  EXPECT_EQ(Get("deploy/.sedna-versions/m.pkl.2"), "model-1");
  EXPECT_EQ(Get("deploy/.sedna-versions/m.pkl.6"), "model-5");
}

// A `.newest` object that does not hold a version number fails the deploy with its name, before
// the target is touched.
TEST_F(StorageTest, S3GarbageNewestVersionObjectFailsTheDeployNamingIt) {
  UseS3();
  const std::string b = "s3://" + bucket_;
  WriteFile(ctx_.rootfs + "/out/0/m.pkl", "model-0");
  WriteFile(ctx_.rootfs + "/out/1/m.pkl", "model-1");
  ASSERT_TRUE(DeployModel(ctx_, "/out/0/m.pkl", b + "/deploy/m.pkl").ok());
  s3::Client c(server_->credentials(), ctx_.s3_options);
  ASSERT_TRUE(c.PutBytes({bucket_, "deploy/.sedna-versions/m.pkl.newest"}, "seven").ok());
  auto r = DeployModel(ctx_, "/out/1/m.pkl", b + "/deploy/m.pkl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.message().find(b + "/deploy/.sedna-versions/m.pkl.newest: \"seven\" is not a version"),
      std::string::npos)
      << r.message();
  EXPECT_EQ(Get("deploy/m.pkl"), "model-0");
}

}  // namespace
}  // namespace sedna::storage
