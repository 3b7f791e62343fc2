add_executable(startup_errors_test ${CMAKE_CURRENT_LIST_DIR}/startup_errors_test.cc)
target_link_libraries(startup_errors_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main
                                                  SQLite::SQLite3)
target_compile_definitions(startup_errors_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(startup_errors_test sedna-lc)
gtest_discover_tests(startup_errors_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
