#!/usr/bin/env bash
# Builds the sedna-lc container image with no container engine: the release binary, then an OCI
# image layout in build/image/oci (packaging/image/build_image.py), and prints its compressed size.
# Load it with skopeo (docs/deploy.md), e.g. into a node's containerd:
#   skopeo copy oci:build/image/oci:<version> docker-archive:sedna-lc.tar:sedna-lc:<version>
#   ctr -n k8s.io images import sedna-lc.tar
# Usage: tools/build_image.sh [output dir]     (default build/image/oci)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/image/oci}"
if [ ! -f build/release/build.ninja ]; then
  cmake --preset release -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" >/dev/null
fi
nice -n 15 cmake --build build/release --target sedna-lc
python3 packaging/image/build_image.py oci --binary build/release/sedna-lc --out "$out"
