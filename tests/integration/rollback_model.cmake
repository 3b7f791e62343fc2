# `sedna-lc rollback-model`: the binary lists and restores kept model versions; bad arguments exit 2.
add_executable(rollback_model_test ${CMAKE_CURRENT_LIST_DIR}/rollback_model_test.cc)
target_link_libraries(rollback_model_test PRIVATE sedna_it_fixture sedna_storage GTest::gtest GTest::gtest_main)
target_compile_definitions(rollback_model_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(rollback_model_test sedna-lc)
gtest_discover_tests(rollback_model_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
