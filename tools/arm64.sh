#!/usr/bin/env bash
# The arm64 build from scratch: installs Debian's arm64 cross toolchain, qemu-user and the :arm64
# dev packages, cross-builds sedna-lc with the arm64 preset (cmake/toolchain-aarch64.cmake) and
# runs its arm64 tests under qemu-aarch64: the unit tests and the lean-binary check (test preset
# arm64) and, unless --unit, il_cluster_test (preset arm64-integration: the arm64 test driver
# starts the arm64 sedna-lc through SEDNA_LC_WRAPPER=qemu-aarch64, as no binfmt_misc handler runs
# foreign binaries here). Tests that need Python workers are not run: Python is the host's.
# The arm64 test preset leaves out what fails under qemu-user 7.2 only, not on arm64 hardware:
#  - ExitWatch/ProcessRunnerTest.*: the fixture's prctl(PR_SET_CHILD_SUBREAPER) is EINVAL in qemu;
#  - LazyLibsTest.Missing*: the test hides the library `ldconfig -p` names first, the amd64 one;
#  - GmLinkTest.ABurstSentWithMoreArrivesWholeAndInOrder: fails about 1 run in 3 under qemu's
#    timing (Send("left-open") is refused; docs/benchmarks.md "arm64 (qemu-user)").
#  - HttpServerTest.AFloodFromRotatingAddresses* and IdleConnectionsFromTheWorkersAddress*: load
#    generators (thousands of connections, 2 s per try) whose client is emulated too; left out
#    as a precaution, not seen failing (the admission policy itself is admission_test's, kept).
# Idempotent; needs root for apt-get. Usage: tools/arm64.sh [--unit | --packages] [ctest args...]
# (--packages: steps 1-2 only, the packages; .ci/run installs them while another build runs.)
set -euo pipefail
cd "$(dirname "$0")/.."

unit_only=0
packages_only=0
if [ "${1:-}" = "--unit" ]; then
  unit_only=1
  shift
elif [ "${1:-}" = "--packages" ]; then
  packages_only=1
  shift
fi
start=$SECONDS
step() { echo "arm64: [$((SECONDS - start))s] $*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

step "1/6 host packages (tools/setup.sh)"
bash tools/setup.sh

step "2/6 arm64 cross toolchain, qemu-user and :arm64 dev packages"
# Header-only packages of architecture all (nlohmann-json3-dev, libcli11-dev) come from
# tools/setup.sh. Installing a Multi-Arch: same :arm64 package can upgrade its amd64 twin to the
# same version. libyaml-cpp-dev is not Multi-Arch: same (its :arm64 package would remove the amd64
# one): it is unpacked into build/deps-arm64 below instead (SEDNA_ARM64_DEPS in the toolchain).
PACKAGES=(crossbuild-essential-arm64 qemu-user
          libboost-dev:arm64 libsqlite3-dev:arm64 libcurl4-openssl-dev:arm64 libssl-dev:arm64
          libspdlog-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  echo "arm64: installing ${missing[*]}"
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "arm64: ${#PACKAGES[@]} packages present"

deps=build/deps-arm64
if [ ! -f "$deps/usr/lib/aarch64-linux-gnu/libyaml-cpp.a" ]; then
  rm -rf "$deps" && mkdir -p "$deps/debs"
  # The runtime package too: yaml-cpp's CMake targets file checks that the .so it names exists.
  (cd "$deps/debs" && apt-get download -q libyaml-cpp-dev:arm64 libyaml-cpp0.7:arm64 2>/dev/null)
  for d in "$deps"/debs/*.deb; do dpkg-deb -x "$d" "$deps"; done
fi
echo "arm64: yaml-cpp for arm64 in $deps"
if [ $packages_only = 1 ]; then
  step "packages done (--packages)"
  exit 0
fi

step "3/6 configure (preset arm64)"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset arm64 "${launcher[@]}" >/dev/null

step "4/6 build sedna-lc, the unit tests$([ $unit_only = 1 ] || echo ' and il_cluster_test')"
mapfile -t targets < <(find src -name '*_test.cc' -printf '%f\n' | sed 's/\.cc$//' | sort)
targets+=(sedna-lc)
if [ $unit_only = 0 ]; then targets+=(il_cluster_test); fi
cmake --build --preset arm64 -j "$(nproc)" --target "${targets[@]}"
file build/arm64/sedna-lc

step "5/6 unit tests and the lean-binary check under qemu-aarch64 (test preset arm64)"
ctest --preset arm64 -j "$(nproc)" "$@"

if [ $unit_only = 0 ]; then
  step "6/6 il_cluster_test under qemu-aarch64 (test preset arm64-integration)"
  ctest --preset arm64-integration "$@"
else
  step "6/6 skipped (--unit): il_cluster_test"
fi
step "done"
