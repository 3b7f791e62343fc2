#!/usr/bin/env bash
# clang-tidy (.clang-tidy's checks) over the project's own sources: every src/ and tests/ file in
# the debug preset's compile database except the GoogleTest files (*_test.cc; they cost half the
# time and ship nothing). Headers are checked through the files that include them. Configures
# the preset if needed; fails on any finding. Usage: tools/tidy.sh [files...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --test-build  # clang-tidy; not --tests: .ci/run installs those beside this
# SEDNA_TIDY_DB: a compile database to read instead (.ci/run passes a copy of its own).
db=${SEDNA_TIDY_DB:-build/debug/compile_commands.json}
[ -f "$db" ] || cmake --preset debug >/dev/null
# version.cc includes a header the build generates.
[ -f build/debug/generated/sedna_git_commit.h ] ||
  cmake --build --preset debug --target sedna_git_commit >/dev/null
# A copy of the database: a build running beside this one (.ci/run) may rewrite it.
dbdir=$(mktemp -d)
trap 'rm -rf "$dbdir"' EXIT
cp "$db" "$dbdir/compile_commands.json"
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(python3 -c '
import json, os, sys
root = os.getcwd() + "/"
for f in sorted({e["file"] for e in json.load(open(sys.argv[1]))}):
    rel = f[len(root):] if f.startswith(root) else f
    if rel.startswith(("src/", "tests/")) and not rel.endswith("_test.cc"):
        print(rel)' "$db")
fi
echo "== clang-tidy: ${#files[@]} files, $(nproc) jobs"
start=$SECONDS
# One clang-tidy per file; xargs exits non-zero if any of them found something.
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$dbdir" --quiet --extra-arg=-Wno-unknown-warning-option
echo "clang-tidy: ${#files[@]} files clean in $((SECONDS - start)) s"
