# The status server's refusals on a running sedna-lc ([D:I21.8]): Host names and methods.
add_executable(status_server_test ${CMAKE_CURRENT_LIST_DIR}/status_server_test.cc)
target_link_libraries(status_server_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(status_server_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(status_server_test sedna-lc)
gtest_discover_tests(status_server_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
