package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

func init() { addCommand(newMvCmd) }

func newMvCmd() *cobra.Command {
	var noReplace bool
	c := &cobra.Command{
		Use:   "mv [-n] IMAGE SRC DST",
		Short: "rename or move a file in an image",
		Long: `Rename SRC to DST inside IMAGE, or move it into DST when DST is a directory.
Both must be in the same subvolume.`,
		Args: operands(3, 3, "need IMAGE, SRC and DST"),
		RunE: func(_ *cobra.Command, args []string) error {
			m, err := openImgFS(args[0], fsops.Options{})
			if err != nil {
				return err
			}
			return m.finish(m.mv(args[1], args[2], noReplace))
		},
	}
	c.Flags().BoolVarP(&noReplace, "no-clobber", "n", false, "do not replace an existing DST")
	return c
}

func mvMain(args []string, stderr io.Writer) error {
	return runCommand(newMvCmd(), args, stderr, stderr)
}

func (m *imgFS) mv(src, dst string, noReplace bool) error {
	sdir, sname, err := m.lookupParent(src)
	if err != nil {
		return err
	}
	if _, _, err := m.fs.Lookup(sdir, sname); err != nil {
		return pathErr(src, err)
	}
	ddir, dname, err := m.lookupParent(dst)
	if err != nil {
		return err
	}
	if id, x, err := m.lookup(dst, true); err == nil && isDirMode(x.Mode) {
		ddir, dname = id, sname
		dst = dst + "/" + sname
	}
	var flags uint32
	if noReplace {
		flags = fsops.RenameNoReplace
	}
	if err := m.fs.Rename(sdir, sname, ddir, dname, flags); err != nil {
		return fmt.Errorf("%s -> %w", src, pathErr(dst, err))
	}
	return nil
}
