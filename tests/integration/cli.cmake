# `sedna-lc doctor`: each GM-link step against a local server that fails it, the local checks, and
# the binary's exit codes. Also the other subcommands' --help, --version and status output (cli_test).
add_executable(doctor_test ${CMAKE_CURRENT_LIST_DIR}/doctor_test.cc)
target_link_libraries(doctor_test PRIVATE sedna_cli sedna_gm_emulator GTest::gtest GTest::gtest_main)
target_compile_definitions(doctor_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(doctor_test sedna-lc)
gtest_discover_tests(doctor_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)

add_executable(cli_test ${CMAKE_CURRENT_LIST_DIR}/cli_test.cc)
target_link_libraries(cli_test PRIVATE sedna_store sedna_gm_emulator GTest::gtest GTest::gtest_main)
target_compile_definitions(cli_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(cli_test sedna-lc)
gtest_discover_tests(cli_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
