#!/usr/bin/env bash
# Installs the outside oracles the tests use (btrfs-progs, fuse3, xfsprogs,
# attr, acl, fio, bonnie++) when missing. Needs root and the Debian package mirror; without
# root the tests that need them skip with a message.
set -u
need=()
command -v mkfs.btrfs >/dev/null || need+=(btrfs-progs)
command -v fusermount3 >/dev/null || need+=(fuse3)
command -v xfs_io >/dev/null || need+=(xfsprogs)
command -v setfattr >/dev/null || need+=(attr)
command -v fio >/dev/null || need+=(fio)
command -v getfacl >/dev/null || need+=(acl)
command -v bonnie++ >/dev/null || need+=(bonnie++) # gobtrfs bench bonnie
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "deps: missing ${need[*]} and not root; tests needing them will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y "${need[@]}" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y "${need[@]}" >/dev/null; }
