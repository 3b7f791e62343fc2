# IO faults ([D:I4.5]): the sedna-lc binary against the GM emulator with a small tmpfs
# mounted on the output directory, the deploy target's directory or the spool directory and filled
# up. Needs root for mount(2); each test skips itself with a reason otherwise.
add_executable(io_faults_test ${CMAKE_CURRENT_LIST_DIR}/io_faults_test.cc)
target_link_libraries(io_faults_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(io_faults_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(io_faults_test sedna-lc)
gtest_discover_tests(io_faults_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
