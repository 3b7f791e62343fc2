#include "app/cli/rootfs_access.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sedna::app {
namespace {

namespace stdfs = std::filesystem;

class RootfsAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sedna-rootfs-access-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { stdfs::remove_all(dir); }
  std::string dir;
};

TEST_F(RootfsAccessTest, NoRootfsOrAReadableOneIsFine) {
  const std::string file = dir + "/file";
  ASSERT_EQ(::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  for (const std::string& rootfs : {std::string(), dir + "/absent", file, dir}) {
    SCOPED_TRACE(rootfs);
    EXPECT_TRUE(CheckRootfsAccess(rootfs).ok());
  }
}

// As uid/gid 65534 (root's child drops to it): a directory it may not search (0700, 0744) is
// refused with the path and the uid named; one it may search (0755, 0711) is accepted.
TEST_F(RootfsAccessTest, AnotherUidWithoutAccessIsNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as uid 65534";
  const std::string rootfs = dir + "/rootfs";
  ASSERT_TRUE(stdfs::create_directory(rootfs));
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  struct Case {
    mode_t mode;
    bool ok;
  };
  for (const Case& c : {Case{0700, false}, Case{0755, true}, Case{0711, true}, Case{0744, false}}) {
    SCOPED_TRACE(c.mode);
    ASSERT_EQ(::chmod(rootfs.c_str(), c.mode), 0);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      const Status s = CheckRootfsAccess(rootfs);
      const std::string& m = s.message();
      if (!m.empty() && ::write(fds[1], m.data(), m.size()) < 0) ::_exit(4);
      ::_exit(s.ok() ? 0 : 1);
    }
    ::close(fds[1]);
    std::string message;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, n);
    ::close(fds[0]);
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), c.ok ? 0 : 1) << message;
    if (!c.ok) {
      EXPECT_NE(message.find("rootfs " + rootfs + " (ROOTFS_MOUNT_DIR)"), std::string::npos)
          << message;
      EXPECT_NE(message.find("as uid 65534 gid 65534"), std::string::npos) << message;
      EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace sedna::app
