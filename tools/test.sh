#!/usr/bin/env bash
# The test command: installs what is missing, builds the debug preset (ASan + UBSan, -Werror;
# docs/quality.md), runs every test with CTest under the sanitizers, and fails on a clang-format
# violation. Usage: tools/test.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh --tests

echo "== format check (clang-format, .clang-format)"
mapfile -t files < <(git ls-files '*.h' '*.cc' 2>/dev/null || find src tests bench -name '*.h' -o -name '*.cc')
if [ ${#files[@]} -gt 0 ]; then
  clang-format --dry-run --Werror "${files[@]}"
fi
echo "format: ${#files[@]} files clean"

echo "== build (preset debug: ASan + UBSan, -Werror)"
cmake --preset debug >/dev/null
cmake --build --preset debug -j "$(nproc)"

echo "== tests"
ctest --preset debug -j "$(nproc)" "$@"
