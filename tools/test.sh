#!/usr/bin/env bash
# The test command: installs what is missing, fails on a clang-format violation, builds the debug
# preset (ASan + UBSan) and runs every test with CTest under it but the packaging ones, then builds
# the release sedna-lc and runs the packaging tests against it (docs/quality.md). Usage:
# tools/test.sh [ctest args...] (given to both ctest runs).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh --tests

echo "== format check (clang-format, .clang-format)"
mapfile -t files < <(git ls-files '*.h' '*.cc' 2>/dev/null || find src tests bench -name '*.h' -o -name '*.cc')
if [ ${#files[@]} -gt 0 ]; then
  clang-format --dry-run --Werror "${files[@]}"
fi
echo "format: ${#files[@]} files clean"

echo "== build (preset debug: ASan + UBSan)"
cmake --preset debug >/dev/null
cmake --build --preset debug -j "$(nproc)"

echo "== tests (every test but the packaging ones, under ASan + UBSan)"
ctest --preset debug -j "$(nproc)" "$@"

# The packaging tests check what ships (size, the image's chroot, the .deb): the release binary.
echo "== build (preset release: sedna-lc and il_demo, for the packaging tests)"
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sedna-lc il_demo
echo "== packaging tests (label packaging, release build)"
ctest --preset release -L '^packaging$' "$@"
