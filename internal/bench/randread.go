package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
)

// randread: fio 4 KiB random reads of a 32 MiB file, three ways:
//   - cold: buffered, fio's --invalidate=1 (posix_fadvise DONTNEED before
//     each pass over the file), so every read misses the kernel's page
//     cache and reaches the filesystem (our daemon, or btrfs + the loop
//     device); the daemon's own metadata caches stay warm, as the kernel's
//     btree inode does;
//   - warm: the file read once, then fio --invalidate=0: the kernel's page
//     cache serves every read (the request counters show whether any
//     reached our daemon);
//   - O_DIRECT: every read reaches the filesystem.
// Targets run interleaved, rep by rep, so load changes hit all of them;
// ratios are taken within a rep and their median and range reported.

// randreadSize is the file fio reads.
const randreadSize = 32 << 20

// fioRun is one fio result.
type fioRun struct {
	iops float64
	ios  uint64 // reads fio made
}

// runFio runs fio's 4 KiB random read job on path for secs seconds.
func runFio(path string, secs int, direct, invalidate bool) (fioRun, error) {
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	outb, err := exec.Command("fio", "--name=randread", "--filename="+path, fmt.Sprintf("--size=%d", randreadSize),
		"--bs=4k", "--rw=randread", "--ioengine=psync", "--direct="+b(direct), "--invalidate="+b(invalidate),
		"--time_based", fmt.Sprintf("--runtime=%d", secs), "--output-format=json").Output()
	if err != nil {
		return fioRun{}, fmt.Errorf("fio %s: %w", path, err)
	}
	var r struct {
		Jobs []struct {
			Read struct {
				IOPS     float64 `json:"iops"`
				TotalIOs uint64  `json:"total_ios"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if i := strings.IndexByte(string(outb), '{'); i > 0 {
		outb = outb[i:]
	}
	if err := json.Unmarshal(outb, &r); err != nil {
		return fioRun{}, fmt.Errorf("fio output: %w", err)
	}
	if len(r.Jobs) == 0 {
		return fioRun{}, errors.New("fio output: no jobs")
	}
	return fioRun{r.Jobs[0].Read.IOPS, r.Jobs[0].Read.TotalIOs}, nil
}

// writeRandreadFile writes the file fio reads (random bytes, fsynced), so
// that fio's layout phase does not run inside a measurement.
func writeRandreadFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewSource(10))
	for off := 0; off < randreadSize; off += len(buf) {
		rng.Read(buf)
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(f.Sync(), f.Close())
}

// readWhole reads path once (the warm-up of the warm run).
func readWhole(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	if err == nil && n != randreadSize {
		err = fmt.Errorf("warm-up read of %s: %d bytes, want %d", path, n, randreadSize)
	}
	return err
}

// randTarget is one filesystem under test and its results, one per rep.
type randTarget struct {
	name      string
	mnt       string
	noDirect  bool                   // O_DIRECT may be refused (tmpfs below the loopback)
	mount     *fusefs.Mount          // ours: request counters
	cold      []fioRun               // per rep
	warm, dio []fioRun               // per rep
	reqs      [3]fusefs.RequestStats // ours: requests during cold, warm, O_DIRECT (all reps)
	fioIOs    [3]uint64              // fio's reads during them (all reps)
}

// run makes one rep of the three fio runs.
func (t *randTarget) run(secs int) error {
	path := filepath.Join(t.mnt, "r")
	count := func(i int, fn func() (fioRun, error)) (fioRun, error) {
		var before fusefs.RequestStats
		if t.mount != nil {
			before = t.mount.RequestStats()
		}
		r, err := fn()
		if t.mount != nil {
			after := t.mount.RequestStats()
			t.reqs[i].Reads += after.Reads - before.Reads
			t.reqs[i].ReadBytes += after.ReadBytes - before.ReadBytes
			t.reqs[i].Getattrs += after.Getattrs - before.Getattrs
		}
		t.fioIOs[i] += r.ios
		return r, err
	}
	cold, err := count(0, func() (fioRun, error) { return runFio(path, secs, false, true) })
	if err != nil {
		return err
	}
	if err := readWhole(path); err != nil {
		return err
	}
	warm, err := count(1, func() (fioRun, error) { return runFio(path, secs, false, false) })
	if err != nil {
		return err
	}
	dio, err := count(2, func() (fioRun, error) { return runFio(path, secs, true, true) })
	if err != nil && !t.noDirect {
		return err
	}
	t.cold, t.warm, t.dio = append(t.cold, cold), append(t.warm, warm), append(t.dio, dio)
	return nil
}

func benchRandread(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench randread", flag.ContinueOnError)
	secs := fl.Int("time", 5, "seconds per fio run")
	reps := fl.Int("reps", 3, "interleaved repetitions (median and range reported)")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if _, err := exec.LookPath("fio"); err != nil {
		return errors.New("fio is needed (Debian package fio)")
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()

	var targets []*randTarget
	mt, mnt, _, err := e.ours("ours", 1<<30, fusefs.Options{})
	if err != nil {
		return err
	}
	targets = append(targets, &randTarget{name: "gobtrfs FUSE", mnt: mnt, mount: mt})
	if mnt, err := e.nullMount("null", randreadSize); err == nil {
		targets = append(targets, &randTarget{name: "go-fuse null READ server (round-trip floor)", mnt: mnt})
	} else {
		fmt.Fprintf(os.Stderr, "bench randread: %v; row left out\n", err)
	}
	if mnt, err := e.loopback("loopback"); err == nil {
		targets = append(targets, &randTarget{name: "go-fuse loopback over tmpfs", mnt: mnt, noDirect: true})
	} else {
		fmt.Fprintf(os.Stderr, "bench randread: loopback: %v; row left out\n", err)
	}
	if e.kernel {
		_, mnt, _, err := e.kernelBtrfs("kernel", 1<<30)
		if err != nil {
			return err
		}
		targets = append(targets, &randTarget{name: "kernel btrfs (loop on tmpfs)", mnt: mnt})
	}
	for _, t := range targets {
		if strings.HasPrefix(t.name, "go-fuse null") {
			continue // its file is there, all zeros
		}
		if err := writeRandreadFile(filepath.Join(t.mnt, "r")); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for rep := 0; rep < *reps; rep++ {
		for _, t := range targets {
			if err := t.run(*secs); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	printRandread(out, targets, *reps, *secs)
	return nil
}

func printRandread(out io.Writer, targets []*randTarget, reps, secs int) {
	find := func(prefix string) *randTarget {
		for _, t := range targets {
			if strings.HasPrefix(t.name, prefix) {
				return t
			}
		}
		return nil
	}
	loop, kern := find("go-fuse loopback"), find("kernel")
	tb := &table{title: fmt.Sprintf("fio --rw=randread --bs=4k --size=32M --ioengine=psync, one job, %d s per run; median (min-max) of %d interleaved reps", secs, reps),
		head: []string{"target", "cold buffered IOPS", "warm buffered IOPS", "O_DIRECT IOPS", "warm vs loopback", "cold vs kernel O_DIRECT", "O_DIRECT vs kernel O_DIRECT"}}
	iops := func(rs []fioRun) []float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = r.iops
		}
		return v
	}
	ratios := func(a []fioRun, b *randTarget, pick func(*randTarget) []fioRun) string {
		if b == nil {
			return "-"
		}
		bs := pick(b)
		var v []float64
		for i := range a {
			if i < len(bs) && bs[i].iops > 0 && a[i].iops > 0 {
				v = append(v, a[i].iops/bs[i].iops)
			}
		}
		return spread(v, "%.2f")
	}
	warmOf := func(t *randTarget) []fioRun { return t.warm }
	dioOf := func(t *randTarget) []fioRun { return t.dio }
	for _, t := range targets {
		tb.add(t.name, spread(iops(t.cold), "%.0f"), spread(iops(t.warm), "%.0f"), spread(iops(t.dio), "%.0f"),
			ratios(t.warm, loop, warmOf), ratios(t.cold, kern, dioOf), ratios(t.dio, kern, dioOf))
	}
	tb.note("cold: buffered, fio --invalidate=1 (fadvise DONTNEED before every pass over the file): every read misses the page cache")
	tb.note("warm: the file read once, then fio --invalidate=0: the kernel's page cache serves the re-reads")
	tb.note("go-fuse loopback uses FUSE passthrough where the kernel has it: its reads never reach its daemon (tmpfs: no O_DIRECT)")
	tb.note("go-fuse null READ server: READs answered with zeros at once; the cost of the FUSE round trip itself")
	tb.note("goals (issue 10): warm >= 0.9x loopback; cold >= 1.0x kernel btrfs O_DIRECT")
	for _, t := range targets {
		if t.mount == nil {
			continue
		}
		for i, phase := range []string{"cold", "warm", "O_DIRECT"} {
			r := t.reqs[i]
			tb.note("%s, %s runs: %d fio reads; %d READ requests (%d KiB) and %d GETATTR reached the daemon",
				t.name, phase, t.fioIOs[i], r.Reads, r.ReadBytes>>10, r.Getattrs)
		}
	}
	tb.print(out)
}

// spread formats the median of v and its range.
func spread(v []float64, f string) string {
	if len(v) == 0 {
		return "-"
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 1 {
		return fmt.Sprintf(f, s[0])
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf(f+" ("+f+"-"+f+")", med, s[0], s[len(s)-1])
}
