package main

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/gobtrfs/gobtrfs/internal/progress"
)

// copyProgress is the progress line of put and mkfs --rootdir on stderr
// (a terminal only; quiet: none). Its totals come from a walk of the
// sources, made only when the line is drawn.
func copyProgress(label string, quiet bool, stderr io.Writer, srcs ...string) *progress.Bar {
	bar := progress.New(stderr, progress.Options{Label: label, Quiet: quiet})
	if bar.Drawing() {
		var files, bytes int64
		for _, s := range srcs {
			filepath.WalkDir(s, func(_ string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				files++
				if d.Type().IsRegular() {
					if fi, err := d.Info(); err == nil {
						bytes += fi.Size()
					}
				}
				return nil
			})
		}
		bar.SetTotal(files, bytes)
	}
	return bar
}

// copySummary is the last line of put: what was copied, how fast.
func copySummary(w io.Writer, label string, bar *progress.Bar) {
	el := bar.Elapsed()
	fmt.Fprintf(w, "%s: copied %d entries, %s of data in %s (%s)\n", label, bar.Files(),
		progress.Size(bar.Bytes()), progress.Clock(el), progress.Rate(bar.Bytes(), el))
}
