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
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
)

// meta: metadata-heavy workloads into the mount, go-fuse loopback and
// kernel btrfs: cp -a of a tree of a few thousand small files
// (/usr/share/doc), tar -x of a Go source tree (GOROOT/src, ~12,800
// files) and find + stat of it with the kernel's dentry and inode caches
// dropped, so every lookup and getattr reaches the filesystem.

func benchMeta(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench meta", flag.ContinueOnError)
	cpSrc := fl.String("cp", "/usr/share/doc", "tree copied with cp -a")
	tarSrc := fl.String("tar", goSrc(), "tree archived (once, on -dir) and extracted with tar -x")
	reps := fl.Int("reps", 5, "runs per target, interleaved (medians and spread are reported)")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	oursOnly := fl.Bool("ours", false, "run only the gobtrfs mount (for profiles: GOBTRFS_CPUPROFILE=FILE)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()
	cpFiles, err := countFiles(*cpSrc)
	if err != nil {
		return err
	}
	// The source of cp -a is copied to tmpfs first: read from disk, its
	// page cache state (warm for the first target, dropped or evicted for
	// others) decided the time more than the target did.
	cpCopy := filepath.Join(e.dir, "cp-source")
	if out, err := exec.Command("cp", "-a", *cpSrc, cpCopy).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s to tmpfs: %w: %s", *cpSrc, err, out)
	}
	tarball := filepath.Join(e.dir, "tree.tar")
	if out, err := exec.Command("tar", "-cf", tarball, "-C", filepath.Dir(*tarSrc), filepath.Base(*tarSrc)).CombinedOutput(); err != nil {
		return fmt.Errorf("tar -c %s: %w: %s", *tarSrc, err, out)
	}
	tarFiles, err := countFiles(*tarSrc)
	if err != nil {
		return err
	}
	works := []struct {
		name string
		run  func(mnt string) error
	}{
		{fmt.Sprintf("cp -a %s (%d entries, from a copy on tmpfs)", *cpSrc, cpFiles), func(mnt string) error {
			_, err := timeCmd("cp", "-a", cpCopy, filepath.Join(mnt, "cp"))
			return err
		}},
		{fmt.Sprintf("tar -x of %s (%d entries)", *tarSrc, tarFiles), func(mnt string) error {
			_, err := timeCmd("tar", "-xf", tarball, "-C", mnt)
			return err
		}},
		{"find -printf %s%m%T@ (lstat of every entry), caches dropped", func(mnt string) error {
			if err := dropKernelCaches(); err != nil {
				return err
			}
			_, err := timeCmd("find", filepath.Join(mnt, filepath.Base(*tarSrc)), "-printf", "%s %m %T@\n")
			return err
		}},
	}
	type target struct {
		name  string
		mount func(rep int) (string, func() error, error)
	}
	targets := []target{
		{"gobtrfs FUSE", func(rep int) (string, func() error, error) {
			mt, mnt, stop, err := e.ours(fmt.Sprintf("meta-ours%d", rep), 2<<30, fusefs.Options{})
			if err != nil {
				return "", nil, err
			}
			return mnt, func() error { err := stop(); os.Remove(mt.Image); return err }, nil
		}},
		{"go-fuse loopback over tmpfs", func(rep int) (string, func() error, error) {
			return e.loopbackStop(fmt.Sprintf("meta-loopback%d", rep))
		}},
	}
	if *oursOnly {
		targets = targets[:1]
	} else if e.kernel {
		targets = append(targets, target{"kernel btrfs (loop on tmpfs)", func(rep int) (string, func() error, error) {
			img, mnt, stop, err := e.kernelBtrfs(fmt.Sprintf("meta-kernel%d", rep), 2<<30)
			if err != nil {
				return "", nil, err
			}
			return mnt, func() error { err := stop(); os.Remove(img); return err }, nil
		}})
	}
	// times[i][j] holds every run of workload j on target i; rep r of
	// every target ran back to back, so runs with the same r saw about the
	// same machine (it is shared: load changes between reps).
	times := make([][][]time.Duration, len(targets))
	rss := make([]int64, len(targets))
	loadStart := loadAvg()
	for rep := 0; rep < *reps; rep++ {
		for i, tg := range targets {
			runtime.GC() // the previous target's garbage is not this one's
			debug.FreeOSMemory()
			resetPeakRSS()
			base := currentRSS()
			mnt, stop, err := tg.mount(rep)
			if err != nil {
				return fmt.Errorf("%s: %w", tg.name, err)
			}
			if times[i] == nil {
				times[i] = make([][]time.Duration, len(works))
			}
			for j, w := range works {
				t0 := time.Now()
				if err := w.run(mnt); err != nil {
					return errors.Join(fmt.Errorf("%s: %s: %w", tg.name, w.name, err), stop())
				}
				times[i][j] = append(times[i][j], time.Since(t0))
			}
			if err := stop(); err != nil {
				return fmt.Errorf("%s: %w", tg.name, err)
			}
			rss[i] = max(rss[i], peakRSS()-base)
		}
	}
	t := &table{title: "metadata: cp -a, tar -x and find+stat into each target (one after another in one mount)",
		head: []string{"workload", "target", "median", "min-max", "vs loopback (median, min-max of the reps)", "vs kernel"}}
	for j, w := range works {
		for i, tg := range targets {
			med := median(times[i][j])
			lo, hi := durRange(times[i][j])
			vsLoop := []float64{0}
			if len(targets) > 1 {
				vsLoop = pairedRatios(times[1][j], times[i][j])
			}
			k := "-"
			if len(targets) > 2 {
				k = ratio(float64(median(times[2][j])), float64(med))
			}
			t.add(w.name, tg.name, ms(med), ms(lo)+" - "+ms(hi),
				fmt.Sprintf("%.2f (%.2f - %.2f)", medianF(vsLoop), minF(vsLoop), maxF(vsLoop)), k)
		}
	}
	t.note("%d interleaved reps (ours, loopback, kernel, then again); ratios are speed ratios (higher is faster): "+
		"the loopback's time over ours in the same rep, median and range over the reps; goal >= 0.8 of the loopback", *reps)
	t.note("times end when the command does (buffered data and metadata not yet committed or synced); " +
		"cp -a and tar -x read their source from tmpfs (copied there once), so no target pays for the other's page cache")
	for i, tg := range targets[:min(2, len(targets))] {
		t.note("peak RSS growth of the bench process during the %s runs (the mount runs inside it; over what it held before each run): %s", tg.name, mib(rss[i]))
	}
	t.note("load average at the start: %s", loadStart)
	t.print(out)
	return nil
}

// durRange returns the smallest and largest of ds.
func durRange(ds []time.Duration) (time.Duration, time.Duration) {
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	return lo, hi
}

// pairedRatios is ref[r]/d[r] for each rep r: the speed ratio of runs
// made close in time.
func pairedRatios(ref, d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for r := range d {
		out[r] = float64(ref[r]) / float64(d[r])
	}
	return out
}

func medianF(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func minF(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxF(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// goSrc is the Go source tree of the go command on PATH (GOROOT/src).
func goSrc() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "/usr/local/go/src"
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

// countFiles counts the entries below dir (dir included).
func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(string, os.DirEntry, error) error { n++; return nil })
	return n, err
}
