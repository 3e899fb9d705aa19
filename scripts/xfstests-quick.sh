#!/bin/bash
# xfstests-quick.sh — run the xfstests selection in scripts/xfstests-quick.list (the whole quick group
# of generic/) against the gobtrfs FUSE mount, in chunks, with the shared runner
# (../shared/tools/xfstests.sh: it builds gobtrfs, makes the images, runs each test under a timeout and
# checks each scratch image with btrfs check).
#
# usage: XFSTESTS_DIR=/path/to/built/xfstests scripts/xfstests-quick.sh [OUTDIR]
#   (xfstests: `fetch github:kdave/xfstests`, then `make` in it; the packages it needs are listed in the
#   header of xfstests.sh)
# Environment: CHUNK (tests per chunk, default 40), TEST_TIMEOUT (per test, default 150 s; generic/127
#   needs ~300 s on a loaded 2-core machine, kernel btrfs too), LIST (default scripts/xfstests-quick.list),
#   RUNNER (default ../shared/tools/xfstests.sh), SUBTYPE (default gobtrfs_quick).
# Each chunk writes OUTDIR/cNN/summary.txt (per-test lines) and OUTDIR/cNN/results; a chunk whose
# summary is complete is skipped when run again, so an interrupted run resumes. Touch OUTDIR/STOP to stop
# after the current chunk. The totals are printed at the end (and by `$0 --summary OUTDIR`).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
summary() {
	cat "$1"/c*/summary.txt 2>/dev/null | grep '^generic/' >"$1/all.txt"
	r='^generic/[0-9]+ +[0-9]+ +s'
	p=$(grep -cE "$r pass" "$1/all.txt"); f=$(grep -cE "$r fail" "$1/all.txt"); n=$(grep -cE "$r notrun" "$1/all.txt")
	bad=$(grep -c 'scratch-check:ERRORS' "$1/all.txt")
	echo "xfstests quick on gobtrfs: $p passed, $f failed, $n not run ($bad scratch images with btrfs check errors)"
	grep -E "$r fail" "$1/all.txt"
}
if [ "${1:-}" = --summary ]; then summary "${2:?OUTDIR}"; exit 0; fi
OUT=${1:-/tmp/xfstests-quick}
LIST=${LIST:-$SRC/scripts/xfstests-quick.list}
RUNNER=${RUNNER:-$SRC/../shared/tools/xfstests.sh}
N=${CHUNK:-40}
export TEST_TIMEOUT=${TEST_TIMEOUT:-150} SUBTYPE=${SUBTYPE:-gobtrfs_quick}
: "${XFSTESTS_DIR:?set XFSTESTS_DIR to a built xfstests work tree}"
export XFSTESTS_DIR
mkdir -p "$OUT"
mapfile -t all < <(grep -v '^#' "$LIST" | grep .)
for ((i = 0, c = 0; i < ${#all[@]}; i += N, c++)); do
	d=$OUT/c$(printf %02d $c)
	grep -q '^Elapsed' "$d/summary.txt" 2>/dev/null && continue
	[ -f "$OUT/STOP" ] && break
	mkdir -p "$d"
	echo "$(date -u +%T) chunk $c: ${all[i]} ..." >&2
	WORK=$d TESTS="${all[*]:i:N}" bash "$RUNNER" "$SRC" >"$d/run.log" 2>&1
	tail -1 "$d/run.log" >&2
done
summary "$OUT"
