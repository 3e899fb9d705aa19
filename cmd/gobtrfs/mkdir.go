package main

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/namei"
)

func init() { addCommand(newMkdirCmd) }

func newMkdirCmd() *cobra.Command {
	var parents bool
	var modeStr string
	c := &cobra.Command{
		Use:   "mkdir [-p] [-m MODE] IMAGE PATH...",
		Short: "make directories in an image",
		Long:  `Make directories inside IMAGE (paths from its top-level subvolume).`,
		Args:  operands(2, -1, "need IMAGE and at least one PATH"),
		RunE: func(_ *cobra.Command, args []string) error {
			mode, err := strconv.ParseUint(modeStr, 8, 32)
			if err != nil || mode > 0o7777 {
				return usageErrorf("bad mode %q (want octal permission bits, such as 755)", modeStr)
			}
			m, err := openImgFS(args[0], fsops.Options{})
			if err != nil {
				return err
			}
			for _, p := range args[1:] {
				if err = m.mkdir(p, uint32(mode), parents); err != nil {
					break
				}
			}
			return m.finish(err)
		},
	}
	c.Flags().BoolVarP(&parents, "parents", "p", false, "make missing parents; no error if PATH exists as a directory")
	c.Flags().StringVarP(&modeStr, "mode", "m", "755", "permission bits in octal")
	return c
}

func mkdirMain(args []string, stderr io.Writer) error {
	return runCommand(newMkdirCmd(), args, stderr, stderr)
}

// mkdir makes one directory (and with parents, the missing ones above it).
func (m *imgFS) mkdir(p string, mode uint32, parents bool) error {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if !parents {
		dir, name, err := m.lookupParent(p)
		if err != nil {
			return err
		}
		if _, err := m.fs.Mkdir(dir, name, mode, uid, gid); err != nil {
			return pathErr(p, err)
		}
		return nil
	}
	sofar := ""
	for _, name := range namei.Split(strings.TrimRight(p, "/")) {
		sofar += "/" + name
		_, x, err := m.fs.Resolve(sofar, true)
		if err == nil {
			if !isDirMode(x.Mode) {
				return pathErr(sofar, syscall.ENOTDIR)
			}
			continue
		}
		if !errors.Is(err, syscall.ENOENT) {
			return pathErr(sofar, err)
		}
		dir, base, err := m.fs.ResolveParent(sofar)
		if err == nil {
			_, err = m.fs.Mkdir(dir, base, mode, uid, gid)
		}
		if err != nil {
			return pathErr(sofar, err)
		}
	}
	return nil
}
