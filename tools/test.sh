#!/usr/bin/env bash
# The test command: installs what is missing, fails on a clang-format violation, builds the debug
# preset (clang, ASan + UBSan) and runs every test with CTest under it but the packaging ones,
# then builds the release sedna-lc and runs the packaging tests against it (docs/quality.md).
# Usage: tools/test.sh [ctest args...] (given to both ctest runs).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the build needs first; what only the tests need (a browser, podman, packaging tools) just
# before they run (.ci/run installs it beside the build).
bash tools/setup.sh --test-build

echo "== format check (clang-format, .clang-format)"
mapfile -t files < <(git ls-files '*.h' '*.cc' 2>/dev/null || find src tests bench -name '*.h' -o -name '*.cc')
if [ ${#files[@]} -gt 0 ]; then
  clang-format --dry-run --Werror "${files[@]}"
fi
echo "format: ${#files[@]} files clean"

echo "== build (preset debug: clang, ASan + UBSan)"
cmake --preset debug >/dev/null
cmake --build --preset debug -j "$(nproc)"

bash tools/setup.sh --tests
# The longest tests' last durations (tests/ctest-cost-data.txt), so that CTest starts them first
# on a fresh build directory instead of last; CTest keeps the file up to date from then on.
cost=build/debug/Testing/Temporary/CTestCostData.txt
if [ ! -f "$cost" ]; then
  mkdir -p "$(dirname "$cost")"
  cp tests/ctest-cost-data.txt "$cost"
fi
echo "== tests (every test but the packaging ones, under ASan + UBSan)"
ctest --preset debug -j "$(nproc)" "$@"

# The packaging tests check what ships (size, the image's chroot, the .deb): the release binary.
echo "== build (preset release: sedna-lc and il_demo, for the packaging tests)"
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sedna-lc il_demo
echo "== packaging tests (label packaging, release build)"
ctest --preset release -L '^packaging$' "$@"
