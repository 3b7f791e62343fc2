#!/bin/sh
# Runs the sedna-lc of an unpacked image rootfs the way the LC DaemonSet (deploy/) runs it: in a
# private mount namespace, with the host's / bind-mounted at <rootfs>/rootfs and
# ROOTFS_MOUNT_DIR=/rootfs, /proc and /dev mounted, then chroot into the rootfs. Every step execs,
# so the process keeps this script's pid and the caller's signals reach sedna-lc.
#
# Usage (as root): lc_in_image.sh [--user UID:GID] [--db-volume HOSTDIR] <rootfs> [sedna-lc args]
#   --user       run sedna-lc as that user (a pod's runAsUser/runAsGroup)
#   --db-volume  bind-mount HOSTDIR at /var/lib/sedna (the database hostPath); without it a
#                "--db X" argument becomes "--db /rootfs/X": the database stays on the host.
set -eu
user="" volume=""
while :; do
  case "${1:-}" in
    --user) user="$2"; shift 2 ;;
    --db-volume) volume="$2"; shift 2 ;;
    *) break ;;
  esac
done
rootfs="$1"; shift
n=$#
while [ "$n" -gt 0 ]; do
  a="$1"; shift; n=$((n - 1))
  case "$a" in
    --db) if [ -z "$volume" ]; then set -- "$@" --db "/rootfs$1"; else set -- "$@" --db "$1"; fi
          shift; n=$((n - 1)) ;;
    --db=*) if [ -z "$volume" ]; then set -- "$@" "--db=/rootfs${a#--db=}"; else set -- "$@" "$a"; fi ;;
    *) set -- "$@" "$a" ;;
  esac
done
export ROOTFS_MOUNT_DIR=/rootfs
exec /usr/bin/unshare --mount --propagation private -- /bin/sh -c '
  r="$0" user="$1" volume="$2"; shift 2
  /bin/mkdir -p "$r/rootfs" "$r/proc" "$r/dev"
  /bin/mount --rbind / "$r/rootfs"
  /bin/mount -t proc proc "$r/proc"
  /bin/mount --rbind /dev "$r/dev"
  if [ -n "$volume" ]; then /bin/mount --bind "$volume" "$r/var/lib/sedna"; fi
  if [ -n "$user" ]; then
    exec /usr/sbin/chroot --userspec="$user" "$r" /usr/local/bin/sedna-lc "$@"
  fi
  exec /usr/sbin/chroot "$r" /usr/local/bin/sedna-lc "$@"' "$rootfs" "$user" "$volume" "$@"
