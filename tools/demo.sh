#!/usr/bin/env bash
# The main job: installs what is missing, builds (release preset), and runs the incremental
# learning demo: the real sedna-lc against a GM emulator, with scikit-learn train/eval workers,
# for 3 rounds (or $1). Prints each round as it happens and a summary table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sedna-lc il_demo
exec build/release/tests/integration/il_demo build/release/sedna-lc \
  examples/incremental_learning/digits "${1:-3}"
