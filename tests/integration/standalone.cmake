# Standalone mode end to end: the real sedna-lc binary running jobs from YAML manifests written by
# the test, with tiny local workers (standalone_workers/worker.py), observed through /status.
add_executable(standalone_test ${CMAKE_CURRENT_LIST_DIR}/standalone_test.cc)
target_link_libraries(standalone_test PRIVATE sedna_it_fixture GTest::gtest GTest::gtest_main)
target_compile_definitions(
  standalone_test
  PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}"
          SEDNA_STANDALONE_WORKERS="${CMAKE_CURRENT_LIST_DIR}/standalone_workers"
          SEDNA_DIGITS_EXAMPLE="${CMAKE_SOURCE_DIR}/examples/incremental_learning/digits")
add_dependencies(standalone_test sedna-lc)
gtest_discover_tests(standalone_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)

# The digits example's hot-update inference worker against a stand-in LC (python, no daemon).
add_test(NAME digits_inference_hot_update
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/examples/incremental_learning/digits/inference_hot_test.py)
set_tests_properties(digits_inference_hot_update PROPERTIES TIMEOUT 120)
