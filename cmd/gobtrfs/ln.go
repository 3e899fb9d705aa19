package main

import (
	"io"
	"os"
	"path"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

func init() { addCommand(newLnCmd) }

func newLnCmd() *cobra.Command {
	var symbolic bool
	c := &cobra.Command{
		Use:   "ln [-s] IMAGE TARGET LINKNAME",
		Short: "make a hard or symbolic link in an image",
		Long: `Make LINKNAME inside IMAGE a hard link to the image file TARGET, or with -s
a symbolic link whose target is the text TARGET. When LINKNAME is a
directory the link is made inside it.`,
		Args: operands(3, 3, "need IMAGE, TARGET and LINKNAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			m, err := openImgFS(args[0], fsops.Options{})
			if err != nil {
				return err
			}
			return m.finish(m.ln(args[1], args[2], symbolic))
		},
	}
	c.Flags().BoolVarP(&symbolic, "symbolic", "s", false, "make a symbolic link")
	return c
}

func lnMain(args []string, stderr io.Writer) error {
	return runCommand(newLnCmd(), args, stderr, stderr)
}

func (m *imgFS) ln(target, link string, symbolic bool) error {
	if _, x, err := m.lookup(link, true); err == nil && isDirMode(x.Mode) {
		link = link + "/" + path.Base(path.Clean("/"+target))
	}
	dir, name, err := m.lookupParent(link)
	if err != nil {
		return err
	}
	if symbolic {
		if _, err := m.fs.Symlink(dir, name, target, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
			return pathErr(link, err)
		}
		return nil
	}
	tid, _, err := m.lookup(target, false)
	if err != nil {
		return err
	}
	if err := m.fs.Link(tid, dir, name); err != nil {
		return pathErr(link, err)
	}
	return nil
}
