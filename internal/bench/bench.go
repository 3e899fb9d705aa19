// Package bench benchmarks the FUSE mount side by side with kernel btrfs
// and a go-fuse loopback (`gobtrfs bench`), and prints the results as
// tables with ratios (the machines are noisy; nothing here asserts a time).
package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"text/tabwriter"
)

// benchmarks lists the `gobtrfs bench NAME` entries.
var benchmarks = map[string]benchmark{
	"sync":      {"sync time with many clean cached inodes vs none (ours and kernel btrfs)", benchSync},
	"stream":    {"falloc + 4 KiB pwrite stream vs kernel btrfs and go-fuse loopback; extent sizes", benchStream},
	"fsync":     {"fsync of a small file with 1 GiB dirty elsewhere, and create+4K write+fsync of 1,000 files, vs kernel btrfs", benchFsync},
	"commitlat": {"p99 latency of 4 KiB writes while a commit runs every second vs no commits", benchCommitlat},
	"meta":      {"cp -a of /usr/share/doc, tar -x of a Go source tree, find+stat of it; vs go-fuse loopback and kernel btrfs; peak RSS", benchMeta},
	"writeat":   {"the library's RW.WriteAt: 400 MiB in 4 KiB writes + commit, vs kernel btrfs (xfs_io pwrite -W)", benchWriteAt},
	"bonnie":    {"bonnie++ -b (fsync after every create/delete) small-file rates and max latencies vs kernel btrfs, interleaved runs", benchBonnie},
	"randread":  {"fio 4 KiB random reads of a 32 MiB file: cold and warm (page cache) buffered, O_DIRECT; vs kernel btrfs and go-fuse loopback", benchRandread},
}

// benchmark is one `gobtrfs bench` entry.
type benchmark struct {
	about string
	run   func(args []string, out io.Writer) error
}

// Main runs `gobtrfs bench [-json] [-plot FILE.png] NAME [FLAGS]`.
func Main(args []string) error {
	var o output
	args, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 || args[0] == "list" || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		names := make([]string, 0, len(benchmarks))
		for n := range benchmarks {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Println("usage: gobtrfs bench [-json] [-plot FILE.png] NAME [FLAGS]   (gobtrfs bench NAME -h for its flags)")
		fmt.Println("\n  -json           print the results as JSON instead of tables")
		fmt.Println("  -plot FILE.png  also draw each table's ratio column as a bar chart")
		fmt.Println("\nbenchmarks:")
		for _, n := range names {
			fmt.Printf("  %-10s %s\n", n, benchmarks[n].about)
		}
		return nil
	}
	b, ok := benchmarks[args[0]]
	if !ok {
		return fmt.Errorf("unknown benchmark %q (gobtrfs bench list)", args[0])
	}
	if p := os.Getenv("GOBTRFS_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	out := io.Writer(os.Stdout)
	if o.json {
		out = io.Discard
	}
	printed = nil
	err = b.run(args[1:], out)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed its usage
	}
	if err != nil {
		return err
	}
	return o.write(args[0], printed)
}

// table prints rows with aligned columns.
type table struct {
	title string
	head  []string
	rows  [][]string
	notes []string
	load  string // /proc/loadavg when printed: the machine is shared
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func (t *table) print(out io.Writer) {
	t.load = loadAvg()
	printed = append(printed, t)
	fmt.Fprintf(out, "\n%s\n", t.title)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(t.head, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	for _, n := range t.notes {
		fmt.Fprintf(out, "  %s\n", n)
	}
	fmt.Fprintf(out, "  load average when printed: %s\n", t.load)
}
