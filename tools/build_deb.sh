#!/usr/bin/env bash
# Builds build/deb/sedna-lc_<version>_<arch>.deb from the release binary and runs lintian on it.
# Usage: tools/build_deb.sh [sedna-lc binary]   (default: build/release/sedna-lc, built if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-}"
if [ -z "$bin" ]; then
  if [ ! -f build/release/build.ninja ]; then
    cmake --preset release -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" >/dev/null
  fi
  nice -n 15 cmake --build build/release --target sedna-lc
  bin=build/release/sedna-lc
fi
deb="$(packaging/deb/build_deb.sh "$bin" build/deb)"
echo "$deb"
if command -v lintian >/dev/null; then lintian "$deb"; fi
