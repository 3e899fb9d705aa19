package main

import (
	"github.com/gobtrfs/gobtrfs/internal/progress"
)

// startProgress shows restore's progress line on stderr when it is a
// terminal (files, bytes, rate; a bar and the time left against
// r.totalBytes, the image's bytes used, when known).
func (r *restorer) startProgress() {
	if r.progressOff {
		return
	}
	r.bar = progress.New(r.stderr, progress.Options{Label: "restore", TotalBytes: r.totalBytes,
		Counts: func() (int64, int64, string) {
			cur, _ := r.cur.Load().(string)
			return r.files.Load(), r.bytes.Load(), cur
		}})
	if !r.bar.Drawing() {
		r.bar = nil
	}
}

func (r *restorer) stopProgress() {
	if r.bar != nil {
		r.bar.Stop()
		r.bar = nil
	}
}
