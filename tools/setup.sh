#!/usr/bin/env bash
# Installs every Debian package sedna-lc needs to build, test and run its examples.
# Idempotent: does nothing when everything is present. Needs root (or sudo) for apt-get.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build clang-format pkg-config lld-16
  libboost-dev nlohmann-json3-dev libyaml-cpp-dev libsqlite3-dev
  libcurl4-openssl-dev libssl-dev libspdlog-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-sklearn tzdata
)
# lld-16 links the release sedna-lc (its link order, packed relocations: CMakeLists.txt); Debian's
# default `lld` (14, beside clang 14's own LLVM) links the test builds.
# The test build (tools/test.sh, tools/tsan.sh: the debug and tsan presets build with clang and
# lld, clang's sanitizer runtimes are in libclang-rt-14-dev) and clang-tidy (tools/tidy.sh):
# --test-build.
# Only running the tests needs the rest (--tests, which includes --test-build): the image, .deb
# and manifest checks of tests/packaging (umoci, lintian, dpkg-dev, systemd-analyze, man, the
# Kubernetes API models), the dashboard's browser test (chromium), the image under a container
# runtime (container_podman: podman with runc; 13 packages, 21 MB, about 1 min to install).
case "${1:-}" in
  --test-build) PACKAGES+=(clang lld libclang-rt-14-dev clang-tidy) ;;
  --tests)
    PACKAGES+=(clang lld libclang-rt-14-dev clang-tidy umoci lintian dpkg-dev systemd man-db
               python3-kubernetes python3-yaml chromium podman runc)
    ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "setup: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
