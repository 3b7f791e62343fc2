#!/usr/bin/env bash
# ThreadSanitizer over the tests that exercise the pool, the event loop and the other threads
# (ctest label `tsan`, the list SEDNA_TSAN_TESTS in CMakeLists.txt): builds the tsan preset's
# target sedna_tsan_tests (those test binaries and sedna-lc) and runs them (test preset tsan).
# A race report fails the test: TSan stops the process (halt_on_error). Usage: tools/tsan.sh
# [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests
echo "== build (preset tsan, target sedna_tsan_tests)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$(nproc)" --target sedna_tsan_tests
echo "== tests (label tsan)"
ctest --preset tsan -j "$(nproc)" "$@"
