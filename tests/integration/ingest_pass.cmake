# One pass over a Dataset's index for its count and all its jobs (bytes read per byte appended).
add_executable(ingest_pass_test ${CMAKE_CURRENT_LIST_DIR}/ingest_pass_test.cc)
target_link_libraries(ingest_pass_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(ingest_pass_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(ingest_pass_test sedna-lc)
gtest_discover_tests(ingest_pass_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
