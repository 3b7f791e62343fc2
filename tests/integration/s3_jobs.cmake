# Jobs with datasets, outputs and models on S3: sedna-lc against the GM emulator and moto_server.
add_executable(s3_jobs_test s3_jobs_test.cc)
target_link_libraries(s3_jobs_test PRIVATE sedna_it_fixture sedna_s3 GTest::gtest GTest::gtest_main)
target_compile_definitions(s3_jobs_test PRIVATE SEDNA_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(s3_jobs_test sedna-lc)
gtest_discover_tests(s3_jobs_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
