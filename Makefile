# make test installs what the tests need (when missing and running as root),
# then runs every Go test plus short fuzz runs.
GO ?= go
FUZZTIME ?= 1s
# staticcheck, pinned; `go run pkg@version` fetches it through the module
# proxy on a fresh machine and keeps it out of go.mod.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test deps unit unit-full fuzz build bench invariants man

test: deps build unit invariants fuzz

deps:
	@./scripts/deps.sh

build:
	$(GO) build ./...
	$(GO) vet ./...
	$(STATICCHECK) ./...

# -short: the random and crash tests run fewer operations (every test
# runs); `make unit-full` runs them at full length (about 1.5x as long).
unit:
	$(GO) test -short -count=1 -timeout 12m -parallel 4 ./...

unit-full:
	$(GO) test -count=1 -timeout 30m -parallel 4 ./...

# The writer's tests built with -tags invariants: txn runs our checker on
# the device after every commit and panics with its report on a problem.
# (The crash, metadata-ENOSPC and mixed-fill tests are left out: they
# commit hundreds of times and check their images their own way.)
invariants:
	$(GO) test -count=1 -tags invariants -short -skip 'TestCrashConsistency|TestMetadataENOSPC|TestMixedBGMetadataFill|TestMixedBGFillDeleteRefill' ./internal/txn
	$(GO) test -count=1 -tags invariants -short -run 'TestRandomOps$$|TestCommitFaults' ./internal/fsops

# Short run of every fuzz target (corpora under testdata/fuzz are also run by `unit`).
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

# A man page per command (gobtrfs.1, gobtrfs-mkfs.1, ...) in ./man; read
# one with `man -l man/gobtrfs-mkfs.1`.
man:
	$(GO) run ./cmd/gobtrfs man man
