//go:build invariants

package txn

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check"
)

// invariants is true in builds with -tags invariants: every commit is
// followed by a run of the checker on what it wrote.
const invariants = true

// checkCommitted runs the checker on the device (a fresh read of it, not
// this writer's cache, beneath any fault-injecting test wrapper) right after the superblocks of generation gen are
// flushed, and panics with its report when it finds a problem: a commit
// that writes an inconsistent filesystem is a bug of this package.
func (f *Engine) checkCommitted(gen uint64) {
	dev := blockdev.Underlying(f.Info.Dev) // not through a test's injected faults
	rep, err := check.Device(dev, check.Options{CacheBytes: 32 << 20})
	if err != nil {
		panic(fmt.Sprintf("txn: invariants: commit %d: the checker cannot open what was written: %v", gen, err))
	}
	if !rep.OK() {
		panic(fmt.Sprintf("txn: invariants: commit %d left problems on the device:\n%s", gen, rep))
	}
}
