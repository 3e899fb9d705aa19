package main

// gobtrfs scrub: read and verify every copy of every checksummed block of
// an image (internal/scrub), with btrfs scrub's report.

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/progress"
	"github.com/gobtrfs/gobtrfs/internal/scrub"
)

func init() { addCommand(newScrubCmd) }

type scrubFlags struct {
	repair, readonly, raw, quiet, background bool
	devs                                     deviceList
}

func newScrubCmd() *cobra.Command {
	var f scrubFlags
	c := &cobra.Command{
		Use:   "scrub [start] [options] IMAGE [IMAGE...]",
		Short: "verify every checksum of metadata and data, every copy (btrfs scrub)",
		Long: `Read every copy of every tree block (all trees) and every data sector of
IMAGE and verify them against their checksums, as btrfs scrub does on a
mount. Each bad copy is reported with its logical address, device,
physical offset and copy number, and a bad data sector with the files that
use it. With --repair a bad copy is rewritten from a good one (DUP,
RAID1, RAID1C3/4, RAID10; RAID5/6 data from parity) and read back; IMAGE
must then not be in use. Without --repair nothing is written (btrfs scrub
-r). A progress line is shown on a terminal; the summary is btrfs scrub
status's. Exit status 1 when anything is left bad.`,
		Example: `  gobtrfs scrub disk.img
  gobtrfs scrub --repair disk.img`,
		Args: operands(1, -1, "need IMAGE (every device of a multi-device filesystem)"),
		RunE: func(c *cobra.Command, args []string) error {
			if args[0] == "start" && len(args) > 1 {
				args = args[1:] // btrfs scrub start
			}
			return scrubRun(&f, append(args, f.devs...), c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.repair, "repair", false, "rewrite bad copies from good ones")
	fl.BoolVarP(&f.readonly, "readonly", "r", false, "do not repair (the default; accepted for btrfs scrub)")
	fl.BoolVarP(&f.raw, "raw", "R", false, "print the raw counters, as btrfs scrub status -R")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line, no error lines: only the summary")
	fl.BoolVarP(&f.background, "no-background", "B", false, "accepted for btrfs scrub (scrub always runs in the foreground)")
	fl.VarP(&f.devs, "device", "d", "another device `IMG` of a multi-device filesystem (repeat for each)")
	return c
}

func scrubRun(f *scrubFlags, paths []string, stdout, stderr io.Writer) error {
	if f.repair && f.readonly {
		return usageErrorf("--repair and --readonly contradict each other")
	}
	im, err := openFSImage(paths, f.repair, stderr)
	if err != nil {
		return err
	}
	defer im.Close()
	im.quietFallback.Store(true) // every bad copy is reported below
	bar := progress.New(stderr, progress.Options{Label: "scrub", Quiet: f.quiet})
	o := scrub.Options{Repair: f.repair, Progress: bar}
	if !f.quiet {
		o.OnError = func(e scrub.Error) { bar.Printf("scrub: %s\n", quoteErrorPaths(e)) }
	}
	rep, err := scrub.Run(im.fi, o)
	bar.Stop()
	if err != nil {
		return err
	}
	for _, w := range rep.WalkErrors {
		fmt.Fprintf(stderr, "scrub: %s\n", w)
	}
	if rep.NumErrors > len(rep.Errors) && !f.quiet {
		fmt.Fprintf(stderr, "scrub: ... and %d more errors\n", rep.NumErrors-len(rep.Errors))
	}
	if rep.LogTreeSkipped && !f.quiet {
		fmt.Fprintf(stderr, "scrub: note: the log tree (fsync'd changes not yet committed) is not in the extent tree and was not scrubbed\n")
	}
	fmt.Fprintf(stdout, "Scrub of %s\n", paths[0])
	rep.Status(stdout, paths[0])
	if f.raw {
		rep.Raw(stdout)
	}
	if !rep.OK() {
		left := uint64(rep.NumErrors) - rep.Corrected
		how := "run with --repair to rewrite the bad copies from good ones"
		if f.repair || rep.Uncorrectable > 0 {
			how = fmt.Sprintf("%d uncorrectable", rep.Uncorrectable)
		}
		if len(rep.WalkErrors) > 0 {
			how += fmt.Sprintf("; %d parts of the extent tree could not be read", len(rep.WalkErrors))
		}
		return fmt.Errorf("%d errors left (%s)", left, how)
	}
	return nil
}

// quoteErrorPaths quotes the file paths of e as ls quotes names: they come
// from the image and may hold escape sequences or newlines.
func quoteErrorPaths(e scrub.Error) scrub.Error {
	e.Files = append([]scrub.FileRef(nil), e.Files...)
	for i := range e.Files {
		e.Files[i].Path = quoteName(e.Files[i].Path)
	}
	return e
}
