# [D:I23]: the image under podman (runc), the DaemonSet's way: an IL round and an LL round through
# the container, podman kill mid-round and a new container resuming, podman stop within the grace
# period, uid 65534. One CTest test (the image is built and loaded once), label "container";
# skipped with its reason where podman cannot run containers.
add_executable(container_test ${CMAKE_CURRENT_LIST_DIR}/container_test.cc)
target_link_libraries(container_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(container_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}"
                                                  SEDNA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_dependencies(container_test sedna-lc)
add_test(NAME container_podman COMMAND container_test)
set_tests_properties(container_podman PROPERTIES LABELS container TIMEOUT 600
                     SKIP_REGULAR_EXPRESSION "container tests skipped: ")
