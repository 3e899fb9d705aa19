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
	committed := fl.Bool("committed", true, "a second O_DIRECT reader of another file, committed before the run")
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
	t.note("read committed: a third thread's O_DIRECT 4 KiB pread of another file, written and committed before the run (-committed)")
	t.note("percentiles over the samples of all reps; ratio of p99 with a commit every second to p99 with no commit during the run, rep by rep (goal <= 2)")
	type res struct {
		name       string
		lat, rlat  []time.Duration
		clat       []time.Duration // reads of the committed file
		p99, rp99  []float64       // per rep
		cp99       []float64
		commits    int
		viewReads  uint64
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
			lat, rlat, clat, err := writeLatencies(mnt, *size, time.Duration(*secs)*time.Second, *committed)
			if err != nil {
				return err
			}
			cs := mt.CommitStats()
			rs := mt.RequestStats()
			if err := stop(); err != nil {
				return err
			}
			os.Remove(mt.Image) // tmpfs is memory
			r := &results[i]
			r.name = c.name
			r.lat, r.rlat, r.clat = append(r.lat, lat...), append(r.rlat, rlat...), append(r.clat, clat...)
			r.p99, r.rp99 = append(r.p99, float64(quantile(lat, 0.99))), append(r.rp99, float64(quantile(rlat, 0.99)))
			r.cp99 = append(r.cp99, float64(quantile(clat, 0.99)))
			r.commits += cs.Commits
			r.viewReads += rs.ViewReads
			r.maxLocked, r.maxCommits = max(r.maxLocked, cs.MaxLocked), max(r.maxCommits, cs.MaxCommit)
		}
	}
	for _, r := range results {
		if r.commits > 0 {
			t.note("%s: %d commits, each holding the transaction lock for at most %v (whole commit at most %v)",
				r.name, r.commits, r.maxLocked.Round(time.Microsecond), r.maxCommits.Round(time.Microsecond))
		}
		t.note("%s: %d reads served from the last commit while the transaction lock was taken (the others waited, or found it free)",
			r.name, r.viewReads)
	}
	for _, op := range []string{"write", "read", "read committed"} {
		get := func(r *res) ([]time.Duration, []float64) {
			switch op {
			case "read":
				return r.rlat, r.rp99
			case "read committed":
				return r.clat, r.cp99
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

// writeLatencies creates dir/f with size bytes written (fsynced) and, when
// committed, dir/c too (committed: BTRFS_IOC_SYNC), then writes 4 KiB
// blocks at random offsets of f for d while a goroutine reads 4 KiB blocks
// of f with O_DIRECT and, with committed, another those of c. It returns
// the sorted latencies of the writes and of each reader.
func writeLatencies(dir string, size int64, d time.Duration, committed bool) (wlat, rlat, clat []time.Duration, err error) {
	path := filepath.Join(dir, "f")
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	fill := func(p string) (*os.File, error) {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := f.WriteAt(buf, off); err != nil {
				f.Close()
				return nil, err
			}
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	f, err := fill(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	if committed {
		c, err := fill(filepath.Join(dir, "c"))
		if err != nil {
			return nil, nil, nil, err
		}
		c.Close()
		if err := iocSync(dir); err != nil {
			return nil, nil, nil, fmt.Errorf("BTRFS_IOC_SYNC: %w", err)
		}
	}
	end := time.Now().Add(d)
	type reader struct {
		lat  []time.Duration
		done chan error
	}
	readers := []*reader{{done: make(chan error, 1)}}
	paths := []string{path}
	if committed {
		readers = append(readers, &reader{done: make(chan error, 1)})
		paths = append(paths, filepath.Join(dir, "c"))
	}
	for i, r := range readers {
		go func(r *reader, p string, seed int64) {
			r.done <- directReads(p, size, end, seed, &r.lat)
		}(r, paths[i], int64(2+i))
	}
	rng := rand.New(rand.NewSource(1))
	blk := buf[:4096]
	var lat []time.Duration
	for time.Now().Before(end) {
		off := rng.Int63n(size/4096) * 4096
		blk[0]++
		t0 := time.Now()
		if _, err := f.WriteAt(blk, off); err != nil {
			return nil, nil, nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	for i, r := range readers {
		if err := <-r.done; err != nil {
			return nil, nil, nil, fmt.Errorf("O_DIRECT reader of %s: %w", paths[i], err)
		}
		sort.Slice(r.lat, func(a, b int) bool { return r.lat[a] < r.lat[b] })
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if committed {
		clat = readers[1].lat
	}
	return lat, readers[0].lat, clat, nil
}

// directReads reads 4 KiB blocks of path at random offsets with O_DIRECT
// until end, appending each latency to lat.
func directReads(path string, size int64, end time.Time, seed int64, lat *[]time.Duration) error {
	rf, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return err
	}
	defer rf.Close()
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // aligned
	if err != nil {
		return err
	}
	defer unix.Munmap(mem)
	rng := rand.New(rand.NewSource(seed))
	for time.Now().Before(end) {
		off := rng.Int63n(size/4096) * 4096
		t0 := time.Now()
		if _, err := rf.ReadAt(mem, off); err != nil {
			return err
		}
		*lat = append(*lat, time.Since(t0))
	}
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
