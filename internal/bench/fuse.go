package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/fusefs"
	"github.com/gobtrfs/gobtrfs/internal/fusefs/mountcli"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The FUSE mount's benchmarks (issue 4). Each runs its targets in one
// process, one after another, on tmpfs (-dir, default /dev/shm), and
// prints a table. Kernel columns need root, loop devices and btrfs.

// benchEnv is the scratch space of one run.
type benchEnv struct {
	dir      string
	kernel   bool // kernel btrfs on a loop device is possible
	cleanups []func()
}

func newBenchEnv(base string) (*benchEnv, error) {
	dir, err := os.MkdirTemp(base, "gobtrfs-bench")
	if err != nil {
		return nil, err
	}
	e := &benchEnv{dir: dir}
	e.kernel = os.Geteuid() == 0
	for _, c := range []string{"mkfs.btrfs", "losetup"} {
		if _, err := exec.LookPath(c); err != nil {
			e.kernel = false
		}
	}
	if b, _ := os.ReadFile("/proc/filesystems"); !strings.Contains(string(b), "btrfs") {
		e.kernel = false
	}
	return e, nil
}

func (e *benchEnv) close() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	os.RemoveAll(e.dir)
}

func (e *benchEnv) mkdir(name string) string {
	p := filepath.Join(e.dir, name)
	os.MkdirAll(p, 0o755)
	return p
}

// ours mounts a new image of size bytes; the returned func unmounts and
// closes it (writing everything back).
func (e *benchEnv) ours(name string, size int64, o fusefs.Options) (*fusefs.Mount, string, func() error, error) {
	img := filepath.Join(e.dir, name+".img")
	if err := mountcli.CreateImage(img, size); err != nil {
		return nil, "", nil, err
	}
	mnt := e.mkdir(name)
	mt, err := fusefs.New(img, mnt, o)
	if err != nil {
		return nil, "", nil, err
	}
	done := false
	stop := func() error {
		if done {
			return nil
		}
		done = true
		if err := mt.Unmount(); err != nil {
			return err
		}
		mt.Wait()
		return mt.Close()
	}
	e.cleanups = append(e.cleanups, func() { stop() })
	return mt, mnt, stop, nil
}

// kernelBtrfs makes a btrfs image on tmpfs, attaches it to a loop device and mounts it.
func (e *benchEnv) kernelBtrfs(name string, size int64) (string, string, func() error, error) {
	img := filepath.Join(e.dir, name+".img")
	f, err := os.Create(img)
	if err != nil {
		return "", "", nil, err
	}
	f.Truncate(size)
	f.Close()
	if out, err := exec.Command("mkfs.btrfs", "-q", "-f", img).CombinedOutput(); err != nil {
		return "", "", nil, fmt.Errorf("mkfs.btrfs: %w: %s", err, out)
	}
	mnt := e.mkdir(name)
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		return "", "", nil, fmt.Errorf("mount: %w: %s", err, out)
	}
	done := false
	stop := func() error {
		if done {
			return nil
		}
		done = true
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			return fmt.Errorf("umount %s: %w: %s", mnt, err, out)
		}
		return nil
	}
	e.cleanups = append(e.cleanups, func() { stop() })
	return img, mnt, stop, nil
}

// loopback mounts go-fuse's passthrough filesystem over a tmpfs directory
// until the run ends.
func (e *benchEnv) loopback(name string) (string, error) {
	mnt, _, err := e.loopbackStop(name)
	return mnt, err
}

// loopbackStop is loopback with a func that unmounts it (and removes its
// files) before the run ends.
func (e *benchEnv) loopbackStop(name string) (string, func() error, error) {
	src := e.mkdir(name + "-src")
	mnt := e.mkdir(name)
	root, err := gofs.NewLoopbackRoot(src)
	if err != nil {
		return "", nil, err
	}
	server, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: fuse.MountOptions{
		DirectMount: os.Geteuid() == 0, MaxWrite: 1 << 20, FsName: src, Name: "loopback"}})
	if err != nil {
		return "", nil, err
	}
	done := false
	stop := func() error {
		if done {
			return nil
		}
		done = true
		var err error
		for i := 0; i < 20; i++ {
			if err = server.Unmount(); err == nil {
				server.Wait()
				return os.RemoveAll(src)
			}
			time.Sleep(100 * time.Millisecond)
		}
		syscall.Unmount(mnt, syscall.MNT_DETACH)
		return fmt.Errorf("unmount %s: %w; detached it", mnt, err)
	}
	e.cleanups = append(e.cleanups, func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	})
	return mnt, stop, nil
}

func timeCmd(name string, args ...string) (time.Duration, error) {
	t0 := time.Now()
	out, err := exec.Command(name, args...).CombinedOutput()
	d := time.Since(t0)
	if err != nil {
		return d, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return d, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// ---- seed 002: sync with clean cached inodes ----

// makeClean creates n one-byte files in dir/clean with 8 writers.
func makeClean(dir string, n int) error {
	d := filepath.Join(dir, "clean")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return parallel(n, func(i int) error {
		return os.WriteFile(fmt.Sprintf("%s/f%d", d, i), []byte{'x'}, 0o644)
	})
}

// lookupClean stats every clean file, so the kernel (and we) cache its inode.
func lookupClean(dir string, n int) error {
	return parallel(n, func(i int) error {
		_, err := os.Lstat(fmt.Sprintf("%s/clean/f%d", dir, i))
		return err
	})
}

func parallel(n int, fn func(i int) error) error {
	const workers = 8
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// dirtyFiles opens n files in dir/dirty; dirty rewrites 4 KiB of each.
type dirtyFiles []*os.File

func openDirty(dir string, n int) (dirtyFiles, error) {
	d := filepath.Join(dir, "dirty")
	os.MkdirAll(d, 0o755)
	var fs dirtyFiles
	for i := 0; i < n; i++ {
		f, err := os.Create(fmt.Sprintf("%s/d%d", d, i))
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func (fs dirtyFiles) dirty(round int) error {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(round + i)
	}
	for _, f := range fs {
		if _, err := f.WriteAt(buf, 0); err != nil {
			return err
		}
	}
	return nil
}

func (fs dirtyFiles) close() {
	for _, f := range fs {
		f.Close()
	}
}

func syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// iocSync is BTRFS_IOC_SYNC (`btrfs filesystem sync`): on our mount, the
// writeback list and a commit.
func iocSync(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), 0x9408, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// syncRounds dirties the files and times each sync method, rounds times.
func syncRounds(dir string, fs dirtyFiles, rounds int, methods ...func(string) error) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(methods))
	for r := 0; r < rounds; r++ {
		for i, m := range methods {
			if err := fs.dirty(r*len(methods) + i); err != nil {
				return nil, err
			}
			t0 := time.Now()
			if err := m(dir); err != nil {
				return nil, err
			}
			out[i] = append(out[i], time.Since(t0))
		}
	}
	return out, nil
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func dropKernelCaches() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0)
}

func benchSync(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench sync", flag.ContinueOnError)
	clean := fl.Int("cached", 200000, "clean cached inodes")
	dirtyN := fl.Int("dirty", 100, "dirty inodes")
	rounds := fl.Int("rounds", 7, "syncs timed per case (median reported)")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()
	t := &table{title: fmt.Sprintf("sync with %d dirty inodes, %d clean cached inodes vs none (median of %d)",
		*dirtyN, *clean, *rounds), head: []string{"filesystem", "sync", "0 cached", fmt.Sprintf("%d cached", *clean), "ratio"}}

	// ours
	var oursIoc, oursFS [2]time.Duration
	var visited uint64
	var perInode float64
	size := int64(1 << 30)
	if *clean > 300000 {
		size = int64(*clean) * 4096
	}
	for i, n := range []int{0, *clean} {
		mt, mnt, stop, err := e.ours(fmt.Sprintf("ours%d", i), size, fusefs.Options{CommitInterval: time.Hour})
		if err != nil {
			return err
		}
		if n > 0 {
			if err := makeClean(mnt, n); err != nil {
				return err
			}
			if err := mt.Sync(); err != nil {
				return err
			}
			if err := lookupClean(mnt, n); err != nil {
				return err
			}
			perInode = measureInodeMemory(mt, mnt, n)
		}
		fs, err := openDirty(mnt, *dirtyN)
		if err != nil {
			return err
		}
		ds, err := syncRounds(mnt, fs, *rounds, iocSync, syncfs)
		if err != nil {
			return err
		}
		oursIoc[i], oursFS[i] = median(ds[0]), median(ds[1])
		if n > 0 {
			fs.dirty(99)
			iocSync(mnt)
			st := mt.CacheStats()
			visited = st.SyncVisited
			t.note("ours: the last sync visited %d inodes; %d inodes cached by the page cache, %d list adds, %d list removals",
				visited, st.CachedInodes, st.ListAdds, st.ListDels)
		}
		fs.close()
		if err := stop(); err != nil {
			return err
		}
	}
	t.add("gobtrfs FUSE", "BTRFS_IOC_SYNC (writeback list + commit)", ms(oursIoc[0]), ms(oursIoc[1]), ratio(float64(oursIoc[1]), float64(oursIoc[0])))
	t.add("gobtrfs FUSE", "syncfs(2) (kernel side only)", ms(oursFS[0]), ms(oursFS[1]), ratio(float64(oursFS[1]), float64(oursFS[0])))
	if perInode > 0 {
		t.note("ours: Go heap per clean cached inode: %.0f bytes (node, go-fuse inode, page cache entry)", perInode)
	}

	if e.kernel {
		var k [2]time.Duration
		for i, n := range []int{0, *clean} {
			_, mnt, stop, err := e.kernelBtrfs(fmt.Sprintf("kernel%d", i), size)
			if err != nil {
				return err
			}
			if n > 0 {
				if err := makeClean(mnt, n); err != nil {
					return err
				}
				syncfs(mnt)
				if err := lookupClean(mnt, n); err != nil {
					return err
				}
			}
			fs, err := openDirty(mnt, *dirtyN)
			if err != nil {
				return err
			}
			ds, err := syncRounds(mnt, fs, *rounds, syncfs)
			if err != nil {
				return err
			}
			k[i] = median(ds[0])
			fs.close()
			if err := stop(); err != nil {
				return err
			}
		}
		t.add("kernel btrfs (loop on tmpfs)", "syncfs(2)", ms(k[0]), ms(k[1]), ratio(float64(k[1]), float64(k[0])))
	} else {
		t.note("kernel btrfs: skipped (needs root, loop devices, btrfs and mkfs.btrfs)")
	}
	t.print(out)
	return nil
}

// measureInodeMemory returns the Go heap bytes per clean cached inode: the
// kernel forgets the inodes (drop_caches), we measure, the files are looked
// up again, we measure again. Needs root; 0 otherwise.
func measureInodeMemory(mt *fusefs.Mount, mnt string, n int) float64 {
	if os.Geteuid() != 0 {
		return 0
	}
	waitCached := func(want func(int) bool) bool {
		for i := 0; i < 200; i++ {
			if want(mt.CacheStats().CachedInodes) {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	}
	if dropKernelCaches() != nil || !waitCached(func(c int) bool { return c < n/10 }) {
		return 0
	}
	before := heapInUse()
	if lookupClean(mnt, n) != nil {
		return 0
	}
	after := heapInUse()
	return float64(int64(after)-int64(before)) / float64(n)
}

// ---- seed 001: the falloc + 4 KiB pwrite stream ----

func benchStream(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench stream", flag.ContinueOnError)
	sizeMiB := fl.Int("size", 400, "MiB written")
	reps := fl.Int("reps", 3, "runs per target (the best is reported)")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if _, err := exec.LookPath("xfs_io"); err != nil {
		return errors.New("xfs_io is needed (Debian package xfsprogs)")
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()
	n := fmt.Sprintf("%dM", *sizeMiB)
	bytes := float64(*sizeMiB) * (1 << 20)
	t := &table{title: fmt.Sprintf(`4 KiB write stream into a preallocated file: xfs_io -f -c "falloc 0 %s" f; xfs_io -c "pwrite -W -b 4096 0 %s" f`, n, n),
		head: []string{"target", "pwrite time", "MiB/s", "vs loopback", "vs kernel"}}
	imgSize := int64(*sizeMiB)<<20*2 + 512<<20

	run := func(mnt string) (time.Duration, error) {
		f := filepath.Join(mnt, "f")
		if _, err := timeCmd("xfs_io", "-f", "-c", "falloc 0 "+n, f); err != nil {
			return 0, err
		}
		d, err := timeCmd("xfs_io", "-c", "pwrite -W -b 4096 0 "+n, f)
		os.Remove(f)
		return d, err
	}
	ours := func(o fusefs.Options) func(int) (time.Duration, error) {
		return func(rep int) (time.Duration, error) {
			mt, mnt, stop, err := e.ours(fmt.Sprintf("ours%d-%v", rep, o.NoWritebackCache), imgSize, o)
			if err != nil {
				return 0, err
			}
			d, err := run(mnt)
			err = errors.Join(err, stop())
			os.Remove(mt.Image) // tmpfs is memory
			return d, err
		}
	}
	targets := []struct {
		name string
		run  func(rep int) (time.Duration, error)
	}{
		{"gobtrfs FUSE (default: writeback_cache)", ours(fusefs.Options{})},
		{"gobtrfs FUSE -o no_writeback_cache", ours(fusefs.Options{NoWritebackCache: true})},
		{"go-fuse loopback over tmpfs", func(rep int) (time.Duration, error) {
			mnt, err := e.loopback(fmt.Sprintf("loopback%d", rep))
			if err != nil {
				return 0, err
			}
			return run(mnt)
		}},
	}
	if e.kernel {
		targets = append(targets, struct {
			name string
			run  func(rep int) (time.Duration, error)
		}{"kernel btrfs (loop on tmpfs)", func(rep int) (time.Duration, error) {
			img, mnt, stop, err := e.kernelBtrfs(fmt.Sprintf("kernel%d", rep), imgSize)
			if err != nil {
				return 0, err
			}
			d, err := run(mnt)
			err = errors.Join(err, stop())
			os.Remove(img)
			return d, err
		}})
	}
	best := make([]time.Duration, len(targets))
	for rep := 0; rep < *reps; rep++ { // interleaved, so load changes hit every target
		for i, tg := range targets {
			d, err := tg.run(rep)
			if err != nil {
				return fmt.Errorf("%s: %w", tg.name, err)
			}
			if best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	find := func(prefix string) float64 {
		for i, tg := range targets {
			if strings.HasPrefix(tg.name, prefix) {
				return bytes / best[i].Seconds()
			}
		}
		return 0
	}
	for i, tg := range targets {
		tp := bytes / best[i].Seconds()
		t.add(tg.name, ms(best[i]), fmt.Sprintf("%.0f", tp/(1<<20)), ratio(tp, find("go-fuse")), ratio(tp, find("kernel")))
	}
	t.note("best of %d interleaved runs; ratios are throughput ratios (higher is faster); target >= 0.9 of the loopback", *reps)
	t.print(out)

	// extent sizes of a plain 4 KiB stream, and of one into a preallocated file
	t2 := &table{title: fmt.Sprintf(`extents of 4 KiB streams: xfs_io -f -c "pwrite -b 4096 0 %s" plain; falloc 0 %s + pwrite -W -b 4096 0 %s prealloc`, n, n, n),
		head: []string{"target", "file", "extent items", "average extent", "largest", "peak RSS"}}
	streams := func(mnt string) (map[string]uint64, error) {
		inos := map[string]uint64{}
		for _, f := range []struct{ name, falloc, pwrite string }{
			{"plain", "", "pwrite -b 4096 0 " + n},
			{"prealloc", "falloc 0 " + n, "pwrite -W -b 4096 0 " + n},
		} {
			p := filepath.Join(mnt, f.name)
			args := []string{"-f"}
			if f.falloc != "" {
				args = append(args, "-c", f.falloc)
			}
			if _, err := timeCmd("xfs_io", append(args, "-c", f.pwrite, p)...); err != nil {
				return nil, err
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				return nil, err
			}
			inos[f.name] = st.Ino
		}
		return inos, nil
	}
	rows := func(name, img string, inos map[string]uint64, rss string) error {
		for _, f := range []string{"plain", "prealloc"} {
			if err := addExtentRow(t2, name, f, img, inos[f], rss); err != nil {
				return err
			}
		}
		return nil
	}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	rssBase := currentRSS()
	mt, mnt, stop, err := e.ours("ours-extents", imgSize, fusefs.Options{})
	if err != nil {
		return err
	}
	inos, err := streams(mnt)
	if err != nil {
		return err
	}
	if err := stop(); err != nil {
		return err
	}
	if err := rows("gobtrfs FUSE", mt.Image, inos, mib(peakRSS()-rssBase)); err != nil {
		return err
	}
	if e.kernel {
		img, mnt, stop, err := e.kernelBtrfs("kernel-extents", imgSize)
		if err != nil {
			return err
		}
		inos, err := streams(mnt)
		if err != nil {
			return err
		}
		if err := stop(); err != nil {
			return err
		}
		if err := rows("kernel btrfs", img, inos, "-"); err != nil {
			return err
		}
	}
	t2.note("target: average >= 32 MiB (delayed allocation); btrfs caps an extent at 128 MiB, and an extent never crosses a block group")
	t2.note("peak RSS: growth of the bench process's resident set (the mount runs inside it) while it wrote both files, over the %s it held before; dirty_limit is %s", mib(rssBase), mib(256<<20))
	t2.print(out)
	return nil
}

// addExtentRow reads the committed extents of ino (FS tree) from img.
func addExtentRow(t *table, name, file, img string, ino uint64, rss string) error {
	dev, err := blockdev.OpenFile(img, true)
	if err != nil {
		return err
	}
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	tr, err := fi.Tree(ondisk.FSTreeObjectID)
	if err != nil {
		return err
	}
	var count, total, largest uint64
	err = inode.Extents(tr, ondisk.ObjectID(ino), func(x inode.FileExtent) bool {
		if x.Type != inode.ExtentInline && x.DiskBytenr != 0 {
			count++
			total += x.NumBytes
			largest = max(largest, x.NumBytes)
		}
		return true
	})
	if err != nil {
		return err
	}
	avg := 0.0
	if count > 0 {
		avg = float64(total) / float64(count)
	}
	t.add(name, file, fmt.Sprint(count), fmt.Sprintf("%.1f MiB", avg/(1<<20)), fmt.Sprintf("%.1f MiB", float64(largest)/(1<<20)), rss)
	return nil
}
