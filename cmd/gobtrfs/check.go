package main

import (
	"fmt"
	"io"
	"os"

	"github.com/gobtrfs/gobtrfs/internal/check"
)

func init() {
	commands["check"] = func(args []string) error { return checkMain(args, os.Stdout, os.Stderr) }
	usageText["check"] = "check a filesystem image read-only (like btrfs check --readonly)"
}

const checkUsage = "check [--check-data-csum] [-s N] [-q] [-d IMG]... IMAGE [IMAGE...]"

// checkMain runs the checker: problems and notes go to stderr, the summary
// to stdout, as btrfs check does. Any problem makes the exit status 1.
func checkMain(args []string, stdout, stderr io.Writer) error {
	fset := rdFlagSet("check", checkUsage)
	dataCsum := fset.Bool("check-data-csum", false, "also read all data and verify it against its checksums (every copy)")
	super := fset.Int("s", -1, "use superblock copy N (0 = primary, 1 and 2 = mirrors); default: the primary, or the best mirror if it is bad")
	fset.Bool("readonly", true, "accepted for btrfs check compatibility; the checker never writes")
	quiet := fset.Bool("q", false, "print only errors and the summary line")
	quietUse := fset.Bool("no-warn-in-use", false, "do not warn when another process has the image open for writing")
	var devs deviceList
	devs.register(fset)
	pos, err := rdParse(fset, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		fset.Usage()
		return fmt.Errorf("need IMAGE (every device of a multi-device filesystem: several IMAGEs or -d IMG)")
	}
	paths := append(pos, devs...)
	if *super < -1 || *super > 2 {
		return fmt.Errorf("-s %d: superblock copies are 0, 1 and 2", *super)
	}
	if !*quiet {
		fmt.Fprintf(stderr, "Checking filesystem on %s\n", pos[0])
	}
	rep, err := check.ImagesWith(paths, check.Options{CheckDataCsum: *dataCsum, SuperMirror: *super + 1})
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: %v\n", err)
		return err
	}
	if rep.InUse != "" && !*quietUse {
		fmt.Fprintf(stderr, "WARNING: %s\n", rep.InUse)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stderr, "ERROR: %s\n", p)
	}
	if rep.NumProblems > len(rep.Problems) {
		fmt.Fprintf(stderr, "ERROR: ... and %d more\n", rep.NumProblems-len(rep.Problems))
	}
	if !*quiet {
		for _, w := range rep.Warnings {
			fmt.Fprintf(stderr, "WARNING: %s\n", w)
		}
	}
	fmt.Fprintln(stdout, rep.Summary())
	if !*quiet {
		fmt.Fprintf(stdout, "total csum bytes: %d\n", rep.CsumBytes)
		fmt.Fprintf(stdout, "total tree bytes: %d\n", rep.TreeBytes)
		fmt.Fprintf(stdout, "total fs tree bytes: %d\n", rep.FSTreeBytes)
		fmt.Fprintf(stdout, "total extent tree bytes: %d\n", rep.ExtentTreeBytes)
		fmt.Fprintf(stdout, "btree space waste bytes: %d\n", rep.BtreeSpaceWaste)
		fmt.Fprintf(stdout, "file data blocks allocated: %d\n referenced %d\n", rep.DataBytesAlloc, rep.DataBytesRef)
		if *dataCsum {
			fmt.Fprintf(stdout, "data bytes verified against checksums: %d\n", rep.DataBytesVerified)
		}
	}
	if !rep.OK() {
		return fmt.Errorf("%d error(s) found", rep.NumProblems)
	}
	return nil
}
