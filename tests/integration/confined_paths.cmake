# [D:I21.2], [D:I21.7] with the real sedna-lc and the GM emulator: links planted beside a deploy
# target or in a job's hot-update directory are never followed, and a hot-update annotation naming
# another namespace's directory is refused (nor removed on delete).
add_executable(confined_paths_test ${CMAKE_CURRENT_LIST_DIR}/confined_paths_test.cc)
target_link_libraries(confined_paths_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(confined_paths_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(confined_paths_test sedna-lc)
gtest_discover_tests(confined_paths_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
