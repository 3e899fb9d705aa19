package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	reps := fl.Int("reps", 2, "runs per target (the best is reported)")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
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
		{fmt.Sprintf("cp -a %s (%d entries)", *cpSrc, cpFiles), func(mnt string) error {
			_, err := timeCmd("cp", "-a", *cpSrc, filepath.Join(mnt, "cp"))
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
			mnt, err := e.loopback(fmt.Sprintf("meta-loopback%d", rep))
			return mnt, func() error { return nil }, err
		}},
	}
	if e.kernel {
		targets = append(targets, target{"kernel btrfs (loop on tmpfs)", func(rep int) (string, func() error, error) {
			img, mnt, stop, err := e.kernelBtrfs(fmt.Sprintf("meta-kernel%d", rep), 2<<30)
			if err != nil {
				return "", nil, err
			}
			return mnt, func() error { err := stop(); os.Remove(img); return err }, nil
		}})
	}
	best := make([][]time.Duration, len(targets))
	var rss int64
	for rep := 0; rep < *reps; rep++ {
		for i, tg := range targets {
			resetPeakRSS()
			mnt, stop, err := tg.mount(rep)
			if err != nil {
				return fmt.Errorf("%s: %w", tg.name, err)
			}
			if best[i] == nil {
				best[i] = make([]time.Duration, len(works))
			}
			for j, w := range works {
				t0 := time.Now()
				if err := w.run(mnt); err != nil {
					return errors.Join(fmt.Errorf("%s: %s: %w", tg.name, w.name, err), stop())
				}
				if d := time.Since(t0); best[i][j] == 0 || d < best[i][j] {
					best[i][j] = d
				}
			}
			if err := stop(); err != nil {
				return fmt.Errorf("%s: %w", tg.name, err)
			}
			if i == 0 {
				rss = max(rss, peakRSS())
			}
		}
	}
	t := &table{title: "metadata: cp -a, tar -x and find+stat into each target (one after another in one mount)",
		head: []string{"workload", "target", "time", "vs loopback", "vs kernel"}}
	for j, w := range works {
		for i, tg := range targets {
			lo, k := best[1][j], time.Duration(0)
			if len(targets) > 2 {
				k = best[2][j]
			}
			t.add(w.name, tg.name, ms(best[i][j]), ratio(float64(lo), float64(best[i][j])), ratio(float64(k), float64(best[i][j])))
		}
	}
	t.note("best of %d interleaved runs; ratios are speed ratios (higher is faster); goal >= 0.8 of the loopback", *reps)
	t.note("times end when the command does (buffered data and metadata not yet committed or synced)")
	t.note("peak RSS of the bench process with the gobtrfs mount inside it: %s", mib(rss))
	t.print(out)
	return nil
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
