#!/bin/bash
# progs_corpus.sh: run `gobtrfs check` and `btrfs check --readonly` over the
# image files of btrfs-progs' own fsck test corpus and print an agreement
# table. Not part of CI (needs a btrfs-progs checkout, btrfs-image and
# several minutes).
#
#   scripts/progs_corpus.sh PROGS_GIT_DIR_OR_CHECKOUT [WORKDIR]
#
# PROGS_GIT_DIR_OR_CHECKOUT is a btrfs-progs checkout or a bare git
# directory (e.g. the one `fetch github:kdave/btrfs-progs` gives). Every
# tests/fsck-tests/*/ image file (*.img, *.img.xz, *.raw, *.raw.xz; *.img
# are btrfs-image dumps, restored with btrfs-image -r) is checked. What the
# test requires comes from its test.sh: run_mustfail => must fail,
# run_check ... check => must pass, anything else => "other" (the verdict is
# printed but not scored). Output: one line per image, then the table.
set -u
src=${1:?usage: progs_corpus.sh PROGS_GIT_DIR_OR_CHECKOUT [WORKDIR]}
work=${2:-$(mktemp -d /tmp/progs_corpus.XXXXXX)}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work/tests" "$work/out"
export PATH=$PATH:/usr/local/go/bin

# 1. the corpus
if [ -d "$src/tests/fsck-tests" ]; then
	cp -r "$src/tests/fsck-tests" "$work/tests/"
else
	# file by file: a snapshot may lack some large blobs (reported, skipped)
	git --git-dir="$src" ls-tree -r --name-only HEAD tests/fsck-tests | while read -r f; do
		mkdir -p "$work/$(dirname "$f")"
		git --git-dir="$src" cat-file blob "HEAD:$f" >"$work/$f" 2>/dev/null ||
			{ echo "absent from the snapshot: $f" >&2; rm -f "$work/$f"; }
	done
fi
# 2. our checker
gobbin="$work/gobtrfs"
(cd "$here" && go build -o "$gobbin" ./cmd/gobtrfs) || exit 1

# expect DIR (as tests/fsck-tests.sh runs it): must-fail | must-pass | other
expect() {
	local t="$1/test.sh"
	# no test.sh: the default check_image, which requires a failure
	[ -f "$t" ] || { echo must-fail; return; }
	if grep -q 'run_mustfail' "$t"; then echo must-fail; return; fi
	grep -q 'check_all_images' "$t" || { echo other; return; }
	# check_all_images with the default check_image: must fail
	grep -q '^check_image()' "$t" || { echo must-fail; return; }
	if grep -Eq 'run_check +"\$TOP/btrfs" +check' "$t"; then echo must-pass; return; fi
	echo other
}

# restore IMAGE -> prints the raw image path
restore() {
	local img="$1" out="$work/out/$(basename "$(dirname "$1")")-$(basename "$1").raw"
	case "$img" in
	*.img.xz) xz -dc "$img" >"$out.dump" && btrfs-image -r "$out.dump" "$out" >/dev/null 2>&1; rm -f "$out.dump" ;;
	*.img) btrfs-image -r "$img" "$out" >/dev/null 2>&1 ;;
	*.raw.xz) xz -dc "$img" >"$out" ;;
	*.raw) cp --sparse=always "$img" "$out" ;;
	esac
	[ -s "$out" ] && echo "$out"
}

n=0 agree=0 miss=0 false_alarm=0 unscored=0 progs_ok=0
results="$work/results.txt"
: >"$results"
for d in "$work"/tests/fsck-tests/*/; do
	d=${d%/}
	exp=$(expect "$d")
	for img in $(find "$d" -maxdepth 1 \( -iname '*.img' -o -iname '*.img.xz' -o -iname '*.raw' -o -iname '*.raw.xz' \) | sort); do
		raw=$(restore "$img") || { echo "$(basename "$d")/$(basename "$img") restore-failed" | tee -a "$results"; continue; }
		timeout 300 btrfs check --readonly "$raw" >"$raw.progs" 2>&1
		progs=$?
		timeout 300 "$gobbin" check -q --no-warn-in-use "$raw" >"$raw.gob" 2>&1
		gob=$?
		[ $progs -ne 0 ] && progs=fail || progs=pass
		case $gob in 0) gob=pass ;; 1) gob=fail ;; *) gob="exit$gob" ;; esac
		n=$((n + 1))
		verdict=-
		case $exp in
		must-fail)
			if [ "$gob" = fail ]; then verdict=agree; agree=$((agree + 1)); else verdict=MISS; miss=$((miss + 1)); fi
			[ "$progs" = fail ] && progs_ok=$((progs_ok + 1)) ;;
		must-pass)
			if [ "$gob" = pass ]; then verdict=agree; agree=$((agree + 1)); else verdict=FALSE-ALARM; false_alarm=$((false_alarm + 1)); fi
			[ "$progs" = pass ] && progs_ok=$((progs_ok + 1)) ;;
		*) unscored=$((unscored + 1)) ;;
		esac
		printf '%-60s %-9s progs=%-4s gobtrfs=%-6s %s\n' "$(basename "$d")/$(basename "$img")" "$exp" "$progs" "$gob" "$verdict" | tee -a "$results"
		rm -f "$raw"
	done
done
# 3. multi-device sets: misc-tests/034-metadata-uuid keeps two-device
# filesystems caught in the middle of an fsid change (disk1+2 ... disk7+8).
# The suite only requires that they assemble; both checkers are run on
# each pair (btrfs check through loop devices when root, as it scans block
# devices for the other device), unscored.
mu=misc-tests/034-metadata-uuid
mkdir -p "$work/$mu"
for i in 1 3 5 7; do
	j=$((i + 1))
	pair=""
	for k in $i $j; do
		if [ -d "$src/tests/$mu" ]; then
			xz -dc "$src/tests/$mu/disk$k.raw.xz" >"$work/$mu/disk$k.raw" 2>/dev/null
		else
			git --git-dir="$src" cat-file blob "HEAD:tests/$mu/disk$k.raw.xz" 2>/dev/null | xz -dc >"$work/$mu/disk$k.raw" 2>/dev/null
		fi
		[ -s "$work/$mu/disk$k.raw" ] && pair="$pair $work/$mu/disk$k.raw"
	done
	[ -n "$pair" ] || continue
	progs=n/a
	if [ "$(id -u)" = 0 ]; then
		loops=()
		for f in $pair; do loops+=("$(losetup --find --show "$f")"); done
		timeout 300 btrfs check --readonly "${loops[0]}" >"$work/$mu/disk$i+$j.progs" 2>&1 && progs=pass || progs=fail
		for l in "${loops[@]}"; do btrfs device scan --forget "$l" 2>/dev/null; losetup -d "$l"; done
	fi
	# shellcheck disable=SC2086
	timeout 300 "$gobbin" check -q --no-warn-in-use $pair >"$work/$mu/disk$i+$j.gob" 2>&1
	gob=$?
	case $gob in 0) gob=pass ;; 1) gob=fail ;; *) gob="exit$gob" ;; esac
	printf '%-60s %-9s progs=%-4s gobtrfs=%-6s %s\n' "$mu/disk$i+disk$j (2 devices)" other "$progs" "$gob" - | tee -a "$results"
	rm -f $pair
done

echo
echo "images: $n (scored $((n - unscored)), other $unscored)"
echo "gobtrfs agrees with the test suite: $agree; misses: $miss; false alarms: $false_alarm"
echo "btrfs check $(btrfs --version | awk '{print $2}') agrees with the test suite: $progs_ok"
echo "outputs kept in $work/out (*.progs, *.gob); table in $results"
