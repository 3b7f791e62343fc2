# Lifelong-learning jobs end to end, and joint-inference / federated-learning pass-through: the
# sedna-lc binary against the GM emulator (included by CMakeLists.txt beside this file).
add_executable(ll_cluster_test ll_cluster_test.cc)
target_link_libraries(ll_cluster_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(ll_cluster_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(ll_cluster_test sedna-lc)
sedna_discover_tests(ll_cluster_test)

add_executable(passthrough_test passthrough_test.cc)
target_link_libraries(passthrough_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(passthrough_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(passthrough_test sedna-lc)
gtest_discover_tests(passthrough_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
