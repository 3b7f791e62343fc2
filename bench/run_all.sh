#!/usr/bin/env bash
# Builds the release preset and runs every benchmark against the real sedna-lc binary, then prints
# a summary next to the design targets (design-notes §D2). Benchmarks print figures; nothing here
# passes or fails on a target. See docs/benchmarks.md.
#
#   bench/run_all.sh                      # build/release (cmake --preset release), full runs
#   QUICK=1 bench/run_all.sh              # shorter runs (50 trials, 1e6 lines only, 5 s wrk)
#   BUILD_DIR=build/h-bench bench/run_all.sh   # your own build dir (same flags as the preset)
#   LATENCY_ARGS=... RSS_ARGS=... POST_ARGS=... RESTART_ARGS=... STORE_ARGS=... JOURNAL_ARGS=... S3_ARGS=...
#                                         extra flags for each bench (see each source)
#
# Output of every bench goes to $OUT_DIR (default: a new /tmp/sedna-bench-run.XXXXXX).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build/release}
TARGETS=(sedna-lc latency_bench rss_bench worker_post_bench restart_bench store_bench journal_bench
  s3_bench)
if [[ "$BUILD_DIR" == build/release ]]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j2 --target "${TARGETS[@]}"
else
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target "${TARGETS[@]}"
fi

if ! command -v wrk >/dev/null; then
  echo "wrk not found: installing it (apt-get install -y wrk)"
  apt-get install -y wrk >/dev/null || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
fi

if [[ -n "${QUICK:-}" ]]; then
  LATENCY_DEFAULT="--trials=50"
  RSS_DEFAULT="--sizes=1e6 --idle-seconds=5"
  POST_DEFAULT="--duration=5"
  RESTART_DEFAULT="--reps=3"
  STORE_DEFAULT="--iters=1000 --full-iters=100"
  S3_DEFAULT="--polls=5 --model-mib=256"
else
  LATENCY_DEFAULT="--trials=200"
  RSS_DEFAULT="--sizes=1e6,1e7 --idle-seconds=10"
  POST_DEFAULT="--duration=10"
  RESTART_DEFAULT="--reps=7"
  STORE_DEFAULT="--iters=5000 --full-iters=300"
  S3_DEFAULT="--polls=10 --model-mib=1024"  # ~30 s; needs moto_server (pip install 'moto[server]')
fi

OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/sedna-bench-run.XXXXXX)}
mkdir -p "$OUT_DIR"
LC="$PWD/$BUILD_DIR/sedna-lc"

machine() {
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc:   $(nproc)"
  echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "memory:  $(free -g | awk '/^Mem:/{print $2 " GiB total, " $7 " GiB available"}')"
  echo "disk:    $(df -hT /tmp | awk 'NR==2{print $2 " (" $1 ") for /tmp"}')"
  echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "binary:  $LC"
}

run() {  # name, command...
  local name=$1
  shift
  echo
  echo "==== $name: $*"
  "$@" 2>&1 | tee "$OUT_DIR/$name.txt" || echo "RESULT $name FAILED (exit $?)" | tee -a "$OUT_DIR/$name.txt"
}

machine | tee "$OUT_DIR/machine.txt"
# shellcheck disable=SC2086  # word splitting of the flag strings is intended
run latency "$BUILD_DIR/bench/latency_bench" --lc="$LC" $LATENCY_DEFAULT ${LATENCY_ARGS:-}
# shellcheck disable=SC2086
run rss "$BUILD_DIR/bench/rss_bench" --lc="$LC" $RSS_DEFAULT ${RSS_ARGS:-}
# shellcheck disable=SC2086
run worker_post "$BUILD_DIR/bench/worker_post_bench" --lc="$LC" $POST_DEFAULT ${POST_ARGS:-}
# The same on one CPU: the LC's own CPU per report, without this VM's cross-CPU wakeups
# (docs/benchmarks.md, Session 21, "Two regimes").
# shellcheck disable=SC2086
run worker_post_pinned "$BUILD_DIR/bench/worker_post_bench" --lc="$LC" --cpu=0 $POST_DEFAULT ${POST_ARGS:-}
# shellcheck disable=SC2086
run restart "$BUILD_DIR/bench/restart_bench" --lc="$LC" $RESTART_DEFAULT ${RESTART_ARGS:-}
# shellcheck disable=SC2086
run store "$BUILD_DIR/bench/store_bench" $STORE_DEFAULT ${STORE_ARGS:-}
# shellcheck disable=SC2086
run journal "$BUILD_DIR/bench/journal_bench" ${JOURNAL_ARGS:-}
# shellcheck disable=SC2086
run s3 "$BUILD_DIR/bench/s3_bench" --lc="$LC" $S3_DEFAULT ${S3_ARGS:-}

echo
echo "==== summary (targets of docs/design-notes.md §D2; figures, not pass/fail)"
machine
cat <<'EOF'
targets: Train Ready p50 <= 20 ms, p99 <= 100 ms | idle RSS <= 6 MB (0 jobs), <= 10 MB (100 jobs)
         RSS <= 12 MB (1e6-line index), <= 16 MB (1e7) | idle CPU ~0 | worker POSTs >= 30 k/s
         restart-to-resumed, 100 jobs <= 1 s | store: durability cost per transition / message
         unchanged S3 index poll: 1 HEAD, 0 bytes | LC memory while uploading a 1 GiB model: flat
EOF
grep -h '^RESULT' "$OUT_DIR"/latency.txt "$OUT_DIR"/rss.txt "$OUT_DIR"/worker_post.txt \
  "$OUT_DIR"/restart.txt "$OUT_DIR"/store.txt "$OUT_DIR"/journal.txt "$OUT_DIR"/s3.txt | sed 's/^RESULT /  /'
echo "full output: $OUT_DIR"
