# The GM evidence of docs/protocol.md §H3.1 through the real binary: /status "gm", the line of
# `sedna-lc status`, the log line, and the reset on a new connection.
add_executable(gm_evidence_cluster_test ${CMAKE_CURRENT_LIST_DIR}/gm_evidence_cluster_test.cc)
target_link_libraries(gm_evidence_cluster_test PRIVATE sedna_it_fixture GTest::gtest
                                                       GTest::gtest_main)
target_compile_definitions(gm_evidence_cluster_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(gm_evidence_cluster_test sedna-lc)
gtest_discover_tests(gm_evidence_cluster_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
