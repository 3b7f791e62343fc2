#!/usr/bin/env bash
# The main job: installs what is missing, builds (release preset), and runs the standalone
# incremental-learning demo: `sedna-lc standalone` runs the digits job from its Sedna manifests
# with real scikit-learn train/eval/inference workers, while the dataset is streamed in batches.
# Each round is printed as it happens, then a summary table. Usage: tools/demo.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sedna-lc
exec /usr/bin/python3 examples/incremental_learning/digits/demo.py build/release/sedna-lc \
  --rounds "${1:-3}"
