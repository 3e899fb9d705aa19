package main

import (
	"io"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// FuzzScrubImage scrubs each damaged image (fuzzimg_test.go), then
// repairs it: scrub may report anything, but must end in bounds and
// never panic, and a repair must leave the image's size alone.
func FuzzScrubImage(f *testing.F) {
	img, path := fuzzCmdImage(f)
	fuzzSeeds(f, img, nil)
	f.Fuzz(func(t *testing.T, script []byte) {
		damaged := img.Apply(script)
		if err := damaged.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		size := imageBytes(path)
		testutil.FuzzBound(t, script, func() {
			scrubRun(&scrubFlags{quiet: true}, []string{path}, io.Discard, io.Discard)
			scrubRun(&scrubFlags{quiet: true, repair: true}, []string{path}, io.Discard, io.Discard)
		})
		if after := imageBytes(path); after != size {
			t.Errorf("scrub --repair changed the image size from %d to %d", size, after)
		}
	})
}
