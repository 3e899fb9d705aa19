package main

import (
	"fmt"
	"io"
	"path"
	"time"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs"
)

// subvolListFlags are btrfs subvolume list's options.
type subvolListFlags struct {
	img                                      rdImageFlags
	parent, cgen, gen, uuid, puuid, ruuid    bool
	all, below, snapshots, readonly, deleted bool
}

func newSubvolListCmd() *cobra.Command {
	var f subvolListFlags
	c := &cobra.Command{
		Use:   "list [options] IMAGE",
		Short: "list subvolumes and snapshots",
		Long: `List the subvolumes of IMAGE, one line each, as btrfs subvolume list does on
a mount of the top level: "ID 256 gen 9 top level 5 path dir/sub". The path
is the last field, whatever the options.`,
		Args: operands(1, 1, "need IMAGE"),
		RunE: func(c *cobra.Command, args []string) error {
			return subvolList(&f, args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	f.img.addFlags(fl, "")
	fl.BoolVarP(&f.parent, "parent", "p", false, "print the parent ID")
	fl.BoolVarP(&f.all, "all", "a", false, "print all subvolumes; paths of those not directly in the top level get a <FS_TREE>/ prefix")
	fl.BoolVarP(&f.cgen, "ogeneration", "c", false, "print the generation the subvolume was created in")
	fl.BoolVarP(&f.gen, "generation", "g", false, "print the generation (always printed; accepted for btrfs-progs)")
	fl.BoolVarP(&f.below, "only-below", "o", false, "print only the subvolumes directly in the top level")
	fl.BoolVarP(&f.uuid, "uuid", "u", false, "print the UUID")
	fl.BoolVarP(&f.puuid, "parent-uuid", "q", false, "print the parent UUID (the snapshot's source)")
	fl.BoolVarP(&f.ruuid, "received-uuid", "R", false, "print the received UUID")
	fl.BoolVarP(&f.snapshots, "snapshots", "s", false, "list only snapshots (adds the creation generation and time)")
	fl.BoolVarP(&f.readonly, "readonly", "r", false, "list only read-only subvolumes")
	// btrfs-progs' -d is --deleted; -d here is --device, as in every reader
	fl.BoolVar(&f.deleted, "deleted", false, "list deleted subvolumes not yet cleaned (none are listed: accepted for btrfs-progs)")
	return c
}

// uuidField is a UUID column: "-" padded to a UUID's width, as btrfs-progs.
func uuidField(u gobtrfs.UUID) string { return fmt.Sprintf("%-36s", u.String()) }

// subvolList prints one line per subvolume, as btrfs subvolume list does.
// mirrors print_subvolume_column / the list filters of cmds/subvolume-list.c
func subvolList(f *subvolListFlags, image string, w, stderr io.Writer) error {
	fsys, err := f.img.open(image, true, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	subs, err := fsys.Subvolumes()
	if err != nil {
		return err
	}
	if f.deleted {
		return nil // the library lists no subvolume being deleted
	}
	for _, s := range subs {
		switch {
		case s.ID == 5:
			continue
		case f.snapshots && s.RootOffset == 0, f.readonly && !s.ReadOnly, f.below && s.ParentID != 5:
			continue
		}
		line := fmt.Sprintf("ID %d gen %d", s.ID, s.Generation)
		if f.cgen || f.snapshots {
			line += fmt.Sprintf(" cgen %d", s.Otransid)
		}
		if f.parent {
			line += fmt.Sprintf(" parent %d", s.ParentID)
		}
		line += fmt.Sprintf(" top level %d", s.ParentID)
		if f.snapshots {
			line += " otime " + progsTime(s.Otime)
		}
		if f.puuid {
			line += " parent_uuid " + uuidField(s.ParentUUID)
		}
		if f.ruuid {
			line += " received_uuid " + uuidField(s.ReceivedUUID)
		}
		if f.uuid {
			line += " uuid " + uuidField(s.UUID)
		}
		p := s.Path
		if f.all && s.ParentID != 5 {
			p = path.Join("<FS_TREE>", p)
		}
		fmt.Fprintf(w, "%s path %s\n", line, p)
	}
	return nil
}

// progsTime is btrfs-progs' "%Y-%m-%d %X" in local time; "-" for none.
func progsTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
