# The randomised crash campaign (docs/durability.md, [D:I4]): the sedna-lc binary driven through
# many IL and LL rounds by the GM emulator while it is killed with SIGKILL at random moments.
# Fast by default (CI); SEDNA_CRASH_KILLS=60 for the long run, SEDNA_CRASH_SEED to replay a seed.
add_executable(crash_campaign_test ${CMAKE_CURRENT_LIST_DIR}/crash_campaign_test.cc)
target_link_libraries(crash_campaign_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main
                                                  SQLite::SQLite3)
target_compile_definitions(crash_campaign_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(crash_campaign_test sedna-lc)
gtest_discover_tests(crash_campaign_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
