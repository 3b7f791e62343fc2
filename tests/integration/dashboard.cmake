# The dashboard in headless Chromium (dashboard_browser_test.py): a standalone run of the digits
# example with the page open while 3 rounds happen; the screenshot is kept as
# <build>/dashboard_browser/dashboard.png. Skipped (77) only when chromium is not installed
# (tools/setup.sh --tests installs it).
add_test(NAME dashboard_browser
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/dashboard_browser_test.py
                 $<TARGET_FILE:sedna-lc> ${CMAKE_BINARY_DIR}/dashboard_browser --rounds 3)
set_tests_properties(dashboard_browser PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

# The round history, the feed and the per-job gauges in cluster mode, and after a restart.
add_executable(dashboard_cluster_test ${CMAKE_CURRENT_LIST_DIR}/dashboard_cluster_test.cc)
target_link_libraries(dashboard_cluster_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(dashboard_cluster_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}"
                                                   SEDNA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_dependencies(dashboard_cluster_test sedna-lc)
gtest_discover_tests(dashboard_cluster_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
