package fusefs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// redteamDuration is how long the concurrent loops of the red-team tests
// run: short in CI, longer with GOBTRFS_STRESS=1.
func redteamDuration() time.Duration {
	if os.Getenv("GOBTRFS_STRESS") != "" {
		return 60 * time.Second
	}
	return 1500 * time.Millisecond
}

func redteamSeed(t *testing.T) int64 {
	seed := time.Now().UnixNano()
	if s := os.Getenv("GOBTRFS_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (GOBTRFS_SEED to repeat)", seed)
	return seed
}

// fitrimFd issues FITRIM on fd.
func fitrimFd(fd int, start, length, minlen uint64) (uint64, error) {
	var b [24]byte
	binary.NativeEndian.PutUint64(b[0:], start)
	binary.NativeEndian.PutUint64(b[8:], length)
	binary.NativeEndian.PutUint64(b[16:], minlen)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIocFitrim, uintptr(unsafe.Pointer(&b)))
	if e != 0 {
		return 0, e
	}
	return binary.NativeEndian.Uint64(b[8:]), nil
}

// TestFstrimRacesWriters: fstrim in a loop while writers create, rewrite,
// fsync, append and delete files, snapshots of them are taken and deleted,
// and the daemon commits; every file left
// reads what was last written into it through a new mount, and the image
// checks clean with its data checksums. A crash copy taken when the loops
// stop replays (kernel) to every file whose last change was fsync'd.
func TestFstrimRacesWriters(t *testing.T) {
	needFuse(t)
	seed := redteamSeed(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	var mu sync.Mutex
	model := map[string][]byte{}
	durable := map[string]bool{} // the last change of the file was fsync'd
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var trims, trimmed atomic.Int64
	var errs []string
	fail := func(f string, a ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%d", w, rng.Intn(12))
				p := tm.path(name)
				switch op := rng.Intn(10); {
				case op < 2:
					if err := os.Remove(p); err == nil {
						mu.Lock()
						delete(model, name)
						delete(durable, name)
						mu.Unlock()
					}
				case op < 4: // append
					f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
					if err != nil {
						fail("open %s: %v", name, err)
						return
					}
					b := make([]byte, 4096*(1+rng.Intn(64)))
					rng.Read(b)
					if _, err := f.Write(b); err != nil {
						fail("append %s: %v", name, err)
					}
					synced := rng.Intn(2) == 0 && f.Sync() == nil
					f.Close()
					mu.Lock()
					model[name] = append(model[name], b...)
					durable[name] = synced
					mu.Unlock()
				default: // rewrite whole
					b := make([]byte, rng.Intn(1<<20))
					rng.Read(b)
					f, err := os.Create(p)
					if err != nil {
						fail("create %s: %v", name, err)
						return
					}
					if _, err := f.Write(b); err != nil {
						fail("write %s: %v", name, err)
					}
					synced := rng.Intn(3) == 0 && f.Sync() == nil
					f.Close()
					mu.Lock()
					model[name] = b
					durable[name] = synced
					mu.Unlock()
				}
			}
		}(w)
	}
	var snaps atomic.Int64
	wg.Add(1)
	go func() { // snapshots of the top subvolume, and deletes of them
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			src, err := unix.Open(tm.dir, unix.O_RDONLY, 0)
			if err != nil {
				fail("open root: %v", err)
				return
			}
			r := btrfsIoctlAt(tm.dir, btrfsIocSnapCreate, volArgs(false, src, 0, fmt.Sprintf("snap%d", i)))
			unix.Close(src)
			if r != "ok" {
				fail("snapshot %d: %s", i, r)
				return
			}
			snaps.Add(1)
			if i%2 == 1 {
				if r := btrfsIoctlAt(tm.dir, btrfsIocSnapDestroy, volArgs(false, 0, 0, fmt.Sprintf("snap%d", i-1))); r != "ok" {
					fail("delete snapshot %d: %s", i-1, r)
					return
				}
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		d, err := os.Open(tm.dir)
		if err != nil {
			fail("open root: %v", err)
			return
		}
		defer d.Close()
		rng := rand.New(rand.NewSource(seed - 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			start, length, minlen := uint64(0), ^uint64(0), uint64(0)
			if rng.Intn(2) == 0 {
				start = uint64(rng.Int63n(300 << 20))
				length = uint64(4096 + rng.Int63n(64<<20))
				minlen = uint64(rng.Intn(3)) * 4096 * 16
			}
			n, err := fitrimFd(int(d.Fd()), start, length, minlen)
			if err != nil {
				fail("FITRIM %d+%d min %d: %v", start, length, minlen, err)
				return
			}
			trims.Add(1)
			trimmed.Add(int64(n))
		}
	}()
	time.Sleep(redteamDuration())
	close(stop)
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	t.Logf("%d FITRIMs, %d MiB discarded, %d files, %d snapshots (every other one deleted)", trims.Load(), trimmed.Load()>>20, len(model), snaps.Load())
	check := func(dir string) {
		for name, want := range model {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes (%v), want %d written", name, len(got), err, len(want))
			}
		}
	}
	check(tm.dir)
	// a crash now: the kernel's replay of the log has every file whose
	// last change was fsync'd as it was then
	if canKernelMount() {
		crash := filepath.Join(t.TempDir(), "crash.img")
		if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		checktest.Image(t, crash)
		if !t.Failed() {
			dir := testutil.LoopMount(t, crash, "")
			n := 0
			for name, want := range model {
				if !durable[name] {
					continue
				}
				n++
				if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
					t.Errorf("kernel replay of the crash copy: %s: %d bytes (%v), want the %d fsync'd", name, len(got), err, len(want))
				}
			}
			t.Logf("crash copy: %d fsync'd files compared", n)
			testutil.Unmount(t, dir)
			checktest.Image(t, crash)
		}
	}
	tm.unmount()
	checktest.Image(t, img)
	tm = mountImage(t, img, Options{})
	check(tm.dir)
	tm.unmount()
}
