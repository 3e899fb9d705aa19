package fileread

import (
	"fmt"
	"testing"
)

// TestWarnOnceBounded: each notice is given once, and a long-lived mount
// over a badly damaged image does not collect notices without bound.
func TestWarnOnceBounded(t *testing.T) {
	n := 0
	en := &Engine{warnFn: func(string) { n++ }, warned: map[string]bool{}}
	en.warn("a", "first")
	en.warn("a", "again")
	if n != 1 {
		t.Fatalf("duplicate notice given: %d", n)
	}
	for i := 0; i < 2*maxWarnKeys; i++ {
		en.warn(fmt.Sprint(i), "x")
	}
	if n != maxWarnKeys || len(en.warned) != maxWarnKeys {
		t.Fatalf("%d notices given, %d remembered; want at most %d", n, len(en.warned), maxWarnKeys)
	}
}
