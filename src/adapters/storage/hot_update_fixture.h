// The hot-update writer's test fixture (hot_update_test.cc, hot_update_resume_test.cc): a
// temporary rootfs with a trained model and a deploy model, the Context over it, and the §H4.1
// action of job default/hot.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/fs/files.h"
#include "adapters/storage/hot_update.h"

namespace sedna::storage::hot_update_fixture {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& data) {
  stdfs::create_directories(stdfs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

inline constexpr const char* kJobDir =
    "/var/lib/sedna/model-hot-update/default/incrementallearningjob/hot";
inline constexpr const char* kConfig =
    "/var/lib/sedna/model-hot-update/default/incrementallearningjob/hot/model_config.json";

class HotUpdateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "hot_update_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    ctx_.rootfs = dir_ + "/rootfs";
    ctx_.staging_dir = dir_ + "/staging";
    ctx_.job_root = "/output";  // model sources are read beneath the job's root ([D:I21])
    ctx_.s3_options.timeout = 30s;
    ctx_.s3_options.retries = 1;
    ctx_.s3_options.backoff = 10ms;
    WriteFile(Host("/output/train/1/model.pb"), "trained round 1");
    WriteFile(Host("/models/deploy.pb"), "initial deploy model");
  }
  void TearDown() override {
    fs::SetWriteFaultForTest(nullptr);
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }
  std::string Host(const std::string& path) const { return ctx_.rootfs + path; }

  // The §H4.1 action for the trained model at `src`: the hot-update copy, then the deploy model.
  core::il::WriteHotUpdate Action(const std::string& src) const {
    core::il::WriteHotUpdate a;
    a.condition = 13;
    a.job_namespace = "default";
    a.job_name = "hot";
    a.config_path = kConfig;
    a.copies = {{src, std::string(kJobDir) + "/model.pb"}, {src, "/models/deploy.pb"}};
    a.model_path = "/model-hot-update/model.pb";
    return a;
  }

  std::vector<std::string> Entries(const std::string& dir) const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : stdfs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string dir_;
  Context ctx_;
};

}  // namespace sedna::storage::hot_update_fixture
