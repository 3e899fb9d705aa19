package main

import (
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// TestScrubHostileImages: scrub and filesystem df of crafted images (a
// node pointing at itself, directory loops, bad names) end with bounded
// output and no crash; what is checksummed correctly is no scrub error.
func TestScrubHostileImages(t *testing.T) {
	b := hostile.Build(t)
	self, _ := hostile.SelfPointer(t, b)
	for name, img := range map[string]string{"self pointer": self, "dir loop": hostile.DirLoop(t, b, false),
		"bad names": hostile.BadNames(t, b)} {
		for _, args := range [][]string{{"scrub", "-R", img}, {"filesystem", "usage", "-b", img}} {
			out, err := runHostile(t, args...)
			if len(out) > 1<<20 || strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Errorf("%s: gobtrfs %s: %v, %d bytes:\n%.2000s", name, args[0], err, len(out), out)
			}
			if args[0] == "scrub" && !strings.Contains(out, "data_bytes_scrubbed: ") {
				t.Errorf("%s: scrub gave no report: %v\n%.2000s", name, err, out)
			}
		}
	}
}
