package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/copyin"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

func init() { addCommand(newPutCmd) }

func newPutCmd() *cobra.Command {
	var alg string
	var quiet bool
	c := &cobra.Command{
		Use:   "put [-z ALG] IMAGE SRC... DEST",
		Short: "copy host files and trees into an image",
		Long: `Copy host files and directory trees into IMAGE, keeping mode, owner,
nanosecond times, xattrs, hard links, symlinks, fifos, sockets, device
nodes and holes. When DEST is a directory in the image each SRC is copied
into it; otherwise the single SRC is copied as DEST. Existing directories
are merged, existing files replaced. A progress line (entries, bytes,
rate, time left) is drawn on a terminal; the last line on standard error
says what was copied.`,
		Args: operands(3, -1, "need IMAGE, at least one SRC and DEST"),
		RunE: func(c *cobra.Command, args []string) error {
			a, err := compress.ParseAlg(alg)
			if err != nil {
				return usageError{fmt.Errorf("-z: %w", err)}
			}
			srcs := args[1 : len(args)-1]
			dest := args[len(args)-1]
			for _, s := range srcs {
				if _, err := os.Lstat(s); err != nil {
					return err
				}
			}
			m, err := openImgFS(args[0], fsops.Options{Compress: a})
			if err != nil {
				return err
			}
			bar := copyProgress("put", quiet, c.ErrOrStderr(), srcs...)
			err = m.finish(m.put(srcs, dest, bar))
			bar.Stop()
			if err == nil {
				copySummary(c.ErrOrStderr(), "put", bar)
			}
			return err
		},
	}
	c.Flags().StringVarP(&alg, "compress", "z", "none", "compress new data with `ALG`: zlib, lzo or zstd")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress line")
	return c
}

func putMain(args []string, stderr io.Writer) error {
	return runCommand(newPutCmd(), args, stderr, stderr)
}

// put copies srcs to dest.
func (m *imgFS) put(srcs []string, dest string, prog copyin.Progress) error {
	c := copyin.New(m.fs)
	c.Progress = prog
	did, dx, err := m.lookup(dest, true)
	switch {
	case err == nil && isDirMode(dx.Mode):
		for _, s := range srcs {
			name := filepath.Base(filepath.Clean(s))
			if name == "/" || name == "." || name == ".." {
				if err := c.CopyContents(s, did, dest); err != nil {
					return err
				}
				continue
			}
			if err := c.CopyIn(s, did, name, path.Join(dest, name)); err != nil {
				return err
			}
		}
		return nil
	case err != nil && !errors.Is(err, syscall.ENOENT):
		return err
	case len(srcs) != 1:
		if err == nil {
			return pathErr(dest, syscall.ENOTDIR)
		}
		return err
	}
	dir, name, err := m.lookupParent(dest)
	if err != nil {
		return err
	}
	return c.CopyIn(srcs[0], dir, name, dest)
}
