package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// mountLong is mountcli's usage text without its usage line.
func mountLong() string {
	_, long, _ := strings.Cut(mountcli.Usage, "\n\n")
	return strings.TrimRight(long, "\n")
}

// newMountCmd hands its arguments to internal/fusefs/mountcli, which parses
// them as mount(8) helpers do (-o lists, options after the operands).
func newMountCmd() *cobra.Command {
	c := &cobra.Command{
		Use:                "mount [-o OPTIONS] [--daemon] [-d] [IMAGE MOUNTPOINT]",
		Short:              "mount an image through FUSE (no arguments: ./gobtrfs.img on ./mnt)",
		Long:               mountLong(),
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if _, err := mountcli.Parse(args, false); err != nil && !errors.Is(err, flag.ErrHelp) {
				return usageError{err}
			}
			return mountcli.Main(args, false)
		},
	}
	c.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), mountcli.Usage) })
	return c
}
