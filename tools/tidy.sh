#!/usr/bin/env bash
# clang-tidy (.clang-tidy's checks) over the project's own sources, with the compile database of
# the debug preset (configures it if needed). Fails on any finding. Usage: tools/tidy.sh [files...]
# (default: every src/ and tests/ file in the compile database).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests
db=build/debug/compile_commands.json
[ -f "$db" ] || cmake --preset debug >/dev/null
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(python3 -c '
import json, os, sys
root = os.getcwd() + "/"
for f in sorted({e["file"] for e in json.load(open(sys.argv[1]))}):
    rel = f[len(root):] if f.startswith(root) else f
    if rel.startswith(("src/", "tests/")):
        print(rel)' "$db")
fi
echo "== clang-tidy: ${#files[@]} files, $(nproc) jobs"
# One clang-tidy per file; xargs exits non-zero if any of them found something.
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p build/debug --quiet --extra-arg=-Wno-unknown-warning-option
echo "clang-tidy: ${#files[@]} files clean"
