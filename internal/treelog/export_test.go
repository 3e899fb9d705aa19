package treelog

import (
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

// TestMain checks every kept directory state against a classification
// from scratch in this package's tests, and fails the run on a difference.
func TestMain(m *testing.M) {
	verifyDirCache = true
	code := m.Run()
	for _, err := range dirCacheMismatch {
		fmt.Fprintln(os.Stderr, "FAIL: directory state:", err)
		code = 1
	}
	os.Exit(code)
}
