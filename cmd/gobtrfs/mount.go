package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/fusefs/mountcli"
)

func init() {
	addCommand(newMountCmd)
	// Called through a symlink named mount.fuse.gobtrfs, act as mount(8)'s helper.
	if filepath.Base(os.Args[0]) == "mount.fuse.gobtrfs" {
		if err := mountcli.Main(os.Args[1:], true); err != nil {
			fmt.Fprintf(os.Stderr, "mount.fuse.gobtrfs: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// newMountCmd hands its arguments to internal/fusefs/mountcli, which parses
// them as mount(8) helpers do (-o lists, options after the operands).
func newMountCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "mount [-o OPTIONS] [--daemon] [IMAGE MOUNTPOINT]",
		Short:              "mount an image through FUSE (no arguments: ./gobtrfs.img on ./mnt)",
		DisableFlagParsing: true,
		RunE:               func(_ *cobra.Command, args []string) error { return mountcli.Main(args, false) },
	}
}
