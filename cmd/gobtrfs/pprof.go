package main

import (
	"fmt"
	"net/http"
	_ "net/http/pprof" // the handlers on http.DefaultServeMux
	"os"
	"runtime"
)

// GOBTRFS_PPROF=HOST:PORT serves net/http/pprof (CPU, heap, goroutine,
// block and mutex profiles, execution traces) while any command runs, a
// long-lived mount above all: `go tool pprof http://HOST:PORT/debug/pprof/block`.
// Block and mutex events are then sampled too. A debugging aid; nothing is
// served without the variable.
func init() {
	addr := os.Getenv("GOBTRFS_PPROF")
	if addr == "" {
		return
	}
	runtime.SetBlockProfileRate(10000) // a sample per 10 µs blocked
	runtime.SetMutexProfileFraction(10)
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			fmt.Fprintf(os.Stderr, "gobtrfs: GOBTRFS_PPROF %s: %v\n", addr, err)
		}
	}()
}
