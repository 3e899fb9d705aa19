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
		r.create, err = createFsync(mnt, *files)
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
	row("gobtrfs FUSE", ours)
	t.note("ours: %d fsyncs through the log tree, commits by reason %v", st.Logged, st.Commits)
	if !e.kernel {
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
	data := bytes.Repeat([]byte{0xc3}, 4096)
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
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
