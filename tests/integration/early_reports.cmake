# Reports for jobs not known yet ([D:I23.5]): the bounds, their 503s and the expiry.
add_executable(early_reports_cluster_test early_reports_cluster_test.cc)
target_link_libraries(early_reports_cluster_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(early_reports_cluster_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(early_reports_cluster_test sedna-lc)
gtest_discover_tests(early_reports_cluster_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
