package main

import (
	"io"

	"github.com/spf13/cobra"
)

func init() { addCommand(newCatCmd) }

func newCatCmd() *cobra.Command {
	var img rdImageFlags
	c := &cobra.Command{
		Use:   "cat [options] IMAGE PATH...",
		Short: "print files of an image",
		Long: `Print the content of files of IMAGE (paths from its default subvolume, or
the one --subvol names) to standard output, one after the other.`,
		Args: operands(2, -1, "need IMAGE and PATH"),
		RunE: func(c *cobra.Command, args []string) error {
			return catRun(&img, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	img.addFlags(c.Flags(), "s")
	return c
}

func catMain(args []string, stdout, stderr io.Writer) error {
	return runCommand(newCatCmd(), args, stdout, stderr)
}

func catRun(img *rdImageFlags, pos []string, stdout, stderr io.Writer) error {
	fsys, err := img.open(pos[0], false, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	buf := make([]byte, 1<<20)
	for _, p := range pos[1:] {
		f, err := fsys.OpenFile(rdFSPath(p))
		if err != nil {
			return rdPathErr(pos[0], p, err)
		}
		_, err = io.CopyBuffer(struct{ io.Writer }{stdout}, f, buf) // our 1 MiB reads, not ReadFrom's 32 KiB
		f.Close()
		if err != nil {
			return rdPathErr(pos[0], p, err)
		}
	}
	return nil
}
