package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
)

// benchFsync times the two fsync workloads of the tree log through the
// mount, side by side with kernel btrfs on the same scratch directory:
// fsync of a small file while a large file is dirty (the log writes only
// that inode), and create + 4 KiB write + fsync of many new files (new
// names go through the log too).
func benchFsync(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench fsync", flag.ContinueOnError)
	dirtyMiB := fl.Int("dirty", 1024, "MiB of another file left dirty (not synced) before the small fsyncs")
	rounds := fl.Int("rounds", 20, "small-file fsyncs timed")
	files := fl.Int("files", 1000, "new files created, written (4 KiB) and fsync'd")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	noWBC := fl.Bool("no-writeback-cache", false, "mount ours with -o no_writeback_cache")
	chunk := fl.Int("interleave", 50, "create+fsync on both filesystems at once, alternating every N files (0: ours, then the kernel's)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()
	size := int64(*dirtyMiB)<<20 + 2<<30
	t := &table{title: fmt.Sprintf("fsync: small file with %d MiB dirty elsewhere (%d rounds); create+4K write+fsync of %d files",
		*dirtyMiB, *rounds, *files),
		head: []string{"filesystem", "small fsync min", "median", "max", "create+fsync p50", "p99", "max"}}
	type result struct{ small, create []time.Duration }
	run := func(mnt string) (result, error) {
		var r result
		var err error
		if r.small, err = smallFsync(mnt, *dirtyMiB, *rounds); err != nil {
			return r, err
		}
		if *chunk <= 0 || !e.kernel {
			r.create, err = createFsync(mnt, *files)
		}
		return r, err
	}
	row := func(name string, r result) {
		t.add(name, ms(pct(r.small, 0)), ms(pct(r.small, 50)), ms(pct(r.small, 100)),
			ms(pct(r.create, 50)), ms(pct(r.create, 99)), ms(pct(r.create, 100)))
	}
	mt, mnt, stop, err := e.ours("ours", size, fusefs.Options{CommitInterval: time.Hour, NoWritebackCache: *noWBC})
	if err != nil {
		return err
	}
	ours, err := run(mnt)
	if err != nil {
		return err
	}
	st := mt.FsyncStats()
	if err := stop(); err != nil {
		return err
	}
	if !e.kernel {
		row("gobtrfs FUSE", ours)
		t.note("ours: %d fsyncs through the log tree, commits by reason %v", st.Logged, st.Commits)
		t.note("kernel btrfs: skipped (needs root, loop devices, btrfs and mkfs.btrfs)")
		t.print(out)
		return nil
	}
	_, kmnt, kstop, err := e.kernelBtrfs("kernel", size)
	if err != nil {
		return err
	}
	kern, err := run(kmnt)
	if err != nil {
		return err
	}
	if err := kstop(); err != nil {
		return err
	}
	if *chunk > 0 {
		// create+fsync on fresh mounts of both, interleaved: the machine's
		// load then weighs on both alike
		mt2, omnt, ostop, err := e.ours("ours-create", size, fusefs.Options{CommitInterval: time.Hour, NoWritebackCache: *noWBC})
		if err != nil {
			return err
		}
		_, kmnt, kstop, err := e.kernelBtrfs("kernel-create", size)
		if err != nil {
			return err
		}
		if ours.create, kern.create, err = createFsyncInterleaved(omnt, kmnt, *files, *chunk); err != nil {
			return err
		}
		st2 := mt2.FsyncStats()
		if err := ostop(); err != nil {
			return err
		}
		if err := kstop(); err != nil {
			return err
		}
		t.note("create+fsync interleaved every %d files; ours: %d fsyncs through the log tree, commits by reason %v", *chunk, st2.Logged, st2.Commits)
	}
	row("gobtrfs FUSE", ours)
	t.note("ours (small fsyncs): %d fsyncs through the log tree, commits by reason %v", st.Logged, st.Commits)
	row("kernel btrfs (loop, same dir)", kern)
	t.add("ratio ours/kernel", ratio(float64(pct(ours.small, 0)), float64(pct(kern.small, 0))),
		ratio(float64(pct(ours.small, 50)), float64(pct(kern.small, 50))),
		ratio(float64(pct(ours.small, 100)), float64(pct(kern.small, 100))),
		ratio(float64(pct(ours.create, 50)), float64(pct(kern.create, 50))),
		ratio(float64(pct(ours.create, 99)), float64(pct(kern.create, 99))),
		ratio(float64(pct(ours.create, 100)), float64(pct(kern.create, 100))))
	t.print(out)
	return nil
}

// pct returns the p-th percentile (0: min, 100: max) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)-1)*p/100)]
}

// smallFsync commits a small file, dirties mib MiB of another file, then
// times rounds overwrites + fsyncs of the small file.
func smallFsync(mnt string, mib, rounds int) ([]time.Duration, error) {
	small, err := os.Create(filepath.Join(mnt, "small"))
	if err != nil {
		return nil, err
	}
	defer small.Close()
	if _, err := small.Write(make([]byte, 100)); err != nil {
		return nil, err
	}
	if err := small.Sync(); err != nil {
		return nil, err
	}
	big, err := os.Create(filepath.Join(mnt, "big"))
	if err != nil {
		return nil, err
	}
	defer big.Close()
	chunk := bytes.Repeat([]byte{0x5a}, 1<<20)
	for i := 0; i < mib; i++ {
		if _, err := big.Write(chunk); err != nil {
			return nil, err
		}
	}
	var ds []time.Duration
	buf := make([]byte, 100)
	for i := 0; i < rounds; i++ {
		buf[0] = byte(i)
		if _, err := small.WriteAt(buf, 0); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := small.Sync(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}

// createFsync times create + 4 KiB write + fsync + close of n new files.
func createFsync(mnt string, n int) ([]time.Duration, error) {
	dir := filepath.Join(mnt, "created")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	return createFiles(dir, 0, n, nil)
}

// createFsyncInterleaved is createFsync on two mounts at once: chunk files
// on one, chunk on the other (which goes first alternates), until each has
// n.
func createFsyncInterleaved(a, b string, n, chunk int) (da, db []time.Duration, err error) {
	dirs := []string{filepath.Join(a, "created"), filepath.Join(b, "created")}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	for i, k := 0, 0; i < n; i, k = i+chunk, k+1 {
		end := min(i+chunk, n)
		for _, j := range [][2]int{{0, 1}, {1, 0}}[k%2] {
			if j == 0 {
				da, err = createFiles(dirs[0], i, end, da)
			} else {
				db, err = createFiles(dirs[1], i, end, db)
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return da, db, nil
}

// createFiles times create + 4 KiB write + fsync + close of files from..to-1
// in dir, appending to ds.
func createFiles(dir string, from, to int, ds []time.Duration) ([]time.Duration, error) {
	data := bytes.Repeat([]byte{0xc3}, 4096)
	for i := from; i < to; i++ {
		t0 := time.Now()
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}
