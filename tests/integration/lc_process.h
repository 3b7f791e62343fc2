// Runs the real sedna-lc binary as a child process for integration tests, and a minimal HTTP/1.1
// client for worker POSTs.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace sedna::testing {

class LcProcess {
 public:
  // Starts `binary` with exactly `env` (plus PATH) and `args`; stdout+stderr go to log_path.
  LcProcess(const std::string& binary, const std::map<std::string, std::string>& env,
            const std::vector<std::string>& args, const std::string& log_path);
  ~LcProcess();
  pid_t pid() const { return pid_; }
  // SIGTERM and wait; returns the exit status (or -signal).
  int Stop();
  void Kill();  // SIGKILL and wait
  // Waits for the process to exit by itself; returns its exit code (or -signal).
  int Wait();
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// A free TCP port on 127.0.0.1 (bound then released).
uint16_t FreePort();

struct HttpResult {
  int status = 0;
  std::string body;
  std::string raw;
};
// One request on a fresh connection ("Connection: close"). Retries connect for up to
// `connect_wait_ms` while the server is still starting.
HttpResult HttpRequest(uint16_t port, const std::string& method, const std::string& target,
                       const std::string& body,
                       const std::vector<std::string>& headers = {"Content-Type: application/json"},
                       int connect_wait_ms = 10000);
// The body of the worker API's answer to an accepted worker message (docs/protocol.md §P5.2), as
// the Go LC writes it.
inline constexpr const char* kOk = "{\n \"Status\": 200,\n \"Message\": \"OK\"\n}";

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
void AppendFile(const std::string& path, const std::string& content);
std::string MakeTempDir(const std::string& prefix);

}  // namespace sedna::testing
