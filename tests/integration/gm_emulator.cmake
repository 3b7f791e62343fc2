# Self-tests of the GM emulator's G2, multi-node and [P:R1] modes (raw websocket clients), and two
# sedna-lc processes against one emulator.
add_executable(gm_emulator_test gm_emulator_test.cc)
target_link_libraries(gm_emulator_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(gm_emulator_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(gm_emulator_test sedna-lc)
gtest_discover_tests(gm_emulator_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
