# [D:I21]: a worker's reports and its writable output directory against the LC's file
# operations (a deep model URL, sample directories replaced by links, a model source swapped with
# a link while it is deployed).
add_executable(il_confined_test ${CMAKE_CURRENT_LIST_DIR}/il_confined_test.cc)
target_link_libraries(il_confined_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(il_confined_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(il_confined_test sedna-lc)
gtest_discover_tests(il_confined_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
