package main

import (
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs"
)

// subvolListFlags are btrfs subvolume list's options.
type subvolListFlags struct {
	img                                      rdImageFlags
	parent, cgen, gen, uuid, puuid, ruuid    bool
	all, below, snapshots, readonly, deleted bool
	table                                    bool
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
	fl.BoolVarP(&f.table, "table", "t", false, "print a table: a header, then the columns separated by tabs")
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
	var header bool
	for _, s := range subs {
		switch {
		case s.ID == 5:
			continue
		case f.snapshots && s.RootOffset == 0, f.readonly && !s.ReadOnly, f.below && s.ParentID != 5:
			continue
		}
		p := s.Path
		if f.all && s.ParentID != 5 {
			p = path.Join("<FS_TREE>", p)
		}
		cols := f.columns(&s, quoteName(p))
		if f.table {
			if !header {
				printSubvolTableHead(w, cols)
				header = true
			}
			for _, c := range cols {
				fmt.Fprint(w, c.value)
				if c.name != "path" {
					fmt.Fprint(w, "\t")
				}
				if c.name == "top level" {
					fmt.Fprint(w, "\t")
				}
			}
			fmt.Fprintln(w)
			continue
		}
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(w, " ")
			}
			fmt.Fprintf(w, "%s %s", c.name, c.value)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// subvolColumn is one column of btrfs subvolume list.
type subvolColumn struct{ name, value string }

// columns are the columns the options ask for, in btrfs-progs' order.
// mirrors btrfs_list_columns
func (f *subvolListFlags) columns(s *gobtrfs.Subvolume, p string) []subvolColumn {
	cols := []subvolColumn{{"ID", fmt.Sprint(s.ID)}, {"gen", fmt.Sprint(s.Generation)}}
	if f.cgen || f.snapshots {
		cols = append(cols, subvolColumn{"cgen", fmt.Sprint(s.Otransid)})
	}
	if f.parent {
		cols = append(cols, subvolColumn{"parent", fmt.Sprint(s.ParentID)})
	}
	cols = append(cols, subvolColumn{"top level", fmt.Sprint(s.ParentID)})
	if f.snapshots {
		cols = append(cols, subvolColumn{"otime", progsTime(s.Otime)})
	}
	if f.puuid {
		cols = append(cols, subvolColumn{"parent_uuid", uuidField(s.ParentUUID)})
	}
	if f.ruuid {
		cols = append(cols, subvolColumn{"received_uuid", uuidField(s.ReceivedUUID)})
	}
	if f.uuid {
		cols = append(cols, subvolColumn{"uuid", uuidField(s.UUID)})
	}
	return append(cols, subvolColumn{"path", p})
}

// printSubvolTableHead prints the -t header: the names, then dashes as
// long as each. mirrors print_all_subvol_info_tab_head
func printSubvolTableHead(w io.Writer, cols []subvolColumn) {
	for _, c := range cols {
		fmt.Fprintf(w, "%s\t", c.name)
	}
	fmt.Fprintln(w)
	for _, c := range cols {
		fmt.Fprintf(w, "%s\t", strings.Repeat("-", len(c.name)))
	}
	fmt.Fprintln(w)
}

// progsTime is btrfs-progs' "%Y-%m-%d %X" in local time; "-" for none.
func progsTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
