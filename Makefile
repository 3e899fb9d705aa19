# make test installs what the tests need (when missing and running as root),
# then runs every Go test plus short fuzz runs.
GO ?= go
FUZZTIME ?= 3s
# staticcheck, pinned; `go run pkg@version` fetches it through the module
# proxy on a fresh machine and keeps it out of go.mod.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test deps unit fuzz build bench

test: deps build unit fuzz

deps:
	@./scripts/deps.sh

build:
	$(GO) build ./...
	$(GO) vet ./...
	$(STATICCHECK) ./...

unit:
	$(GO) test -count=1 -timeout 12m ./...

# Short run of every fuzz target (corpora under testdata/fuzz are also run by `unit`).
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...
