package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/check"
)

func init() { addCommand(newCheckCmd) }

// checkFlags are the options of check.
type checkFlags struct {
	dataCsum, quiet, quietUse bool
	super                     int
	devs                      deviceList
}

func newCheckCmd() *cobra.Command {
	var f checkFlags
	c := &cobra.Command{
		Use:   "check [options] IMAGE [IMAGE...]",
		Short: "check a filesystem image read-only (like btrfs check --readonly)",
		Long: `Check the filesystem in IMAGE read-only, as btrfs check --readonly does:
problems and notes go to standard error, the summary to standard output.
Any problem makes the exit status 1. The devices of a multi-device
filesystem are given as several IMAGEs or with -d IMG.`,
		Args: operands(1, -1, "need IMAGE (every device of a multi-device filesystem: several IMAGEs or -d IMG)"),
		RunE: func(c *cobra.Command, args []string) error {
			return checkRun(&f, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	f.super = -1
	fl.BoolVar(&f.dataCsum, "check-data-csum", false, "also read all data and verify it against its checksums (every copy)")
	fl.VarP(superFlag{&f.super}, "super", "s", "use superblock copy `N` (0 = primary, 1 and 2 = mirrors); default: the primary, or the best mirror if it is bad")
	fl.Bool("readonly", true, "accepted for btrfs check compatibility; the checker never writes")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors and the summary line")
	fl.BoolVar(&f.quietUse, "no-warn-in-use", false, "do not warn when another process has the image open for writing")
	fl.VarP(&f.devs, "device", "d", "another device `IMG` of a multi-device filesystem (repeat for each)")
	return c
}

// checkMain runs the checker with command-line args.
func checkMain(args []string, stdout, stderr io.Writer) error {
	return runCommand(newCheckCmd(), args, stdout, stderr)
}

// checkRun runs the checker on the devices pos (and -d).
func checkRun(f *checkFlags, pos []string, stdout, stderr io.Writer) error {
	paths := append(pos, f.devs...)
	for _, p := range paths {
		if err := checkImagePath(p); err != nil {
			return err
		}
	}
	dataCsum, super, quiet, quietUse := &f.dataCsum, &f.super, &f.quiet, &f.quietUse
	if !*quiet {
		fmt.Fprintf(stderr, "Checking filesystem on %s\n", pos[0])
	}
	rep, err := check.ImagesWith(paths, check.Options{CheckDataCsum: *dataCsum, SuperMirror: *super + 1})
	if err != nil {
		return imageErr(pos[0], err) // printed once, by main
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
