package testutil

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FuzzBounds are the time and memory one fuzz input may use. Whole-image
// fuzz targets run every input under DefaultFuzzBounds: an input that
// loops or allocates without bound is a bug, found as a crash.
//
// Time is counted in CPU time of the process, so that an input is not
// blamed for a machine shared with other jobs; an input that is blocked
// (deadlock, waiting for I/O that never comes) is caught by wall time,
// at WallFactor times Time.
type FuzzBounds struct {
	Time time.Duration // CPU time one input may use
	Mem  int64         // heap in use above what the process held before the input
}

// DefaultFuzzBounds: no input may use more than 256 MiB or 10 s (issue 7).
var DefaultFuzzBounds = FuzzBounds{Time: 10 * time.Second, Mem: 256 << 20}

// WallFactor times Time of wall clock fails an input whatever its CPU time.
const WallFactor = 6

// fuzzSample is how often the watchdog reads the heap size.
const fuzzSample = 10 * time.Millisecond

// boundMu serializes bounded runs: the heap is per process, so two inputs
// measured at once would be charged for each other's memory.
var boundMu sync.Mutex

// FuzzBound runs fn (the work for one fuzz input) under DefaultFuzzBounds.
func FuzzBound(t testing.TB, input []byte, fn func()) {
	t.Helper()
	DefaultFuzzBounds.Run(t, input, fn)
}

// Run runs fn under the bounds b. A watchdog goroutine samples the heap
// and the clocks; when fn runs longer than b.Time (see FuzzBounds), or the
// heap stays more than b.Mem above its size at the start even after a
// forced GC, it prints the input (its sha256 and, when short, its bytes),
// what was exceeded and every goroutine's stack, and panics: the process
// dies, so `go test -fuzz` records the input as a crasher and plain
// `go test` fails. (t.Fatal is not allowed from another goroutine, and fn
// may never return.)
func (b FuzzBounds) Run(t testing.TB, input []byte, fn func()) {
	t.Helper()
	boundMu.Lock()
	defer boundMu.Unlock()
	runtime.GC()
	base := heapBytes(heapLive)
	// Make the GC work hard before the heap reaches the bound, so that
	// garbage is not mistaken for memory in use.
	old := debug.SetMemoryLimit(int64(base) + b.Mem)
	defer debug.SetMemoryLimit(old)

	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(fuzzSample)
		defer tick.Stop()
		cpu0 := cpuTime()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				wall, cpu := time.Since(start), cpuTime()-cpu0
				if cpu > b.Time || wall > WallFactor*b.Time {
					fuzzBoundFail(input, fmt.Sprintf("still running after %v of CPU time, %v of wall time (bound %v of CPU, %v of wall)",
						cpu.Round(time.Millisecond), wall.Round(time.Millisecond), b.Time, WallFactor*b.Time))
				}
				if heapBytes(heapObjects) <= base+uint64(b.Mem) {
					continue
				}
				runtime.GC()
				if live := heapBytes(heapLive); live > base+uint64(b.Mem) {
					fuzzBoundFail(input, fmt.Sprintf("%d MiB of heap in use above the %d MiB held before the input (bound %d MiB), after %v",
						(live-base)>>20, base>>20, b.Mem>>20, time.Since(start).Round(time.Millisecond)))
				}
			}
		}
	}()
	defer func() {
		close(done)
		<-stopped
	}()
	fn()
}

const (
	heapObjects = "/memory/classes/heap/objects:bytes" // live and not yet swept
	heapLive    = "/gc/heap/live:bytes"                // marked live by the last GC
)

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapBytes(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// fuzzBoundFail reports an input that broke its bounds and kills the
// process.
func fuzzBoundFail(input []byte, what string) {
	sum := sha256.Sum256(input)
	msg := fmt.Sprintf("fuzz input sha256 %x (%d bytes): %s", sum[:8], len(input), what)
	fmt.Fprintf(os.Stderr, "\n=== FUZZ BOUND EXCEEDED: %s\n", msg)
	if len(input) <= 512 {
		fmt.Fprintf(os.Stderr, "input: %x\n", input)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(os.Stderr, "goroutines:\n%s\n", buf)
	panic("fuzz bound exceeded: " + msg)
}
