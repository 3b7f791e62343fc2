// moto_server (a real S3 implementation, `pip install 'moto[server]'`) as a child process on
// 127.0.0.1, with SigV4 signature checking switched on, for unit and integration tests.
//
// Signature checking: moto skips authentication for the first INITIAL_NO_AUTH_ACTION_COUNT
// requests (default: unlimited). Start() creates an IAM user with an s3:* policy and an access key
// while checking is still off, then POSTs "0" to /moto-api/reset-auth, after which every S3
// request must carry a valid SigV4 signature by that key (moto recomputes it with botocore): a
// wrong secret gets 403 SignatureDoesNotMatch, an unknown key 403 InvalidAccessKeyId.
//
// Typical use, once per test suite:
//   static void SetUpTestSuite() { server_ = new MotoServer(); problem_ = server_->Start(&skip_); }
//   void SetUp() override { if (skip_) GTEST_SKIP() << problem_; ASSERT_EQ(problem_, ""); }
#pragma once

#include <sys/types.h>
#include <string>

#include "adapters/s3/s3_client.h"
#include "core/status.h"

namespace sedna::testing {

class MotoServer {
 public:
  MotoServer() = default;
  ~MotoServer();  // Stop()s
  MotoServer(const MotoServer&) = delete;
  MotoServer& operator=(const MotoServer&) = delete;

  // Starts moto_server (found on PATH, else /root/.pyenv/shims/moto_server) on a free port of
  // 127.0.0.1 in its own process group (killed with the test binary: PR_SET_PDEATHSIG), waits up
  // to 60 s for it to listen, then creates the access key and enables signature checking.
  // Returns "" on success, else why the server is unusable; *skip is set when moto_server is
  // simply not installed (the caller should skip rather than fail). Its output goes to log_path().
  std::string Start(bool* skip);
  // SIGTERM to the process group, SIGKILL after 5 s. Idempotent.
  void Stop();

  // Switches signature checking off ("inf") or on ("0"), via /moto-api/reset-auth.
  bool SetAuthCount(const std::string& count);

  int port() const { return port_; }
  std::string endpoint() const;  // "127.0.0.1:<port>"
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  // {endpoint(), use_https = false, access_key(), secret_key(), "us-east-1"}.
  s3::Credentials credentials() const;
  // The same with another endpoint (e.g. a FaultProxy's in front of this server).
  s3::Credentials credentials_via(const std::string& endpoint) const;

  // PUT /<bucket>, signed with credentials() (through sedna::s3::Client).
  Status CreateBucket(const std::string& bucket);

  const std::string& log_path() const { return log_path_; }
  void RemoveLog() const;  // keep it when Start failed, it says why

 private:
  std::string CreateAccessKeyAndEnableAuth();

  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
  std::string access_key_, secret_key_;
};

}  // namespace sedna::testing
