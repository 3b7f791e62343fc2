# docs/protocol.md §P8.5 items that need the whole daemon: the sedna-lc binary against a GM that
# can go away, worker POSTs, and the SQLite file read directly.
add_executable(il_bugs_test ${CMAKE_CURRENT_LIST_DIR}/il_bugs_test.cc)
target_link_libraries(il_bugs_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main
                                           SQLite::SQLite3)
target_compile_definitions(il_bugs_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(il_bugs_test sedna-lc)
gtest_discover_tests(il_bugs_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
