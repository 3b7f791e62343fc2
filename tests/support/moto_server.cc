#include "moto_server.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "adapters/s3/sigv4.h"
#include "fault_proxy.h"

namespace sedna::testing {
namespace {

using namespace std::chrono_literals;
using s3::Params;

std::string FindMotoServer() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      std::string candidate = dir + "/moto_server";
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  if (access("/root/.pyenv/shims/moto_server", X_OK) == 0) return "/root/.pyenv/shims/moto_server";
  return "";
}

// A plain HTTP exchange for test setup (signed by the caller when needed).
struct HttpAnswer {
  long status = 0;
  std::string body;
};

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

HttpAnswer HttpPost(const std::string& url, const Params& headers, const std::string& body) {
  HttpAnswer answer;
  CURL* c = curl_easy_init();
  curl_slist* list = nullptr;
  for (const auto& [k, v] : headers) list = curl_slist_append(list, (k + ": " + v).c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (curl_easy_perform(c) == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  }
  curl_slist_free_all(list);
  curl_easy_cleanup(c);
  return answer;
}

std::string FormEncode(const Params& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out += "&";
    out += s3::UriEncode(k, true) + "=" + s3::UriEncode(v, true);
  }
  return out;
}

std::string Between(const std::string& s, const std::string& open, const std::string& close) {
  const size_t a = s.find(open);
  if (a == std::string::npos) return "";
  const size_t b = s.find(close, a + open.size());
  return b == std::string::npos ? "" : s.substr(a + open.size(), b - a - open.size());
}

// An IAM Query API call; moto routes it by the credential scope's service, so it is signed
// (with any key: authentication is still off when this is used).
HttpAnswer Iam(int port, const Params& params) {
  const std::string body = FormEncode(params);
  s3::RequestToSign r;
  r.method = "POST";
  r.path = "/";
  r.headers = {{"content-type", "application/x-www-form-urlencoded"}};
  r.payload_sha256 = s3::Sha256Hex(body);
  const s3::SigningIdentity setup{"AKIASETUPSETUPSETUP0", "setup-secret", "us-east-1", "iam"};
  const std::string host = "127.0.0.1:" + std::to_string(port);
  return HttpPost("http://" + host + "/",
                  s3::SignS3Request(r, host, setup, std::chrono::system_clock::now()), body);
}

}  // namespace

MotoServer::~MotoServer() { Stop(); }

std::string MotoServer::Start(bool* skip) {
  *skip = false;
  if (pid_ > 0) return "";
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const std::string exe = FindMotoServer();
  if (exe.empty()) {
    *skip = true;
    return "moto_server not found on PATH (pip install 'moto[server]' to run these tests)";
  }
  static std::atomic<int> instances{0};
  port_ = FreeLoopbackPort();
  const std::string port = std::to_string(port_);
  log_path_ =
      "/tmp/sedna_moto_" + std::to_string(getpid()) + "_" + std::to_string(instances++) + ".log";
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphaned server if the test binary dies
    const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    execl(exe.c_str(), "moto_server", "-H", "127.0.0.1", "-p", port.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid_ < 0) return std::string("fork: ") + std::strerror(errno);
  setpgid(pid_, pid_);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    const int fd = ConnectLoopback(port_);
    if (fd >= 0) {
      close(fd);
      break;
    }
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return "moto_server exited during startup; see " + log_path_;
    }
    if (std::chrono::steady_clock::now() > deadline) return "moto_server did not listen in 60 s";
    std::this_thread::sleep_for(100ms);
  }
  return CreateAccessKeyAndEnableAuth();
}

void MotoServer::Stop() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(100ms);
  }
  kill(-pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool MotoServer::SetAuthCount(const std::string& count) {
  // Not form-encoded: moto reads the count from the raw body.
  return HttpPost("http://" + endpoint() + "/moto-api/reset-auth", {{"Content-Type", "text/plain"}},
                  count)
             .status == 200;
}

std::string MotoServer::endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

s3::Credentials MotoServer::credentials() const { return credentials_via(endpoint()); }

s3::Credentials MotoServer::credentials_via(const std::string& endpoint) const {
  s3::Credentials c;
  c.endpoint = endpoint;
  c.use_https = false;
  c.access_key = access_key_;
  c.secret_key = secret_key_;
  return c;
}

Status MotoServer::CreateBucket(const std::string& bucket) {
  s3::ClientOptions o;
  o.timeout = 30s;
  o.retries = 2;
  o.backoff = 10ms;
  s3::Client c(credentials(), o);
  return c.CreateBucket(bucket);
}

void MotoServer::RemoveLog() const {
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

std::string MotoServer::CreateAccessKeyAndEnableAuth() {
  HttpAnswer a =
      Iam(port_, {{"Action", "CreateUser"}, {"UserName", "sedna-lc"}, {"Version", "2010-05-08"}});
  if (a.status != 200) return "IAM CreateUser: " + std::to_string(a.status) + " " + a.body;
  a = Iam(
      port_,
      {{"Action", "PutUserPolicy"},
       {"UserName", "sedna-lc"},
       {"PolicyName", "s3-all"},
       {"PolicyDocument",
        R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]})"},
       {"Version", "2010-05-08"}});
  if (a.status != 200) return "IAM PutUserPolicy: " + std::to_string(a.status) + " " + a.body;
  a = Iam(port_,
          {{"Action", "CreateAccessKey"}, {"UserName", "sedna-lc"}, {"Version", "2010-05-08"}});
  if (a.status != 200) return "IAM CreateAccessKey: " + std::to_string(a.status) + " " + a.body;
  access_key_ = Between(a.body, "<AccessKeyId>", "</AccessKeyId>");
  secret_key_ = Between(a.body, "<SecretAccessKey>", "</SecretAccessKey>");
  if (access_key_.empty() || secret_key_.empty()) return "IAM CreateAccessKey: no key in answer";
  if (!SetAuthCount("0")) return "moto reset-auth failed";
  return "";
}

}  // namespace sedna::testing
