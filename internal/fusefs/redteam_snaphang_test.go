package fusefs

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSnapshotRacesCreates: snapshots made and deleted in a directory
// while files are created in it finish (before: the snapshot ioctl sent
// the kernel its entry invalidation while holding nsMu; the kernel takes
// the directory's lock for it, which a CREATE there holds while it waits
// for nsMu: the mount hung).
func TestSnapshotRacesCreates(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := tm.path(fmt.Sprintf("c%d-%d", w, i%50))
				if f, err := os.Create(p); err == nil { // a new name: CREATE
					f.Close()
				}
				os.Remove(p)
			}
		}(w)
	}
	done := make(chan string, 1)
	go func() {
		defer wg.Wait()
		n := 0
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); n++ {
			src, err := unix.Open(tm.dir, unix.O_RDONLY, 0)
			if err != nil {
				done <- err.Error()
				return
			}
			r := btrfsIoctlAt(tm.dir, btrfsIocSnapCreate, volArgs(false, src, 0, "snap"))
			unix.Close(src)
			if r == "ok" {
				r = btrfsIoctlAt(tm.dir, btrfsIocSnapDestroy, volArgs(false, 0, 0, "snap"))
			}
			if r != "ok" {
				done <- r
				return
			}
		}
		done <- fmt.Sprintf("ok after %d snapshots", n)
	}()
	select {
	case r := <-done:
		close(stop)
		if r[:2] != "ok" {
			t.Fatal(r)
		}
		t.Log(r)
	case <-time.After(30 * time.Second):
		abortConnection(tm.dir)
		close(stop)
		t.Fatal("snapshots and creates in one directory: hung for 30 s (connection aborted)")
	}
	wg.Wait()
}
