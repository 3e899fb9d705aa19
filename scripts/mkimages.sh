#!/usr/bin/env bash
# Builds a btrfs image with the Linux kernel (root + loop devices), exercising
# what mkfs.btrfs --rootdir cannot make: compressed extents (zstd, lzo, zlib,
# including inline and partially overwritten ones), snapshots (read-write and
# read-only, with nested subvolumes left behind as placeholders), reflinks,
# preallocated and punched ranges, NODATACOW files, truncations, a 5000-file
# directory, hard links, xattrs, fifos, devices and odd nanosecond times.
#
# usage: scripts/mkimages.sh IMAGE [SIZE]
# The image is unmounted and its loop device detached on exit, even on error.
set -euo pipefail
img=${1:?usage: mkimages.sh IMAGE [SIZE]}
size=${2:-1G}
[ "$(id -u)" = 0 ] || { echo "mkimages.sh: needs root (loop devices, mount)" >&2; exit 2; }

mnt=$(mktemp -d)
loop=
cleanup() {
  set +e
  for i in 1 2 3 4 5; do
    mountpoint -q "$mnt" || break
    umount "$mnt" && break
    sleep 1
  done
  [ -n "$loop" ] && losetup -d "$loop"
  rmdir "$mnt"
}
trap cleanup EXIT

rm -f "$img"
truncate -s "$size" "$img"
mkfs.btrfs -q -f "$img" >/dev/null
loop=$(losetup -f --show "$img")

setx() { # setx FILE NAME VALUE
  # a bare value starting 0x or 0s would be decoded as hex/base64 ("bad input encoding"
  # for a random base64 value): pass it in setfattr's quoted text form
  if command -v setfattr >/dev/null; then setfattr -h -n "$2" -v "\"$3\"" "$1"
  else python3 -c 'import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode(), follow_symlinks=False)' "$1" "$2" "$3"
  fi
}
text() { # text BYTES: compressible (no pipeline, so pipefail never sees SIGPIPE)
  head -c "$1" < <(yes 'the quick brown fox jumps over the lazy dog 0123456789')
}
rnd() { head -c "$1" /dev/urandom; }

# One subvolume per compression algorithm, written under compress-force.
populate_compressed() { # DIR
  local d=$1
  text 1048576 >"$d/text-1m"                    # many 128 KiB compressed extents
  rnd 300000 >"$d/random-300k"                  # incompressible: stored plain
  { text 200000; rnd 70000; text 140000; } >"$d/mixed"  # crosses 128 KiB boundaries
  text 3000 >"$d/inline-3000"                   # compressed inline extent
  text 100 >"$d/inline-100"
  text 131072 >"$d/exact-128k"
  text 131073 >"$d/over-128k"
  # overwrite in the middle: the rest keeps referencing the old compressed
  # extents at an offset
  text 1048576 >"$d/overwritten"
  sync
  rnd 5000 | dd of="$d/overwritten" bs=1 seek=200000 conv=notrunc status=none
  printf 'XYZ' | dd of="$d/overwritten" bs=1 seek=700001 conv=notrunc status=none
  sync
  text 600000 >"$d/truncated"; sync; truncate -s 333333 "$d/truncated"
  text 50000 >"$d/grown"; sync; truncate -s 2000000 "$d/grown"
}

mount -o compress-force=zstd "$loop" "$mnt"
btrfs -q subvolume create "$mnt/zstd"
populate_compressed "$mnt/zstd"
sync
mount -o remount,compress-force=lzo "$mnt"
btrfs -q subvolume create "$mnt/lzo"
populate_compressed "$mnt/lzo"
sync
mount -o remount,compress-force=zlib "$mnt"
btrfs -q subvolume create "$mnt/zlib"
populate_compressed "$mnt/zlib"
sync
umount "$mnt"
mount "$loop" "$mnt"   # no compression from here on

d=$mnt/plain
mkdir "$d"
for n in 0 1 3000 4096 5000 1048576; do rnd $n >"$d/size-$n"; done
rnd 8388608 >"$d/big-8m"
# holes: written ranges in a sparse file, truncate up, punch, prealloc
truncate -s 10M "$d/sparse"
rnd 4096 | dd of="$d/sparse" bs=4096 seek=3 conv=notrunc status=none
rnd 70000 | dd of="$d/sparse" bs=1 seek=5000000 conv=notrunc status=none
rnd 1048576 >"$d/punched"; sync
fallocate -p -o 200000 -l 300000 "$d/punched"
fallocate -l 1M "$d/prealloc"                         # prealloc, size 1M, reads zeros
rnd 10000 >"$d/prealloc-keep"; fallocate -n -o 10000 -l 1M "$d/prealloc-keep"  # beyond EOF
fallocate -l 512K "$d/prealloc-written"; rnd 4096 | dd of="$d/prealloc-written" bs=4096 seek=10 conv=notrunc status=none
# NODATACOW (no checksums)
touch "$d/nocow"; chattr +C "$d/nocow"; rnd 600000 >>"$d/nocow"
# reflinks, whole and then modified
cp --reflink=always "$d/big-8m" "$d/reflink-8m"
cp --reflink=always "$d/big-8m" "$d/reflink-modified"; sync
rnd 10000 | dd of="$d/reflink-modified" bs=1 seek=4000000 conv=notrunc status=none
# overwrite in the middle, truncations
rnd 2000000 >"$d/overwritten"; sync
rnd 12345 | dd of="$d/overwritten" bs=1 seek=777777 conv=notrunc status=none
rnd 500000 >"$d/trunc-down"; sync; truncate -s 123457 "$d/trunc-down"
rnd 5000 >"$d/trunc-up"; truncate -s 3000000 "$d/trunc-up"
rnd 2000 >"$d/inline-then-grown"; sync; rnd 9000 >>"$d/inline-then-grown"
# 5000 files in one directory
mkdir "$d/many"
for i in $(seq -w 1 5000); do echo "file $i" >"$d/many/f$i"; done
# hard links, symlinks, special files
ln "$d/size-3000" "$d/hardlink-3000"
mkdir "$d/sub"; ln "$d/size-3000" "$d/sub/hardlink-again"
ln -s size-5000 "$d/symlink"
ln -s /absolute/target "$d/symlink-abs"
ln -s "$(printf 'x/%.0s' $(seq 1 500))end" "$d/symlink-long"
mkfifo "$d/fifo"
mknod "$d/null" c 1 3
mknod "$d/blockdev" b 8 17
mknod "$d/bigdev" c 511 1048000
# xattrs
setx "$d/size-1" user.one 1
setx "$d/size-4096" user.big "$(rnd 1500 | base64 -w0)"
setx "$d/sub" user.dir "on a dir"
setx "$d/symlink" trusted.linkattr "trusted on a symlink"
setx "$d/size-5000" security.test "security value"
# modes and owners
chmod 4755 "$d/size-1"; chmod 2711 "$d/size-0"; chmod 1777 "$d/sub"; chmod 000 "$d/size-4096"
chown 1234:5678 "$d/size-5000"; chown -h 42:43 "$d/symlink"; chown 1000:1000 "$d/sub"

# subvolumes: nested, snapshots (rw and ro), default subvolume
btrfs -q subvolume create "$mnt/sv1"
btrfs -q subvolume create "$mnt/sv1/nested"
rnd 100000 >"$mnt/sv1/nested/data"
cp -a "$d/size-5000" "$mnt/sv1/file"
mkdir -p "$mnt/sv1/dir/deeper"
btrfs -q subvolume create "$mnt/sv1/dir/deeper/nested2"
echo in-nested2 >"$mnt/sv1/dir/deeper/nested2/f"
btrfs -q subvolume snapshot "$mnt/sv1" "$mnt/snap-rw"           # nested ones become placeholders
btrfs -q subvolume snapshot -r "$mnt/sv1" "$mnt/snap-ro"
echo changed-after-snapshot >>"$mnt/sv1/file"
btrfs -q subvolume snapshot "$mnt/zstd" "$mnt/sv1/snap-of-zstd"  # a snapshot inside a subvolume
echo diverged >"$mnt/sv1/snap-of-zstd/inline-100"
id=$(btrfs subvolume show "$mnt/sv1" | awk '/Subvolume ID:/ {print $3}')
btrfs subvolume set-default "$id" "$mnt"

# odd times with nanoseconds last, children before parents (not on the
# read-only snapshot); eight paths share a time (a touch per path took a
# minute)
stamp() { # stamp PATH...
  local ns
  printf -v ns '%09d' $(( RANDOM * 30000 + RANDOM ))
  touch -h -d "@$(( 946684800 + RANDOM * 30000 )).$ns" "$@"
}
find "$mnt" -depth -not -path "$mnt/snap-ro" -not -path "$mnt/snap-ro/*" | {
  batch=()
  while IFS= read -r p; do
    if [ "$p" = "$mnt" ]; then continue; fi
    batch+=("$p")
    if [ ${#batch[@]} -ge 8 ]; then stamp "${batch[@]}"; batch=(); fi
  done
  if [ ${#batch[@]} -gt 0 ]; then stamp "${batch[@]}"; fi
}
sync
umount "$mnt"
echo "made $img (default subvolume $id)"
