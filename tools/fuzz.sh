#!/usr/bin/env bash
# The fuzzing command (docs/fuzzing.md): installs what is missing (clang and libFuzzer on top of
# tools/setup.sh), configures build/fuzz with clang (SEDNA_FUZZ=ON: ASan+UBSan, libFuzzer),
# builds the harnesses in fuzz/ and runs each for FUZZ_SECONDS (default 20; one per core, side by
# side) over its seed corpus fuzz/corpus/<name>/. Fails when any harness finds a crash, a sanitizer report, a broken
# invariant, a timeout or an out-of-memory; the input is then in build/fuzz/crashes/<name>/.
#
# Usage: tools/fuzz.sh [name...]   (default: every harness)
#   FUZZ_SECONDS=N      seconds per harness (default 20)
#   FUZZ_BUILD_DIR=dir  build directory (default build/fuzz)
#   FUZZ_ARGS="..."     extra libFuzzer flags, e.g. "-seed=1234" or "-jobs=2 -workers=2"
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
BUILD=${FUZZ_BUILD_DIR:-build/fuzz}
ALL=(frame resource worker_body manifest http_request index_reader confined http_admission
     gm_messages)
if [ $# -gt 0 ]; then NAMES=("$@"); else NAMES=("${ALL[@]}"); fi

bash tools/setup.sh
# clang's libFuzzer and sanitizer runtimes are in libclang-rt-14-dev, which clang-14 only
# recommends (so `apt-get install --no-install-recommends clang` lacks -fsanitize=fuzzer).
PACKAGES=(clang libclang-rt-14-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
      echo "fuzz: missing packages (${missing[*]}) and not root; run as root" >&2
      exit 1
    fi
  fi
  echo "fuzz: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== configure $BUILD (clang, SEDNA_FUZZ=ON)"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1: the usual fuzzing trade-off (fast enough, readable stacks); asserts stay on. Tests,
# benchmarks and the lean link of sedna-lc are not needed here.
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS=-O1 \
  -DSEDNA_FUZZ=ON -DSEDNA_LEAN_BINARY=OFF -DSEDNA_BUILD_TESTS=OFF -DSEDNA_BUILD_BENCH=OFF \
  "${launcher[@]}" >/dev/null

echo "== build"
targets=()
for n in "${NAMES[@]}"; do targets+=("${n}_fuzz"); done
cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}"

# The harnesses run side by side, one per core; their logs are printed in order afterwards.
jobs="$(nproc)"
running=0
for n in "${NAMES[@]}"; do
  echo "== fuzz $n (${FUZZ_SECONDS}s)"
  # New inputs go to the work corpus (kept between runs), never into the seed corpus.
  work="$BUILD/corpus/$n"
  crashes="$BUILD/crashes/$n"
  mkdir -p "$work" "$crashes"
  rm -f "$BUILD/$n.rc"
  # shellcheck disable=SC2086
  ( rc=0
    "$BUILD/fuzz/${n}_fuzz" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$crashes/" -print_final_stats=1 ${FUZZ_ARGS:-} \
      "$work" "fuzz/corpus/$n" >"$BUILD/$n.log" 2>&1 || rc=$?
    echo "$rc" >"$BUILD/$n.rc" ) &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
for n in "${NAMES[@]}"; do
  if [ "$(cat "$BUILD/$n.rc" 2>/dev/null)" = "0" ]; then
    echo "fuzz $n:"
    grep -E '^(#[0-9]+\s+DONE|stat::number_of_executed_units)' "$BUILD/$n.log" || true
  else
    tail -n 60 "$BUILD/$n.log"
    echo "fuzz: $n FAILED; input in $BUILD/crashes/$n/, log $BUILD/$n.log" >&2
    failed+=("$n")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} harness(es) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#NAMES[@]} harness(es) clean, ${FUZZ_SECONDS}s each"
