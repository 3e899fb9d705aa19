package bench

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gobtrfs/gobtrfs"
)

// writeat: the library's RW.WriteAt (no FUSE, no syscall per write) writing
// a file in 4 KiB pieces, then committing, against the same stream
// written to kernel btrfs with xfs_io (buffered pwrite, fsync at the end).

func benchWriteAt(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench writeat", flag.ContinueOnError)
	sizeMiB := fl.Int("size", 400, "MiB written")
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
	size := int64(*sizeMiB) << 20
	imgSize := 2*size + 512<<20
	lib := func(rep int) (time.Duration, error) {
		img := filepath.Join(e.dir, fmt.Sprintf("writeat%d.img", rep))
		if err := gobtrfs.CreateImage(img, imgSize); err != nil {
			return 0, err
		}
		defer os.Remove(img)
		buf := make([]byte, 4096)
		t0 := time.Now()
		w, err := gobtrfs.OpenRW(img, nil)
		if err != nil {
			return 0, err
		}
		for off := int64(0); off < size; off += int64(len(buf)) {
			buf[0] = byte(off >> 12)
			if _, err := w.WriteAt("f", buf, off); err != nil {
				w.Close()
				return 0, err
			}
		}
		if err := w.Close(); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	kern := func(rep int) (time.Duration, error) {
		img, mnt, stop, err := e.kernelBtrfs(fmt.Sprintf("writeat-kernel%d", rep), imgSize)
		if err != nil {
			return 0, err
		}
		defer os.Remove(img)
		d, err := timeCmd("xfs_io", "-f", "-c", fmt.Sprintf("pwrite -W -b 4096 0 %dM", *sizeMiB), filepath.Join(mnt, "f"))
		if serr := stop(); err == nil {
			err = serr
		}
		return d, err
	}
	var bestLib, bestKern time.Duration
	var rss int64
	for rep := 0; rep < *reps; rep++ {
		resetPeakRSS()
		d, err := lib(rep)
		if err != nil {
			return fmt.Errorf("RW.WriteAt: %w", err)
		}
		rss = max(rss, peakRSS())
		if bestLib == 0 || d < bestLib {
			bestLib = d
		}
		if !e.kernel {
			continue
		}
		if d, err = kern(rep); err != nil {
			return fmt.Errorf("kernel btrfs: %w", err)
		}
		if bestKern == 0 || d < bestKern {
			bestKern = d
		}
	}
	t := &table{title: fmt.Sprintf("%d MiB written in 4 KiB pieces, then made durable", *sizeMiB),
		head: []string{"target", "time", "MiB/s", "vs kernel"}}
	tp := func(d time.Duration) float64 { return float64(size) / d.Seconds() }
	t.add("library RW.WriteAt + Close (commit)", ms(bestLib), fmt.Sprintf("%.0f", tp(bestLib)/(1<<20)), ratio(float64(bestKern), float64(bestLib)))
	if bestKern > 0 {
		t.add("kernel btrfs: xfs_io pwrite -W -b 4096", ms(bestKern), fmt.Sprintf("%.0f", tp(bestKern)/(1<<20)), "1.00")
	}
	t.note("best of %d interleaved runs; goal: the library >= 1.5x kernel btrfs", *reps)
	t.note("peak RSS of the bench process during RW.WriteAt: %s", mib(rss))
	t.print(out)
	return nil
}
