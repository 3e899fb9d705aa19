package treelog_test

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestRedteamFsyncCommitRace: goroutines fsync their own files while
// another commits and writes; afterwards one last fsync of every file and
// the power cut: both replays must agree and show every file's last
// content. Exploratory: GOBTRFS_REDTEAM=1 (run with -race too).
func TestRedteamFsyncCommitRace(t *testing.T) {
	if os.Getenv("GOBTRFS_REDTEAM") == "" {
		t.Skip("exploratory: set GOBTRFS_REDTEAM=1")
	}
	testutil.NeedProgs(t)
	img, f, _ := newLoggedImage(t)
	d := lookupPath(t, f, "d")
	const workers, rounds = 4, 60
	var wg sync.WaitGroup
	contents := make([][]byte, workers)
	errs := make(chan error, workers+1)
	stop := make(chan struct{})
	for w := 0; w < workers; w++ {
		id := create(t, f, d, fmt.Sprintf("w%d", w), nil)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var data []byte
			for i := 0; i < rounds; i++ {
				chunk := bytes.Repeat([]byte{byte('a' + w), byte(i)}, 1000+i*37)
				if _, err := f.WriteAt(id, uint64(len(data)), chunk); err != nil {
					errs <- err
					return
				}
				data = append(data, chunk...)
				if i%5 == 4 {
					if err := f.Truncate(id, uint64(len(data)/2)); err != nil {
						errs <- err
						return
					}
					data = data[:len(data)/2]
				}
				if err := f.Fsync(id); err != nil {
					errs <- err
					return
				}
			}
			contents[w] = data
		}(w)
	}
	var cwg sync.WaitGroup
	cwg.Add(1)
	go func() {
		defer cwg.Done()
		b := lookupPath(t, f, "b")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.WriteAt(b, uint64(i%64)<<16, bytes.Repeat([]byte{byte(i)}, 1<<16)); err != nil {
				errs <- err
				return
			}
			if i%3 == 0 {
				if err := f.Commit(); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	cwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := map[string]string{}
	for w := 0; w < workers; w++ {
		id := lookupPath(t, f, fmt.Sprintf("d/w%d", w))
		write(t, f, id, uint64(len(contents[w])), []byte("end"))
		contents[w] = append(contents[w], "end"...)
		mustT(t, f.Fsync(id))
		want[fmt.Sprintf("d/w%d", w)] = fileDesc(0o644, 1, contents[w])
	}
	logStats(t, f)
	crashCheck(t, img, want)
}
