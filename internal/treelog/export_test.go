package treelog

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// SetMaxTargets changes maxTargets for a test and returns the old value.
func SetMaxTargets(n int) int {
	old := maxTargets
	maxTargets = n
	return old
}

// TestMain checks every kept directory state and kept plan against ones
// made from scratch in this package's tests (not in benchmarks: it costs what
// the state saves), and fails the run on a difference.
func TestMain(m *testing.M) {
	flag.Parse()
	verifyKept = flag.Lookup("test.bench").Value.String() == ""
	code := m.Run()
	for _, err := range keptMismatch {
		fmt.Fprintln(os.Stderr, "FAIL: kept state:", err)
		code = 1
	}
	os.Exit(code)
}
