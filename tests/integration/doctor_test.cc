// `sedna-lc doctor`: each step of the GM link fails against a local server that fails it, and
// names that step; a real websocket server passes them all. The diagnosis runs as a library call
// (DiagnoseGmConnect, DiagnoseLocal); the last tests run the binary.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "adapters/json/envelope.h"
#include "app/cli/doctor.h"
#include "app/cli/gm_diagnosis.h"
#include "lc_process.h"
#include "ws_test_server.h"

namespace sedna::app {
namespace {

using std::chrono::milliseconds;

// A TCP server on 127.0.0.1 that answers every request head with `response` and then holds the
// connection until the client closes it (or the server stops).
class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::string response) : response_(std::move(response)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedHttpServer() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string request() {  // the last request head received
    std::lock_guard<std::mutex> lock(mu_);
    return request_;
  }

 private:
  void Serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      ssize_t n;
      while (in.find("\r\n\r\n") == std::string::npos && (n = ::read(c, buf, sizeof buf)) > 0) {
        in.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        request_ = in;
      }
      (void)!::write(c, response_.data(), response_.size());
      while (::read(c, buf, sizeof buf) > 0) {
      }
      ::close(c);
    }
  }

  std::string response_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string request_;
};

// A port on 127.0.0.1 that nothing listens on: bound, then closed.
uint16_t ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

std::vector<Check> Diagnose(const std::string& address) {
  GmProbeOptions o;
  o.address = address;
  o.node_name = "edge-1";
  o.first_frame = json::EncodeBareHeader({});
  o.timeout = milliseconds(3000);
  o.hold = milliseconds(500);
  return DiagnoseGmConnect(o);
}

// The index of the first failed step ("" when none), with the checks printed on mismatch.
std::string FailedStep(const std::vector<Check>& checks) {
  for (const auto& c : checks) {
    if (c.verdict == Verdict::kFail) return c.name;
  }
  return "";
}

void ExpectOrderAndSkips(const std::vector<Check>& checks) {
  const char* names[] = {"address", "dns", "tcp", "websocket", "first frame"};
  ASSERT_EQ(checks.size(), 5u) << RenderChecks(checks);
  bool failed = false;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(checks[i].name, names[i]);
    if (failed) {
      EXPECT_EQ(checks[i].verdict, Verdict::kSkip) << RenderChecks(checks);
    }
    if (checks[i].verdict == Verdict::kFail) {
      failed = true;
      EXPECT_FALSE(checks[i].fix.empty()) << checks[i].name;
    }
  }
}

TEST(DoctorGm, UnparsableAddressFailsTheAddressStep) {
  for (const char* a :
       {"", "ws://gm:9000", "gm:9000/ws", "gm", "gm:http", "gm:70000", "::1:9000"}) {
    auto checks = Diagnose(a);
    ExpectOrderAndSkips(checks);
    EXPECT_EQ(FailedStep(checks), "address") << a << "\n" << RenderChecks(checks);
  }
}

TEST(DoctorGm, UnresolvableHostFailsDnsAndNamesTheResolver) {
  auto checks = Diagnose("gm.sedna-doctor-test.invalid:9000");  // RFC 6761: never resolves
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "dns") << RenderChecks(checks);
  EXPECT_NE(checks[1].detail.find("gm.sedna-doctor-test.invalid"), std::string::npos);
  EXPECT_TRUE(checks[1].detail.find("nameservers") != std::string::npos ||
              checks[1].detail.find("hosts") != std::string::npos)
      << checks[1].detail;
  EXPECT_NE(checks[1].fix.find("ClusterFirstWithHostNet"), std::string::npos);
}

TEST(DoctorGm, NothingListeningFailsTcpAsRefused) {
  auto checks = Diagnose("127.0.0.1:" + std::to_string(ClosedPort()));
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "tcp") << RenderChecks(checks);
  EXPECT_NE(checks[2].detail.find("refused"), std::string::npos) << checks[2].detail;
  EXPECT_NE(checks[1].detail.find("no lookup"), std::string::npos) << checks[1].detail;
}

// A listener whose accept queue is full: Linux drops further SYNs, so a connect times out.
TEST(DoctorGm, FullAcceptQueueFailsTcpAsTimedOut) {
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(::listen(l, 0), 0);
  ::getsockname(l, reinterpret_cast<sockaddr*>(&sa), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {  // never accepted
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ::connect(c, reinterpret_cast<sockaddr*>(&sa), len);
    fillers.push_back(c);
  }
  GmProbeOptions o;
  o.address = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  o.timeout = milliseconds(300);
  auto checks = DiagnoseGmConnect(o);
  for (int c : fillers) ::close(c);
  ::close(l);
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "tcp") << RenderChecks(checks);
  EXPECT_NE(checks[2].detail.find("timed out after 0.3 s"), std::string::npos) << checks[2].detail;
  EXPECT_NE(checks[2].fix.find("firewall"), std::string::npos) << checks[2].fix;
}

TEST(DoctorGm, LocalhostResolvesThroughTheResolverAndConnects) {
  CannedHttpServer http("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  auto checks = Diagnose("localhost:" + http.address().substr(http.address().rfind(':') + 1));
  ExpectOrderAndSkips(checks);
  EXPECT_EQ(checks[1].verdict, Verdict::kOk) << RenderChecks(checks);
  EXPECT_NE(checks[1].detail.find("127.0.0.1"), std::string::npos) << checks[1].detail;
}

TEST(DoctorGm, PlainHttpServerFailsTheUpgradeWithItsStatusLine) {
  CannedHttpServer http("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  auto checks = Diagnose(http.address());
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "websocket") << RenderChecks(checks);
  EXPECT_NE(checks[3].detail.find("\"HTTP/1.1 200 OK\""), std::string::npos) << checks[3].detail;
  // The request was a websocket upgrade carrying the LC's Node-Name.
  const std::string req = http.request();
  EXPECT_NE(req.find("Upgrade: websocket"), std::string::npos) << req;
  EXPECT_NE(req.find("Sec-WebSocket-Version: 13"), std::string::npos) << req;
  EXPECT_NE(req.find("Node-Name: edge-1"), std::string::npos) << req;
}

TEST(DoctorGm, WrongAcceptKeyFailsTheUpgrade) {
  CannedHttpServer http(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaGdvXSgSL2O0LtuYo=\r\n\r\n");
  auto checks = Diagnose(http.address());
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "websocket") << RenderChecks(checks);
  EXPECT_NE(checks[3].detail.find("Sec-WebSocket-Accept is \"s3pPLMBiTxaGdvXSgSL2O0LtuYo=\""),
            std::string::npos)
      << checks[3].detail;
}

TEST(DoctorGm, GmClosingAfterTheFirstFrameFailsThatStepWithTheCloseCode) {
  auto ws = testing::WsTestServer::Start();
  ASSERT_TRUE(ws);
  ws->on_frame = [&](const std::string&) { ws->CloseConnection(4001, "unknown node"); };
  auto checks = Diagnose(ws->address());
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "first frame") << RenderChecks(checks);
  EXPECT_NE(checks[4].detail.find("close code 4001 \"unknown node\""), std::string::npos)
      << checks[4].detail;
  // It was the LC's first frame that the server received.
  EXPECT_EQ(ws->WaitForFrame(milliseconds(1000)), json::EncodeBareHeader({}));
}

TEST(DoctorGm, GmDroppingTcpAfterTheFirstFrameFailsThatStep) {
  auto ws = testing::WsTestServer::Start();
  ASSERT_TRUE(ws);
  ws->on_frame = [&](const std::string&) { ws->DropConnection(); };
  auto checks = Diagnose(ws->address());
  ExpectOrderAndSkips(checks);
  ASSERT_EQ(FailedStep(checks), "first frame") << RenderChecks(checks);
  EXPECT_NE(checks[4].detail.find("no close frame"), std::string::npos) << checks[4].detail;
}

TEST(DoctorGm, WorkingGmPassesEveryStep) {
  auto ws = testing::WsTestServer::Start();
  ASSERT_TRUE(ws);
  auto checks = Diagnose(ws->address());
  ExpectOrderAndSkips(checks);
  EXPECT_EQ(FailedStep(checks), "") << RenderChecks(checks);
  for (const auto& c : checks) EXPECT_EQ(c.verdict, Verdict::kOk) << RenderChecks(checks);
  EXPECT_EQ(ws->last_node_name(), "edge-1");
  EXPECT_EQ(ws->WaitForFrame(milliseconds(1000)), json::EncodeBareHeader({}));
}

TEST(DoctorGm, WithoutWebsocketStopsAfterTcpAndNeverUpgrades) {
  auto ws = testing::WsTestServer::Start();
  ASSERT_TRUE(ws);
  GmProbeOptions o;
  o.address = ws->address();
  o.node_name = "edge-1";
  o.websocket = false;
  auto checks = DiagnoseGmConnect(o);
  ExpectOrderAndSkips(checks);
  EXPECT_EQ(checks[2].verdict, Verdict::kOk) << RenderChecks(checks);
  EXPECT_EQ(checks[3].verdict, Verdict::kSkip);
  EXPECT_EQ(checks[4].verdict, Verdict::kSkip);
  EXPECT_EQ(ws->connection_count(), 0);  // no upgrade was sent (it counts before answering)
}

TEST(DoctorGm, LogLinesForTheDaemonNameTheFailedStepAndItsFix) {
  const std::string port = std::to_string(ClosedPort());
  auto lines = DiagnoseGmForLog("127.0.0.1:" + port, "edge-1", milliseconds(2000));
  ASSERT_EQ(lines.size(), 3u);  // address, dns, tcp; the skipped steps are not logged
  EXPECT_EQ(lines[0], "ok address: host 127.0.0.1, port " + port);
  EXPECT_EQ(lines[2].rfind("FAIL tcp: 127.0.0.1:" + port + " refused; fix: nothing listens", 0), 0u)
      << lines[2];
  lines = DiagnoseGmForLog("gm.sedna:9000/", "edge-1", milliseconds(2000));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("FAIL address: \"gm.sedna:9000/\" has a path; fix: ", 0), 0u)
      << lines[0];
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class DoctorLocal : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::filesystem::temp_directory_path() /
           ("doctor_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(tmp_);
    std::filesystem::create_directories(tmp_ / "rootfs" / "etc");
    std::filesystem::create_directories(tmp_ / "lc");
    o_.rootfs = (tmp_ / "rootfs").string();
    o_.db_path = (tmp_ / "lc" / "database.db").string();
    o_.bind_address = "127.0.0.1";
    o_.bind_port = ClosedPort();
    o_.status_port = 0;
  }
  void TearDown() override {
    std::filesystem::permissions(tmp_ / "lc", std::filesystem::perms::owner_all);
    std::filesystem::remove_all(tmp_);
  }
  const Check& Named(const std::vector<Check>& checks, const std::string& name) {
    for (const auto& c : checks) {
      if (c.name == name) return c;
    }
    static Check none{"(missing)", Verdict::kSkip, "", ""};
    ADD_FAILURE() << "no check " << name;
    return none;
  }
  std::filesystem::path tmp_;
  LocalCheckOptions o_;
};

TEST_F(DoctorLocal, AllGood) {
  auto checks = DiagnoseLocal(o_);
  EXPECT_FALSE(AnyFailed(checks)) << RenderChecks(checks);
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_EQ(checks[0].name, "rootfs");
  EXPECT_EQ(checks[1].name, "database");
  EXPECT_EQ(checks[2].name, "worker port");
  EXPECT_EQ(checks[3].name, "clock");
  EXPECT_NE(Named(checks, "clock").detail.find("UTC"), std::string::npos);
}

TEST_F(DoctorLocal, RootfsMissingOrEmptyFails) {
  o_.rootfs = (tmp_ / "nope").string();
  EXPECT_EQ(Named(DiagnoseLocal(o_), "rootfs").verdict, Verdict::kFail);
  std::filesystem::create_directories(tmp_ / "empty");
  o_.rootfs = (tmp_ / "empty").string();
  auto c = Named(DiagnoseLocal(o_), "rootfs");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_NE(c.detail.find("neither etc/ nor proc/"), std::string::npos) << c.detail;
}

TEST_F(DoctorLocal, DatabaseDirectoryNotWritableFails) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  std::filesystem::permissions(
      tmp_ / "lc", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_EQ(Named(DiagnoseLocal(o_), "database").verdict, Verdict::kFail);
}

TEST_F(DoctorLocal, DatabaseUnderAFileFails) {
  std::ofstream(tmp_ / "lc" / "file") << "x";
  o_.db_path = (tmp_ / "lc" / "file" / "sub" / "database.db").string();
  auto c = Named(DiagnoseLocal(o_), "database");
  EXPECT_EQ(c.verdict, Verdict::kFail) << c.detail;
  EXPECT_NE(c.detail.find("is not a directory"), std::string::npos) << c.detail;
  o_.db_path = (tmp_ / "lc" / "new" / "sub" / "database.db").string();
  c = Named(DiagnoseLocal(o_), "database");
  EXPECT_EQ(c.verdict, Verdict::kOk) << c.detail;
  EXPECT_NE(c.detail.find("will create it"), std::string::npos) << c.detail;
}

TEST_F(DoctorLocal, DatabaseLockedByAnotherDaemonWarns) {
  const int fd = ::open((o_.db_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  // flock locks belong to the open file description: a second open() conflicts with it.
  auto c = Named(DiagnoseLocal(o_), "database");
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.detail;
  EXPECT_NE(c.detail.find("holds"), std::string::npos) << c.detail;
  ::close(fd);
  EXPECT_EQ(Named(DiagnoseLocal(o_), "database").verdict, Verdict::kOk);
}

TEST_F(DoctorLocal, WorkerPortInUseFails) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  o_.bind_port = ntohs(sa.sin_port);
  auto c = Named(DiagnoseLocal(o_), "worker port");
  ::close(fd);
  EXPECT_EQ(c.verdict, Verdict::kFail) << c.detail;
  EXPECT_NE(c.detail.find("in use"), std::string::npos) << c.detail;
}

TEST_F(DoctorLocal, BadTimezoneFails) {
  o_.timezone = "Mars/Olympus";
  auto c = Named(DiagnoseLocal(o_), "clock");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_NE(c.detail.find("Mars/Olympus"), std::string::npos) << c.detail;
}

TEST_F(DoctorLocal, BinaryProbesUnderAnotherNodeNameBesideARunningDaemon) {
  auto ws = testing::WsTestServer::Start();
  ASSERT_TRUE(ws);
  const int fd = ::open((o_.db_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as the running daemon holds it
  const std::string log = (tmp_ / "run.log").string();
  const int rc = testing::LcProcess(std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
                                    {{"NODENAME", "edge-1"}, {"GM_ADDRESS", ws->address()}},
                                    {"doctor", "--rootfs", o_.rootfs, "--db", o_.db_path,
                                     "--bind-address", "127.0.0.1", "--bind-port",
                                     std::to_string(ClosedPort()), "--status-port", "0"},
                                    log)
                     .Wait();
  ::close(fd);
  const std::string out = ReadAll(log);
  EXPECT_EQ(rc, 0) << out;  // a held database is a warning
  EXPECT_NE(out.find("warn  database"), std::string::npos) << out;
  EXPECT_EQ(ws->last_node_name(), "edge-1-doctor") << out;
}

// The daemon's own log says what the doctor would on its first failed connect ([D:I16.6]):
// the failed step and what to do about it, once, not at every reconnect.
TEST_F(DoctorLocal, DaemonLogsTheDiagnosisOnItsFirstFailedConnect) {
  const std::string port = std::to_string(ClosedPort());
  const std::string log = (tmp_ / "daemon.log").string();
  testing::LcProcess lc(
      std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
      {{"NODENAME", "edge-1"}, {"GM_ADDRESS", "127.0.0.1:" + port}},
      {"--rootfs", o_.rootfs, "--db", o_.db_path, "--bind-address", "127.0.0.1", "--bind-port",
       std::to_string(ClosedPort()), "--status-port", "0", "--backoff-max-ms", "200"},
      log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string out;
  while (std::chrono::steady_clock::now() < deadline) {
    out = lc.Log();
    if (out.find("doctor: FAIL tcp") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a log file
  }
  ASSERT_NE(out.find("doctor: FAIL tcp"), std::string::npos) << out;
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
  EXPECT_NE(out.find("fix:"), std::string::npos) << out;
  // Several reconnects later, still one diagnosis.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  out = lc.Log();
  size_t n = 0;
  for (size_t at = 0; (at = out.find("doctor: FAIL tcp", at)) != std::string::npos; ++at) ++n;
  EXPECT_EQ(n, 1u) << out;
  EXPECT_EQ(lc.Stop(), 0);
}

// The binary: exit 0 and every line ok against a working GM; exit 1 naming the failed step.
TEST_F(DoctorLocal, BinaryExitsZeroWhenAllPassAndOneNamingTheFailedStep) {
  auto ws = testing::WsTestServer::Start();
  ASSERT_TRUE(ws);
  const std::string bin = std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
  const std::vector<std::string> local = {
      "--rootfs",       o_.rootfs,   "--db",        o_.db_path,
      "--bind-address", "127.0.0.1", "--bind-port", std::to_string(ClosedPort()),
      "--status-port",  "0"};
  std::vector<std::string> args = {"doctor"};
  args.insert(args.end(), local.begin(), local.end());
  const std::string log = (tmp_ / "ok.log").string();
  int rc =
      testing::LcProcess(bin, {{"NODENAME", "edge-1"}, {"GM_ADDRESS", ws->address()}}, args, log)
          .Wait();
  std::string out = ReadAll(log);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok    first frame"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;

  args.push_back("--gm-address=127.0.0.1:" + std::to_string(ClosedPort()));
  const std::string log2 = (tmp_ / "fail.log").string();
  rc = testing::LcProcess(bin, {{"NODENAME", "edge-1"}, {"GM_ADDRESS", ws->address()}}, args, log2)
           .Wait();
  out = ReadAll(log2);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("FAIL  tcp"), std::string::npos) << out;
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
  EXPECT_NE(out.find("fix: "), std::string::npos) << out;
  EXPECT_NE(out.find("skip  websocket"), std::string::npos) << out;
}

}  // namespace
}  // namespace sedna::app
