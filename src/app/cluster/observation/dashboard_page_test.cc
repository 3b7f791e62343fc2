// DashboardPage() is dashboard_page.html, byte for byte.
#include "app/cluster/observation/dashboard_page.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace sedna::app {
namespace {

TEST(DashboardPageTest, IsTheFileByteForByte) {
  const std::string path =
      std::string(SEDNA_SOURCE_DIR) + "/src/app/cluster/observation/dashboard_page.html";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(file.empty());
  EXPECT_EQ(DashboardPage().size(), file.size());
  EXPECT_EQ(DashboardPage(), file);
}

}  // namespace
}  // namespace sedna::app
