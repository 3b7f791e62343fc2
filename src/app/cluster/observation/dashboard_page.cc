// The dashboard page (dashboard_page.h): the bytes of dashboard_page.html, which the build
// compiles in (cmake/embed.cmake writes them as kDashboardPage).
#include "app/cluster/observation/dashboard_page.h"

#include <cstddef>

namespace sedna::app {

namespace embedded {
extern const unsigned char kDashboardPage[];
extern const std::size_t kDashboardPageSize;
}  // namespace embedded

std::string_view DashboardPage() {
  return {reinterpret_cast<const char*>(embedded::kDashboardPage), embedded::kDashboardPageSize};
}

}  // namespace sedna::app
