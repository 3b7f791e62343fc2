#include "lc_process.h"

#include "fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sedna::testing {

LcProcess::LcProcess(const std::string& binary, const std::map<std::string, std::string>& env,
                     const std::vector<std::string>& args, const std::string& log_path)
    : log_path_(log_path) {
  std::vector<std::string> envs;
  envs.reserve(env.size() + 1);
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  if (!env.count("PATH")) envs.push_back("PATH=/usr/bin:/bin");
  std::vector<char*> envp, argv;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  // SEDNA_LC_WRAPPER (unset: none): words run in front of `binary`, found through PATH, e.g.
  // "qemu-aarch64" for a cross-built binary where binfmt_misc does not run it (tools/arm64.sh).
  std::vector<std::string> a;
  const char* wrapper = std::getenv("SEDNA_LC_WRAPPER");
  if (wrapper) {
    std::istringstream words(wrapper);
    for (std::string w; words >> w;) a.push_back(w);
  }
  const bool wrapped = !a.empty();
  a.push_back(binary);
  a.insert(a.end(), args.begin(), args.end());
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // no test sockets leak into the child
  int rc = wrapped ? posix_spawnp(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data())
                   : posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("spawn " + binary + ": " + std::strerror(rc));
}

LcProcess::~LcProcess() {
  if (pid_ > 0) Kill();
}

int LcProcess::Stop() {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGTERM);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

int LcProcess::Wait() {
  if (pid_ <= 0) return 0;
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

void LcProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
}

std::string LcProcess::Log() const { return ReadFile(log_path_); }

uint16_t FreePort() { return static_cast<uint16_t>(FreeLoopbackPort()); }

HttpResult HttpRequest(uint16_t port, const std::string& method, const std::string& target,
                       const std::string& body, const std::vector<std::string>& headers,
                       int connect_wait_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(connect_wait_ms);
  int fd = -1;
  for (;;) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) break;
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("connect 127.0.0.1:" + std::to_string(port) + " failed");
    }
    // Polling a port that is not listening yet: there is no event to await across processes.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& h : headers) req += h + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  size_t off = 0;
  while (off < req.size()) {
    ssize_t n = ::write(fd, req.data() + off, req.size() - off);
    if (n <= 0) break;
    off += n;
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) resp.append(buf, n);
  ::close(fd);
  HttpResult r;
  r.raw = resp;
  if (resp.size() > 12) r.status = std::atoi(resp.c_str() + 9);
  auto pos = resp.find("\r\n\r\n");
  if (pos != std::string::npos) r.body = resp.substr(pos + 4);
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
}

void AppendFile(const std::string& path, const std::string& content) {
  // One write(2): the inotify event that makes the LC read comes once it returned. (A read that
  // runs meanwhile, e.g. a poll, can see part of it: the file grows a page at a time; the tests'
  // jobs poll every 60 s.) Linux writes at most 0x7ffff000 bytes per call, so a larger append
  // (rss_bench's 1e8-line index) takes as few writes as that allows.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("short write " + path);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

std::string MakeTempDir(const std::string& prefix) {
  std::string t = "/tmp/" + prefix + "XXXXXX";
  if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
  return t;
}

}  // namespace sedna::testing
