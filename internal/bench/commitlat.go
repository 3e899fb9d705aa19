package bench

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
	"golang.org/x/sys/unix"
)

// commitlat: the latency of 4 KiB writes through the mount while commits
// run every second (commit=1), against the same writes with no commit
// during the run (commit=3600). A commit that holds the filesystem's locks
// while it writes back and flushes shows as a p99 far above the other's.

func benchCommitlat(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench commitlat", flag.ContinueOnError)
	secs := fl.Int("time", 5, "seconds of writes per target")
	size := fl.Int64("size", 64<<20, "file size; writes land at random 4 KiB offsets in it")
	reps := fl.Int("reps", 3, "interleaved repetitions (percentiles over all; the p99 ratio per rep, median and range)")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()
	t := &table{title: fmt.Sprintf("4 KiB pwrite at random offsets of a %d MiB file for %d s, one writer; %d interleaved reps", *size>>20, *secs, *reps),
		head: []string{"target", "op", "count", "p50", "p99", "p99.9", "max", "p99 vs no commits (per rep: median, range)"}}
	t.note("write: buffered 4 KiB pwrite; read: a second thread's O_DIRECT 4 KiB pread of the same file (reaches the daemon)")
	t.note("percentiles over the samples of all reps; ratio of p99 with a commit every second to p99 with no commit during the run, rep by rep (goal <= 2)")
	type res struct {
		name       string
		lat, rlat  []time.Duration
		p99, rp99  []float64 // per rep
		commits    int
		maxLocked  time.Duration
		maxCommits time.Duration
	}
	cases := []struct {
		name  string
		every time.Duration
	}{{"gobtrfs FUSE, no commits (commit=3600)", time.Hour}, {"gobtrfs FUSE, commit=1", time.Second}}
	results := make([]res, len(cases))
	for rep := 0; rep < *reps; rep++ {
		for i, c := range cases {
			mt, mnt, stop, err := e.ours(fmt.Sprintf("ours%d-%d", i, rep), 1<<30, fusefs.Options{CommitInterval: c.every})
			if err != nil {
				return err
			}
			lat, rlat, err := writeLatencies(filepath.Join(mnt, "f"), *size, time.Duration(*secs)*time.Second)
			if err != nil {
				return err
			}
			cs := mt.CommitStats()
			if err := stop(); err != nil {
				return err
			}
			os.Remove(mt.Image) // tmpfs is memory
			r := &results[i]
			r.name = c.name
			r.lat, r.rlat = append(r.lat, lat...), append(r.rlat, rlat...)
			r.p99, r.rp99 = append(r.p99, float64(quantile(lat, 0.99))), append(r.rp99, float64(quantile(rlat, 0.99)))
			r.commits += cs.Commits
			r.maxLocked, r.maxCommits = max(r.maxLocked, cs.MaxLocked), max(r.maxCommits, cs.MaxCommit)
		}
	}
	for _, r := range results {
		if r.commits > 0 {
			t.note("%s: %d commits, each holding the transaction lock for at most %v (whole commit at most %v)",
				r.name, r.commits, r.maxLocked.Round(time.Microsecond), r.maxCommits.Round(time.Microsecond))
		}
	}
	for _, op := range []string{"write", "read"} {
		get := func(r *res) ([]time.Duration, []float64) {
			if op == "read" {
				return r.rlat, r.rp99
			}
			return r.lat, r.p99
		}
		_, base99 := get(&results[0])
		for i := range results {
			s, p99 := get(&results[i])
			if len(s) == 0 {
				continue
			}
			sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
			var rs []float64
			for k := range p99 {
				if k < len(base99) && base99[k] > 0 {
					rs = append(rs, p99[k]/base99[k])
				}
			}
			t.add(results[i].name, op, fmt.Sprint(len(s)), us(quantile(s, 0.5)), us(quantile(s, 0.99)), us(quantile(s, 0.999)), us(s[len(s)-1]),
				spread(rs, "%.2f"))
		}
	}
	t.print(out)
	return nil
}

// quantile is the p quantile of sorted s.
func quantile(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// writeLatencies creates path with size bytes written, then writes 4 KiB
// blocks at random offsets for d while a second goroutine reads 4 KiB
// blocks with O_DIRECT, and returns the sorted write and read latencies.
func writeLatencies(path string, size int64, d time.Duration) (wlat, rlat []time.Duration, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return nil, nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, nil, err
	}
	end := time.Now().Add(d)
	rdone := make(chan error, 1)
	go func() {
		rf, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			rdone <- err
			return
		}
		defer rf.Close()
		mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // aligned
		if err != nil {
			rdone <- err
			return
		}
		defer unix.Munmap(mem)
		rng := rand.New(rand.NewSource(2))
		for time.Now().Before(end) {
			off := rng.Int63n(size/4096) * 4096
			t0 := time.Now()
			if _, err := rf.ReadAt(mem, off); err != nil {
				rdone <- err
				return
			}
			rlat = append(rlat, time.Since(t0))
		}
		rdone <- nil
	}()
	rng := rand.New(rand.NewSource(1))
	blk := buf[:4096]
	var lat []time.Duration
	for time.Now().Before(end) {
		off := rng.Int63n(size/4096) * 4096
		blk[0]++
		t0 := time.Now()
		if _, err := f.WriteAt(blk, off); err != nil {
			return nil, nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	if err := <-rdone; err != nil {
		return nil, nil, fmt.Errorf("O_DIRECT reader: %w", err)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(rlat, func(i, j int) bool { return rlat[i] < rlat[j] })
	return lat, rlat, nil
}

func us(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
