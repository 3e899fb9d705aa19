package testutil

import (
	"testing"
	"time"
)

// Seed returns the seed of a random test: flagValue (the test's -seed
// flag), or one from the clock when it is 0. It logs the seed so that a
// failure can be replayed with -seed.
func Seed(t testing.TB, flagValue int64) int64 {
	t.Helper()
	s := flagValue
	if s == 0 {
		s = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return s
}
