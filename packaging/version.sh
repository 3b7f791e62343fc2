#!/bin/sh
# Prints the project version: the VERSION of project() in the top-level CMakeLists.txt, the one
# place it is written. Every packaging script takes it from here.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
v="$(sed -n 's/^project([A-Za-z0-9_]* VERSION \([0-9][0-9.]*\).*/\1/p' "$root/CMakeLists.txt" | head -n1)"
[ -n "$v" ] || { echo "version.sh: no project(... VERSION x.y.z) in $root/CMakeLists.txt" >&2; exit 1; }
echo "$v"
