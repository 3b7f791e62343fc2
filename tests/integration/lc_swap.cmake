# The swap Go LC -> sedna-lc -> Go LC on one node: the Go LC's database is never opened or
# changed (a fixture of the Go LC v0.7.0's database; SEDNA_TEST_GO_LC runs the real one).
add_executable(lc_swap_test ${CMAKE_CURRENT_LIST_DIR}/lc_swap_test.cc)
target_link_libraries(lc_swap_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(lc_swap_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}"
                                                SEDNA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(lc_swap_test sedna-lc)
gtest_discover_tests(lc_swap_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 180)
