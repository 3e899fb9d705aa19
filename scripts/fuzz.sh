#!/usr/bin/env bash
# Runs each Go fuzz target for a short time ($1, default 3s). The seed
# corpora under testdata/fuzz also run as plain tests in `go test ./...`.
#
# Each package's test binary is built once, instrumented for fuzzing
# (`go test -c -fuzz=.`), and run once per target from the package's
# directory (where a crasher goes to testdata/fuzz/FuzzX), with the fuzz
# cache `go test -fuzz` uses: `go test -fuzz` per target linked the
# package again for every one (three minutes for the whole set).
set -eu
t=${1:-3s}
# Whole-image targets (a command or a mount per input, base image built in
# every worker) need a few seconds for their seed corpus before fuzzing
# starts: they get $FUZZTIME_IMAGE (default 15s) unless a time is given.
timage=${FUZZTIME_IMAGE:-15s}
image_targets=" FuzzImageWalk FuzzRestoreImage FuzzLsImage FuzzCheckImage FuzzMountRead "
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
cache=$(go env GOCACHE)/fuzz
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' || true)
  [ -n "$targets" ] || continue
  bin=$work/$(echo "$pkg" | tr / _).test
  go test -c -fuzz=. -o "$bin" "$pkg"
  for f in $targets; do
    ft=$t
    if [[ $image_targets == *" $f "* && -z ${1:-} ]]; then
      ft=$timage
    fi
    echo "fuzz $pkg $f ($ft)"
    if ! (cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^$f\$" -test.fuzztime="$ft" \
        -test.fuzzcachedir="$cache/$pkg" -test.timeout=10m -test.paniconexit0) >"$log" 2>&1; then
      # Go's fuzz coordinator sometimes reports its own time limit as
      # "context deadline exceeded" with no failing input; only a real
      # failure (a crasher written to testdata) fails the run.
      if grep -q 'context deadline exceeded' "$log" && ! grep -qE 'Failing input|testdata/fuzz/' "$log"; then
        echo "  (go fuzz coordinator timeout, no failing input: ignored)"
        continue
      fi
      cat "$log"
      exit 1
    fi
  done
done
