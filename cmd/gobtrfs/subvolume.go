package main

// gobtrfs subvolume: create, snapshot, delete, list, show, get-default and
// set-default, with btrfs subvolume's options and output on an image.
// Paths are inside IMAGE, from its top-level subvolume: what btrfs-progs
// prints for a mount of the top level (subvolid=5).

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/namei"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func init() { addCommand(newSubvolumeCmd) }

func newSubvolumeCmd() *cobra.Command {
	g := newGroupCmd("subvolume", "create, snapshot, delete, list and show subvolumes of an image (btrfs subvolume)",
		newSubvolCreateCmd(), newSubvolSnapshotCmd(), newSubvolDeleteCmd(), newSubvolListCmd(),
		newSubvolShowCmd(), newSubvolGetDefaultCmd(), newSubvolSetDefaultCmd())
	g.Long = `Subvolumes and snapshots of an image, as btrfs subvolume manages them on a
mount. Paths are inside IMAGE, from its top-level subvolume.`
	return g
}

// subvolumeMain runs `gobtrfs subvolume ARGS...` (tests).
func subvolumeMain(args []string, stdout, stderr io.Writer) error {
	return runCommand(newSubvolumeCmd(), args, stdout, stderr)
}

func newSubvolCreateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "create IMAGE PATH...",
		Short: "create empty subvolumes",
		Args:  operands(2, -1, "need IMAGE and PATH"),
		RunE: func(_ *cobra.Command, args []string) error {
			return withImgFS(args[0], func(m *imgFS) error {
				for _, p := range args[1:] {
					if err := m.subvolCreate(p); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func newSubvolSnapshotCmd() *cobra.Command {
	var readonly bool
	c := &cobra.Command{
		Use:   "snapshot [-r] IMAGE SOURCE DEST",
		Short: "snapshot a subvolume",
		Long: `Snapshot subvolume SOURCE as DEST; when DEST is a directory the snapshot
is made inside it under SOURCE's name.`,
		Args: operands(3, 3, "need IMAGE, SOURCE and DEST"),
		RunE: func(_ *cobra.Command, args []string) error {
			return withImgFS(args[0], func(m *imgFS) error { return m.subvolSnapshot(args[1], args[2], readonly) })
		},
	}
	c.Flags().BoolVarP(&readonly, "readonly", "r", false, "make a read-only snapshot")
	return c
}

func newSubvolDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete IMAGE PATH...",
		Aliases: []string{"del"},
		Short:   "delete subvolumes",
		Args:    operands(2, -1, "need IMAGE and PATH"),
		RunE: func(_ *cobra.Command, args []string) error {
			return withImgFS(args[0], func(m *imgFS) error {
				for _, p := range args[1:] {
					if err := m.subvolDelete(p); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func newSubvolGetDefaultCmd() *cobra.Command {
	var img rdImageFlags
	c := &cobra.Command{
		Use:   "get-default [options] IMAGE",
		Short: "show the default subvolume (mounted without subvol=)",
		Args:  operands(1, 1, "need IMAGE"),
		RunE: func(c *cobra.Command, args []string) error {
			return subvolGetDefault(&img, args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	img.addFlags(c.Flags(), "")
	return c
}

func newSubvolSetDefaultCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set-default IMAGE ID|PATH",
		Short: "make a subvolume the default one (mounted without subvol=)",
		Long: `Make subvolume ID, or the subvolume at PATH inside IMAGE, the one a mount
without subvol= or subvolid= mounts, as btrfs subvolume set-default does.
ID 0 or 5 is the top level. btrfs-progs' order, set-default ID IMAGE, is
accepted too. IMAGE must not be in use.`,
		Args: operands(2, 2, "need IMAGE and the subvolume (ID or PATH)"),
		RunE: func(_ *cobra.Command, args []string) error {
			image, which := args[0], args[1]
			if _, err := strconv.ParseUint(image, 10, 64); err == nil {
				if _, serr := os.Stat(image); serr != nil {
					image, which = which, image // btrfs-progs: set-default ID PATH
				}
			}
			return withImgFS(image, func(m *imgFS) error { return m.subvolSetDefault(which) })
		},
	}
}

// withImgFS opens image for changes, runs fn and commits.
func withImgFS(image string, fn func(m *imgFS) error) error {
	m, err := openImgFS(image, fsops.Options{})
	if err != nil {
		return err
	}
	return m.finish(fn(m))
}

func (m *imgFS) subvolCreate(p string) error {
	dir, name, err := m.lookupParent(p)
	if err != nil {
		return err
	}
	if _, err := m.fs.CreateSubvolume(dir, name, 0o755, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
		return pathErr(p, err)
	}
	return nil
}

func (m *imgFS) subvolSnapshot(src, dst string, readonly bool) error {
	sid, _, err := m.lookup(src, true)
	if err != nil {
		return err
	}
	if sid.Ino != fsops.RootDirIno {
		return fmt.Errorf("%s: not a subvolume", src)
	}
	if _, x, err := m.lookup(dst, true); err == nil && isDirMode(x.Mode) {
		name := "top"
		if parts := namei.Split(strings.TrimRight(src, "/")); len(parts) > 0 {
			name = parts[len(parts)-1]
		}
		dst = dst + "/" + name
	}
	dir, name, err := m.lookupParent(dst)
	if err != nil {
		return err
	}
	if _, err := m.fs.Snapshot(sid.Root, dir, name, readonly); err != nil {
		return pathErr(dst, err)
	}
	return nil
}

func (m *imgFS) subvolDelete(p string) error {
	dir, name, err := m.lookupParent(p)
	if err != nil {
		return err
	}
	if err := m.fs.DeleteSubvolume(dir, name); err != nil {
		return pathErr(p, err)
	}
	return nil
}

// subvolSetDefault makes the subvolume which (an ID or a path) the default.
func (m *imgFS) subvolSetDefault(which string) error {
	id, err := strconv.ParseUint(which, 10, 64)
	if err != nil {
		ref, _, err := m.lookup(which, true)
		if err != nil {
			return err
		}
		if ref.Ino != fsops.RootDirIno {
			return fmt.Errorf("%s: not a subvolume", which)
		}
		id = uint64(ref.Root)
	}
	if err := m.fs.SetDefaultSubvolume(ondisk.ObjectID(id)); err != nil {
		return fmt.Errorf("set default subvolume %s: %w", which, err)
	}
	return nil
}
