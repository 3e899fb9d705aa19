package treelog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
)

// BenchmarkWritersWhileFsync is seed 000's measurement: writers change
// small files whose items share one subvolume leaf while another goroutine
// fsyncs one of them in a loop (through the log tree). Reported: the
// writers' per-operation latency (p50, p99, max) alone and with the
// fsyncer; the fsyncer holds the tree (the transaction handle) only while
// it copies items through its prepared scratch leaf, never during the log
// I/O. Run: go test -run XXX -bench WritersWhileFsync ./internal/treelog
func BenchmarkWritersWhileFsync(b *testing.B) {
	for _, withFsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", withFsync), func(b *testing.B) {
			testutil.NeedProgs(b)
			img := filepath.Join(b.TempDir(), "img")
			testutil.Mkfs(b, img, 512<<20)
			f, err := fsops.OpenImage(img, fsops.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var ids []ondisk.InodeRef
			for i := 0; i < 9; i++ {
				id, err := f.Create(topDir, fmt.Sprintf("f%d", i), 0o100644, 0, 0, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.WriteAt(id, 0, make([]byte, 100)); err != nil {
					b.Fatal(err)
				}
				ids = append(ids, id)
			}
			if err := f.Commit(); err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var fsyncs atomic.Int64
			var wg sync.WaitGroup
			if withFsync {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := f.WriteAt(ids[0], 0, []byte("fsync'd")); err != nil {
							b.Error(err)
							return
						}
						if err := f.Fsync(ids[0]); err != nil {
							b.Error(err)
							return
						}
						fsyncs.Add(1)
					}
				}()
			}
			const writers = 4
			lat := make([][]time.Duration, writers)
			b.ResetTimer()
			var ww sync.WaitGroup
			for w := 0; w < writers; w++ {
				ww.Add(1)
				go func(w int) {
					defer ww.Done()
					id := ids[1+w]
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						if _, err := f.WriteAt(id, uint64(i%50), []byte{byte(i)}); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}(w)
			}
			ww.Wait()
			b.StopTimer()
			close(stop)
			wg.Wait()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-µs")
			}
			b.ReportMetric(float64(fsyncs.Load()), "fsyncs")
			if st := f.FsyncStats(); withFsync && st.Logged == 0 {
				b.Errorf("fsyncs did not use the log: %+v", st)
			}
		})
	}
}

// BenchmarkCreateWriteFsync is the in-process half of the fsync benchmark:
// create + 4 KiB write + fsync of new files in one directory, straight on
// fsops (no FUSE), so that its profile shows the log writer alone.
// Run: go test -run XXX -bench CreateWriteFsync -cpuprofile cpu.prof ./internal/treelog
func BenchmarkCreateWriteFsync(b *testing.B) {
	if n := os.Getenv("GOBTRFS_LOG_TARGETS"); n != "" {
		v, err := strconv.Atoi(n)
		if err != nil {
			b.Fatal(err)
		}
		defer treelog.SetMaxTargets(treelog.SetMaxTargets(v))
	}
	testutil.NeedProgs(b)
	img := filepath.Join(b.TempDir(), "img")
	testutil.Mkfs(b, img, 2<<30)
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	dir, err := f.Mkdir(topDir, "d", 0o40755, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 4096)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		id, err := f.Create(dir, fmt.Sprintf("f%07d", i), 0o100644, 0, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(id, 0, data); err != nil {
			b.Fatal(err)
		}
		if err := f.Fsync(id); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	st := f.FsyncStats()
	b.ReportMetric(float64(st.Logged), "logged")
	if st.Logged > 0 {
		b.ReportMetric(float64(st.Written)/float64(st.Logged), "blocks/fsync")
	}
	if b.N > 10 && st.Logged == 0 {
		b.Errorf("no fsync used the log: %+v", st)
	}
}

// BenchmarkBonnieFsync is bonnie++ -b's small-file test straight on fsops:
// b.N files created in one directory (create, fsync the file, fsync the
// directory), then unlinked in order (unlink, fsync the directory); the
// directory's fsyncs dominate; a commit between the phases (bonnie's files
// are committed long before they go). Reported: p50/p99 of each phase;
// GOBTRFS_DELETE_PROFILE=F writes a CPU profile of the delete phase to F.
// Run: TMPDIR=/dev/shm go test -run XXX -bench BonnieFsync -benchtime 4096x ./internal/treelog
func BenchmarkBonnieFsync(b *testing.B) {
	testutil.NeedProgs(b)
	img := filepath.Join(b.TempDir(), "img")
	testutil.Mkfs(b, img, 2<<30)
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	dir, err := f.Mkdir(topDir, "d", 0o40755, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		b.Fatal(err)
	}
	report := func(name string, lat []time.Duration) {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), name+"-p99-µs")
	}
	b.ResetTimer()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		id, err := f.Create(dir, fmt.Sprintf("f%07d", i), 0o100644, 0, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Fsync(id); err != nil {
			b.Fatal(err)
		}
		if err := f.Fsync(dir); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	report("create", lat)
	if err := f.Commit(); err != nil { // bonnie's files are committed (log-full) long before they are removed
		b.Fatal(err)
	}
	prof := startProfile(b, os.Getenv("GOBTRFS_DELETE_PROFILE"))
	defer prof()
	lat = lat[:0]
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := f.Unlink(dir, fmt.Sprintf("f%07d", i)); err != nil {
			b.Fatal(err)
		}
		if err := f.Fsync(dir); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	prof()
	report("delete", lat)
	st := f.FsyncStats()
	b.Logf("N=%d: %d logged, commits %v", b.N, st.Logged, st.Commits)
}

// startProfile writes a CPU profile of what follows to path (none if
// empty); the returned func stops it (once).
func startProfile(b *testing.B, path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
}
