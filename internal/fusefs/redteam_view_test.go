package fusefs

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestViewReadsAfterWrites: a writer rewrites, punches, truncates and
// clones ranges of files that an O_DIRECT reader (through another open
// file, past the kernel's page cache) reads back after each change, while
// the daemon commits every 50 ms and other writers keep the transaction
// lock busy, so reads are served from the last commit when they may. Every
// read must show the change just made (a read from a commit older than a
// write is stale data).
func TestViewReadsAfterWrites(t *testing.T) {
	needFuse(t)
	seed := redteamSeed(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // commits
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				tm.Sync()
			}
		}
	}()
	go func() { // keeps the lock busy
		defer wg.Done()
		b := bytes.Repeat([]byte{7}, 256<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f, err := os.Create(tm.path(fmt.Sprintf("busy%d", i%4)))
			if err != nil {
				return
			}
			f.Write(b)
			f.Sync()
			f.Close()
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	const size = 1 << 20
	const files = 3
	rng := rand.New(rand.NewSource(seed))
	model := make([][]byte, files)
	wfd := make([]int, files)
	rfd := make([]int, files)
	for i := range model {
		model[i] = make([]byte, size)
		rng.Read(model[i])
		p := tm.path(fmt.Sprintf("f%d", i))
		must(t, os.WriteFile(p, model[i], 0o644))
		var err error
		wfd[i], err = unix.Open(p, unix.O_RDWR, 0)
		must(t, err)
		defer unix.Close(wfd[i])
		rfd[i], err = unix.Open(p, unix.O_RDONLY|unix.O_DIRECT, 0)
		must(t, err)
		defer unix.Close(rfd[i])
	}
	tm.Sync()
	buf := make([]byte, size+4096)
	deadline := time.Now().Add(redteamDuration())
	ops := 0
	for time.Now().Before(deadline) && !t.Failed() {
		i := rng.Intn(files)
		off := int64(rng.Intn(size/4096)) * 4096
		n := int64(1+rng.Intn(16)) * 4096
		if off+n > size {
			n = size - off
		}
		var what string
		switch rng.Intn(5) {
		case 0, 1:
			b := make([]byte, n)
			rng.Read(b)
			_, err := unix.Pwrite(wfd[i], b, off)
			must(t, err)
			if rng.Intn(2) == 0 {
				must(t, unix.Fsync(wfd[i]))
			}
			copy(model[i][off:], b)
			what = fmt.Sprintf("pwrite of f%d", i)
		case 2:
			must(t, unix.Fallocate(wfd[i], unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n))
			clear(model[i][off : off+n])
			what = fmt.Sprintf("punch of f%d", i)
		case 3:
			j := rng.Intn(files)
			soff := int64(rng.Intn(size/4096)) * 4096
			if soff+n > size {
				n = size - soff
			}
			if j == i && soff < off+n && off < soff+n {
				continue
			}
			if off+n > size {
				n = size - off
			}
			so, do := soff, off
			if k, err := unix.CopyFileRange(wfd[j], &so, wfd[i], &do, int(n), 0); err != nil || k != int(n) {
				t.Fatalf("copy_file_range: %d, %v", k, err)
			}
			copy(model[i][off:off+n], model[j][soff:soff+n])
			what = fmt.Sprintf("copy_file_range f%d+%d to f%d", j, soff, i)
		case 4:
			must(t, unix.Ftruncate(wfd[i], off))
			must(t, unix.Ftruncate(wfd[i], size))
			clear(model[i][off:])
			what = fmt.Sprintf("truncate and extend of f%d", i)
		}
		ops++
		// the file changed and the others, whole, O_DIRECT
		for r := range files {
			i := (i + r) % files
			got, err := unix.Pread(rfd[i], buf[:size], 0)
			must(t, err)
			if got == size && bytes.Equal(buf[:size], model[i]) {
				continue
			}
			first := -1
			for k := 0; k < min(got, size); k++ {
				if buf[k] != model[i][k] {
					first = k
					break
				}
			}
			t.Fatalf("op %d: after %s at %d+%d, an O_DIRECT read of f%d returns %d bytes, first difference at %d", ops, what, off, n, i, got, first)
		}
	}
	t.Logf("%d changes read back, %d reads from the last commit", ops, tm.RequestStats().ViewReads)
}
