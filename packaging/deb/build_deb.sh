#!/usr/bin/env bash
# Builds sedna-lc_<version>_<arch>.deb for standalone mode on a plain edge box: the binary
# (stripped), sedna-lc.service (a dedicated system user, systemd hardening, state in
# /var/lib/sedna-lc), /etc/sedna-lc/ (conffiles), sedna-lc(1) and the Debian docs. dpkg-deb only,
# no debhelper. The version is packaging/version.sh's (CMakeLists.txt project VERSION); the
# architecture is the binary's (x86-64 -> amd64, AArch64 -> arm64).
#
# Usage: build_deb.sh <sedna-lc binary> <output dir> [--help-binary B]
#   --help-binary: a sedna-lc runnable here, for the man page's option list (default: the binary
#                  itself; pass the host build when packaging a cross-built binary).
# Env: STRIP (default: strip, or aarch64-linux-gnu-strip for arm64), DEB_MAINTAINER.
# Prints the path of the .deb.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
binary="$(realpath "$1")" out="$2"; shift 2
help_binary="$binary"
while [ $# -gt 0 ]; do
  case "$1" in
    --help-binary) help_binary="$(realpath "$2")"; shift 2 ;;
    *) echo "build_deb: unknown argument $1" >&2; exit 2 ;;
  esac
done

version="$("$root/packaging/version.sh")"
machine="$(LC_ALL=C readelf -h "$binary" | sed -n 's/^ *Machine: *//p')"
case "$machine" in
  "Advanced Micro Devices X86-64") arch=amd64 strip_default=strip ;;
  AArch64) arch=arm64 strip_default=aarch64-linux-gnu-strip ;;
  *) echo "build_deb: $binary: unsupported machine '$machine'" >&2; exit 1 ;;
esac
maintainer="${DEB_MAINTAINER:-sedna-lc developers <sedna-lc@example.org>}"
# Reproducible: file times and the changelog date are the last commit's.
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}"

mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pkg="$work/pkg"
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" \
  "$pkg/etc/sedna-lc/manifests" "$pkg/usr/share/man/man1" "$pkg/usr/share/doc/sedna-lc" \
  "$pkg/usr/share/lintian/overrides"

"${STRIP:-$strip_default}" --strip-all --remove-section=.comment --remove-section=.note \
  -o "$pkg/usr/bin/sedna-lc" "$binary"
chmod 0755 "$pkg/usr/bin/sedna-lc"
install -m 0644 "$here/sedna-lc.service" "$pkg/lib/systemd/system/sedna-lc.service"
install -m 0644 "$here/sedna-lc.conf" "$pkg/etc/sedna-lc/sedna-lc.conf"
install -m 0644 "$here/manifests-README" "$pkg/etc/sedna-lc/manifests/README"
install -m 0644 "$here/copyright" "$pkg/usr/share/doc/sedna-lc/copyright"
install -m 0644 "$here/lintian-overrides" "$pkg/usr/share/lintian/overrides/sedna-lc"

date_iso="$(date -u -d "@$epoch" +%Y-%m-%d)"
python3 "$here/make_manpage.py" --help-binary "$help_binary" --version "$version" \
  --date "$date_iso" > "$work/sedna-lc.1"
gzip -9n < "$work/sedna-lc.1" > "$pkg/usr/share/man/man1/sedna-lc.1.gz"
cat > "$work/changelog" <<EOF
sedna-lc ($version) unstable; urgency=medium

  * Built from the sedna-lc source tree (packaging/deb/build_deb.sh).

 -- $maintainer  $(date -u -R -d "@$epoch")
EOF
gzip -9n < "$work/changelog" > "$pkg/usr/share/doc/sedna-lc/changelog.gz"

for s in postinst prerm postrm; do install -m 0755 "$here/$s" "$pkg/DEBIAN/$s"; done
printf '/etc/sedna-lc/sedna-lc.conf\n/etc/sedna-lc/manifests/README\n' > "$pkg/DEBIAN/conffiles"

# Depends from the binary's shared libraries (dpkg-shlibdeps wants a debian/control to read).
mkdir -p "$work/src/debian"
printf 'Source: sedna-lc\n\nPackage: sedna-lc\nArchitecture: any\n' > "$work/src/debian/control"
shlibs="$(cd "$work/src" && dpkg-shlibdeps -O -e"$pkg/usr/bin/sedna-lc" 2>/dev/null |
          sed -n 's/^shlibs:Depends=//p')"
[ -n "$shlibs" ] || { echo "build_deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

installed_size="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
cat > "$pkg/DEBIAN/control" <<EOF
Package: sedna-lc
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $shlibs, adduser
Recommends: libcurl4, libssl3, python3, tzdata
Section: net
Priority: optional
Description: Local Controller for KubeEdge Sedna, standalone mode
 sedna-lc runs incremental- and lifelong-learning jobs on an edge node: it
 watches each job's dataset index grow, fires the training trigger, writes the
 round's train and eval samples, runs the workers and deploys a new model only
 when it beats the deployed one.
 .
 This package runs it as a systemd service in standalone mode, with no
 Kubernetes and no Global Manager: the jobs are the Sedna manifests in
 /etc/sedna-lc/manifests/ and the workers are local processes. libcurl and
 libssl are needed only for S3 URLs (loaded on first use); python3 for the
 usual Python workers.
EOF
(cd "$pkg" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
  xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/md5sums" "$pkg/DEBIAN/conffiles"
find "$pkg" -exec touch -h -d "@$epoch" {} +

deb="$out/sedna-lc_${version}_${arch}.deb"
SOURCE_DATE_EPOCH="$epoch" dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
