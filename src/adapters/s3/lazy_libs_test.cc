// libcurl or libcrypto missing at run time: every S3 call returns an error that names the library
// (nothing aborts), and an LC without S3 never needs them. Each case runs in a forked child with
// its own mount namespace in which /dev/null is bind-mounted over the library file, so dlopen
// fails exactly as on a node without the package. Needs root (CAP_SYS_ADMIN); skipped, with the
// reason, elsewhere.
#include "adapters/s3/lazy_libs.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "adapters/s3/s3_client.h"

namespace sedna::s3 {
namespace {

// The file the dynamic loader opens for `soname` ("" when ldconfig does not list it).
std::string LibraryPath(const std::string& soname) {
  std::string out;
  FILE* p = ::popen(("/sbin/ldconfig -p 2>/dev/null | grep -F '" + soname + " '").c_str(), "r");
  if (!p) return out;
  char buf[512];
  if (std::fgets(buf, sizeof buf, p)) {
    std::string line = buf;
    auto arrow = line.find("=> ");
    if (arrow != std::string::npos) {
      out = line.substr(arrow + 3);
      while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    }
  }
  ::pclose(p);
  return out;
}

struct ChildResult {
  bool ran = false;     // false: the namespace could not be set up (see `text`)
  std::string text;     // what `fn` returned, or why it did not run
  int exit_status = 0;  // the child's wait status
};

// Runs `fn` in a child that sees /dev/null in place of each of `hidden`; returns its text.
ChildResult RunWithout(const std::vector<std::string>& hidden,
                       const std::function<std::string()>& fn) {
  ChildResult r;
  int fds[2];
  if (::pipe(fds) != 0) return {false, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto send = [&](char tag, const std::string& s) {
      std::string msg = std::string(1, tag) + s;
      (void)!::write(fds[1], msg.data(), msg.size());
      ::_exit(0);
    };
    if (::unshare(CLONE_NEWNS) != 0) send('!', "unshare(CLONE_NEWNS) failed (not root?)");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      send('!', "cannot make / private in the new mount namespace");
    }
    for (const auto& path : hidden) {
      if (::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        send('!', "cannot bind /dev/null over " + path);
      }
    }
    send('=', fn());
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  std::string got;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, &r.exit_status, 0);
  if (got.empty()) return {false, "the child reported nothing", r.exit_status};
  r.ran = got[0] == '=';
  r.text = got.substr(1);
  return r;
}

Credentials TestCredentials() {
  Credentials c;
  c.endpoint = "127.0.0.1:1";  // never reached: the library is missing before any connection
  c.use_https = false;
  c.access_key = "AKIDEXAMPLE";
  c.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  return c;
}

TEST(LazyLibsTest, MissingLibcurlIsAnErrorOnEveryS3Call) {
  const std::string lib = LibraryPath("libcurl.so.4");
  ASSERT_FALSE(lib.empty()) << "ldconfig does not list libcurl.so.4";
  ChildResult r = RunWithout({lib}, [] {
    std::string load_error;
    const bool loaded = LoadCurl(&load_error) != nullptr;
    Client client(TestCredentials());
    auto head = client.Head(S3Url{"bucket", "index.txt"});
    Status put = client.PutBytes(S3Url{"bucket", "model.pb"}, "bytes");
    return std::string(loaded ? "loaded" : "not loaded") + "\n" + load_error + "\n" +
           head.message() + "\n" + put.message();
  });
  if (!r.ran) GTEST_SKIP() << "no private mount namespace here: " << r.text;
  ASSERT_TRUE(WIFEXITED(r.exit_status) && WEXITSTATUS(r.exit_status) == 0)
      << "the child died: status " << r.exit_status;
  EXPECT_EQ(r.text.substr(0, r.text.find('\n')), "not loaded") << r.text;
  // Each line names the library; the first is LoadCurl's own error.
  size_t lines = 0;
  for (size_t pos = r.text.find('\n'); pos != std::string::npos; pos = r.text.find('\n', pos + 1)) {
    const size_t end = r.text.find('\n', pos + 1);
    const std::string line = r.text.substr(pos + 1, end == std::string::npos ? end : end - pos - 1);
    EXPECT_NE(line.find("S3 needs libcurl.so.4: "), std::string::npos) << line;
    ++lines;
  }
  EXPECT_EQ(lines, 3u) << r.text;
  EXPECT_EQ(r.text.find("attempts)"), std::string::npos) << "a missing library was retried";
}

TEST(LazyLibsTest, MissingLibcryptoIsAnErrorNotAnAbort) {
  const std::string crypto = LibraryPath("libcrypto.so.3");
  ASSERT_FALSE(crypto.empty()) << "ldconfig does not list libcrypto.so.3";
  ChildResult r = RunWithout({crypto}, [] {
    std::string load_error;
    const bool loaded = LoadCrypto(&load_error) != nullptr;
    Client client(TestCredentials());
    Status put = client.PutBytes(S3Url{"bucket", "model.pb"}, "bytes");
    auto head = client.Head(S3Url{"bucket", "index.txt"});
    return std::string(loaded ? "loaded" : "not loaded") + "\n" + load_error + "\n" +
           put.message() + "\n" + head.message();
  });
  if (!r.ran) GTEST_SKIP() << "no private mount namespace here: " << r.text;
  ASSERT_TRUE(WIFEXITED(r.exit_status) && WEXITSTATUS(r.exit_status) == 0)
      << "the child died (an abort in the signer?): status " << r.exit_status;
  EXPECT_EQ(r.text.substr(0, r.text.find('\n')), "not loaded") << r.text;
  EXPECT_NE(r.text.find("S3 needs libcrypto.so.3: "), std::string::npos) << r.text;
  // PutBytes hashes the body first: its error is the libcrypto one, not a crash. (Head needs
  // libcurl, which itself links libcrypto here, so it fails too, naming one of the two.)
  const auto lines_from = r.text.find('\n', r.text.find('\n') + 1) + 1;
  const std::string put_line =
      r.text.substr(lines_from, r.text.find('\n', lines_from) - lines_from);
  EXPECT_NE(put_line.find("libcrypto.so.3"), std::string::npos) << put_line;
  EXPECT_NE(r.text.rfind("S3 needs lib"), r.text.find("S3 needs lib")) << r.text;
}

// Control: with nothing hidden the same calls load both libraries, so the failures above are the
// hiding's doing, not the test's.
TEST(LazyLibsTest, ControlBothLoadWhenPresent) {
  ChildResult r = RunWithout({}, [] {
    std::string e1, e2;
    const bool curl = LoadCurl(&e1) != nullptr;
    const bool crypto = LoadCrypto(&e2) != nullptr;
    return std::string(curl ? "curl" : "no curl: " + e1) + "," +
           (crypto ? "crypto" : "no crypto: " + e2);
  });
  if (!r.ran) GTEST_SKIP() << "no private mount namespace here: " << r.text;
  EXPECT_EQ(r.text, "curl,crypto");
}

}  // namespace
}  // namespace sedna::s3
