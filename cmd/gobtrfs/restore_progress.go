package main

import (
	"fmt"
	"time"
)

// startProgress shows a progress line on stderr (a terminal) every 200 ms.
func (r *restorer) startProgress() {
	if r.progressOff {
		return
	}
	r.progressDone = make(chan struct{})
	start := time.Now()
	r.progressWG.Add(1)
	go func() {
		defer r.progressWG.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.progressDone:
				r.outMu.Lock()
				fmt.Fprintf(r.stderr, "\r\033[K")
				r.outMu.Unlock()
				return
			case <-t.C:
				b := r.bytes.Load()
				secs := time.Since(start).Seconds()
				cur, _ := r.cur.Load().(string)
				if len(cur) > 50 {
					cur = "..." + cur[len(cur)-47:]
				}
				r.outMu.Lock()
				fmt.Fprintf(r.stderr, "\r\033[K%d files, %.1f MiB (%.1f MiB/s) %s",
					r.files.Load(), float64(b)/(1<<20), float64(b)/(1<<20)/max(secs, 0.001), cur)
				r.outMu.Unlock()
			}
		}
	}()
}

func (r *restorer) stopProgress() {
	if r.progressDone == nil {
		return
	}
	close(r.progressDone)
	r.progressWG.Wait()
	r.progressDone = nil
}
