#!/usr/bin/env bash
# Times `gobtrfs restore` against `btrfs restore` on the same image: a
# generated tree of >= 1 GiB in >= 10,000 files, put in an image with
# mkfs.btrfs --rootdir (no root needed). Peak RSS from /usr/bin/time -v.
#
# usage: scripts/bench_restore.sh [WORKDIR]   (default: a new temp dir, removed after)
# OUT=/dev/shm/x puts the restored trees on tmpfs, which takes the
# destination's writeback out of the timings.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-}
if [ -z "$work" ]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"
for c in mkfs.btrfs btrfs /usr/bin/time; do command -v $c >/dev/null || { echo "bench: $c missing" >&2; exit 2; }; done

out=${OUT:-$work}
mkdir -p "$out"
go build -o "$work/gobtrfs" ./cmd/gobtrfs

src=$work/src
if [ ! -d "$src" ]; then
  echo "generating tree in $src" >&2
  mkdir -p "$src"
  # 10 directories x 1024 files of 40 KiB (400 MiB), 10 files of 70 MiB (700 MiB),
  # plus compressible text so both tools do some real work on every byte
  for d in $(seq 0 9); do
    mkdir -p "$src/d$d"
    head -c $((1024 * 40960)) /dev/urandom | split -b 40960 -a 4 - "$src/d$d/f"
  done
  mkdir -p "$src/big"
  head -c $((700 << 20)) /dev/urandom | split -b $((70 << 20)) -a 2 - "$src/big/b"
  yes 'compressible line of text for the restore benchmark' | head -c $((64 << 20)) >"$src/text" || true
fi
files=$(find "$src" -type f | wc -l)
bytes=$(du -sb "$src" | cut -f1)
img=$work/img
if [ ! -f "$img" ]; then
  truncate -s 3G "$img"
  mkfs.btrfs -q -f --rootdir "$src" "$img" >/dev/null 2>&1
fi

run() { # run NAME DEST CMD...
  local name=$1 dest=$2; shift 2
  rm -rf "$dest"; mkdir -p "$dest"; sync   # no writeback left over from the previous run
  /usr/bin/time -v "$@" >"$work/$name.out" 2>"$work/$name.time" || { echo "$name failed:"; cat "$work/$name.out" "$work/$name.time"; }
  local wall rss usr sys
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/$name.time")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/$name.time")
  usr=$(awk -F': ' '/User time/ {print $2}' "$work/$name.time")
  sys=$(awk -F': ' '/System time/ {print $2}' "$work/$name.time")
  local n; n=$(find "$dest" -type f | wc -l)
  printf '%-34s %10s %8s %8s %10s %8s\n' "$name" "$wall" "$usr" "$sys" "$((rss / 1024)) MiB" "$n"
}

echo "tree: $files files, $((bytes >> 20)) MiB; image $(du -h "$img" | cut -f1)"
printf '%-34s %10s %8s %8s %10s %8s\n' tool "wall" "user s" "sys s" "peak RSS" files
# warm the page cache once so both tools read from memory
cat "$img" >/dev/null
for i in 1 2 3; do
  run "gobtrfs restore (run $i)" "$out/out-gobtrfs" "$work/gobtrfs" restore -q "$img" "$out/out-gobtrfs"
  run "gobtrfs restore --no-verify ($i)" "$out/out-gobtrfs" "$work/gobtrfs" restore -q --no-verify "$img" "$out/out-gobtrfs"
  run "btrfs restore (run $i)" "$out/out-progs" btrfs restore "$img" "$out/out-progs"
  run "btrfs restore -m -x -S (run $i)" "$out/out-progs" btrfs restore -m -x -S "$img" "$out/out-progs"
done
diff -r "$out/out-gobtrfs" "$out/out-progs" >/dev/null && echo "outputs identical (content)" || echo "outputs differ!"
[ -n "${OUT:-}" ] && rm -rf "$out/out-gobtrfs" "$out/out-progs" && rmdir "$out" 2>/dev/null || true
