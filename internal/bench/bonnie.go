package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
)

// benchBonnie runs bonnie++'s small-file test with an fsync after every
// create and delete (-b) on the mount and on kernel btrfs, interleaved,
// several runs, and prints its rates and maximum latencies with ratios
// ours/kernel (rates: higher is better; latencies: lower is better).
func benchBonnie(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("bench bonnie", flag.ContinueOnError)
	n := fl.String("n", "4:0:0:1", "bonnie++ -n (number-to-stat in 1024s[:max[:min[:dirs]]])")
	runs := fl.Int("runs", 3, "runs of each filesystem, interleaved")
	base := fl.String("dir", "/dev/shm", "scratch directory (tmpfs)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if _, err := exec.LookPath("bonnie++"); err != nil {
		return fmt.Errorf("bench bonnie: bonnie++ not found (scripts/deps.sh installs it)")
	}
	e, err := newBenchEnv(*base)
	if err != nil {
		return err
	}
	defer e.close()
	if !e.kernel {
		return fmt.Errorf("bench bonnie: kernel btrfs is needed (root, loop devices, btrfs, mkfs.btrfs)")
	}
	const size = 2 << 30
	t := &table{title: fmt.Sprintf("bonnie++ -b -n %s -s 0: files/s and max latency, fsync after every create/delete (%d runs)", *n, *runs),
		head: append([]string{"run", "filesystem"}, bonnieCols...)}
	var ratios [][]float64
	for r := 0; r < *runs; r++ {
		mt, mnt, stop, err := e.ours(fmt.Sprintf("ours%d", r), size, fusefs.Options{})
		if err != nil {
			return err
		}
		ours, err := runBonnie(mnt, *n)
		st := mt.FsyncStats()
		if serr := stop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		t.note("run %d ours: %d fsyncs through the log tree, commits by reason %v", r+1, st.Logged, st.Commits)
		_, kmnt, kstop, err := e.kernelBtrfs(fmt.Sprintf("kernel%d", r), size)
		if err != nil {
			return err
		}
		kern, err := runBonnie(kmnt, *n)
		if serr := kstop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		os.Remove(fmt.Sprintf("%s/ours%d.img", e.dir, r))
		os.Remove(fmt.Sprintf("%s/kernel%d.img", e.dir, r))
		t.add(append([]string{strconv.Itoa(r + 1), "gobtrfs FUSE"}, ours.cells()...)...)
		t.add(append([]string{strconv.Itoa(r + 1), "kernel btrfs"}, kern.cells()...)...)
		rs := ours.ratios(kern)
		ratios = append(ratios, rs)
		cells := []string{strconv.Itoa(r + 1), "ratio ours/kernel"}
		for _, x := range rs {
			cells = append(cells, fmtRatio(x))
		}
		t.add(cells...)
	}
	cells := []string{"all", "median ratio (min-max)"}
	for c := range bonnieCols {
		var xs []float64
		for _, rs := range ratios {
			xs = append(xs, rs[c])
		}
		cells = append(cells, spread(xs))
	}
	t.add(cells...)
	t.print(out)
	return nil
}

// bonnieCols are the columns of a bonnie run: rates, then max latencies.
var bonnieCols = []string{"seq create/s", "seq delete/s", "rand create/s", "rand delete/s",
	"seq create max", "seq delete max", "rand create max", "rand delete max"}

// bonnieResult is what one bonnie++ run reported (0: not measured, "+++++").
type bonnieResult struct {
	rate [4]float64       // files/s
	lat  [4]time.Duration // max latency
}

func (b bonnieResult) cells() []string {
	var out []string
	for _, r := range b.rate {
		out = append(out, fmt.Sprintf("%.0f", r))
	}
	for _, l := range b.lat {
		out = append(out, fmt.Sprintf("%.1f ms", float64(l.Microseconds())/1000))
	}
	return out
}

// ratios are b over k: rates (higher is better) and latencies (lower is better).
func (b bonnieResult) ratios(k bonnieResult) []float64 {
	var out []float64
	for i := range b.rate {
		out = append(out, div(b.rate[i], k.rate[i]))
	}
	for i := range b.lat {
		out = append(out, div(float64(b.lat[i]), float64(k.lat[i])))
	}
	return out
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func fmtRatio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// spread prints the median of xs with their range.
func spread(xs []float64) string {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s) == 0 {
		return "-"
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", med, s[0], s[len(s)-1])
}

// runBonnie runs bonnie++'s file tests in dir and parses its CSV line.
func runBonnie(dir, n string) (bonnieResult, error) {
	cmd := exec.Command("bonnie++", "-q", "-u", "root", "-b", "-n", n, "-s", "0", "-d", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return bonnieResult{}, fmt.Errorf("bonnie++ in %s: %w: %s", dir, err, stderr.String())
	}
	return parseBonnie(stdout.String())
}

// parseBonnie reads bonnie++'s CSV line (format 1.98: 50 fields):
// fields 26/30/32/36 are the create/delete rates, 44/46/47/49 their
// latencies.
func parseBonnie(out string) (bonnieResult, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Split(lines[len(lines)-1], ",")
	if len(f) < 50 || f[0] != "1.98" {
		return bonnieResult{}, fmt.Errorf("bonnie++ output: want a CSV line of format 1.98 with 50 fields: %q", out)
	}
	var b bonnieResult
	for i, c := range []int{26, 30, 32, 36} {
		b.rate[i], _ = strconv.ParseFloat(f[c], 64) // "+++++": too fast to measure
	}
	for i, c := range []int{44, 46, 47, 49} {
		b.lat[i] = parseBonnieLatency(f[c])
	}
	return b, nil
}

func parseBonnieLatency(s string) time.Duration {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0
			}
			return time.Duration(x * float64(u.unit))
		}
	}
	return 0
}
