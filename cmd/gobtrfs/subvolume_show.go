package main

import (
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs"
)

func newSubvolShowCmd() *cobra.Command {
	var img rdImageFlags
	c := &cobra.Command{
		Use:   "show [options] IMAGE [PATH]",
		Short: "show what a subvolume is (default: the top level)",
		Long: `Show the subvolume at PATH inside IMAGE (the top level without PATH) as
btrfs subvolume show does: name, UUIDs, IDs, generations, flags, times and
its snapshots.`,
		Args: operands(1, 2, "need IMAGE and at most one PATH"),
		RunE: func(c *cobra.Command, args []string) error {
			p := "/"
			if len(args) == 2 {
				p = args[1]
			}
			return subvolShow(&img, args[0], p, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	img.addFlags(c.Flags(), "")
	return c
}

// subvolShow prints one subvolume. mirrors cmd_subvolume_show
func subvolShow(img *rdImageFlags, image, p string, w, stderr io.Writer) error {
	fsys, err := img.open(image, true, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	info, err := fsys.Stat(rdFSPath(p))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	st := info.Sys().(*gobtrfs.Stat)
	if st.Ino != 256 {
		return fmt.Errorf("%s: not a subvolume", p)
	}
	subs, err := fsys.Subvolumes()
	if err != nil {
		return err
	}
	var s *gobtrfs.Subvolume
	for i := range subs {
		if subs[i].ID == st.Subvol {
			s = &subs[i]
		}
	}
	if s == nil {
		return errors.New("subvolume " + fmt.Sprint(st.Subvol) + " is not in the root tree")
	}
	name := path.Base(s.Path)
	if s.ID == 5 {
		name = "<FS_TREE>"
		fmt.Fprintln(w, "/")
	} else {
		fmt.Fprintln(w, quoteName(s.Path))
	}
	flags := "-"
	if s.ReadOnly {
		flags = "readonly"
	}
	fmt.Fprintf(w, "\tName: \t\t\t%s\n", quoteName(name))
	fmt.Fprintf(w, "\tUUID: \t\t\t%s\n", s.UUID)
	fmt.Fprintf(w, "\tParent UUID: \t\t%s\n", s.ParentUUID)
	fmt.Fprintf(w, "\tReceived UUID: \t\t%s\n", s.ReceivedUUID)
	fmt.Fprintf(w, "\tCreation time: \t\t%s\n", progsZoneTime(s.Otime))
	fmt.Fprintf(w, "\tSubvolume ID: \t\t%d\n", s.ID)
	fmt.Fprintf(w, "\tGeneration: \t\t%d\n", s.Generation)
	fmt.Fprintf(w, "\tGen at creation: \t%d\n", s.Otransid)
	fmt.Fprintf(w, "\tParent ID: \t\t%d\n", s.ParentID)
	fmt.Fprintf(w, "\tTop level ID: \t\t%d\n", s.ParentID)
	fmt.Fprintf(w, "\tFlags: \t\t\t%s\n", flags)
	fmt.Fprintf(w, "\tSend transid: \t\t%d\n", s.Stransid)
	// btrfs-progs 6.2 prints the creation time as the send time
	fmt.Fprintf(w, "\tSend time: \t\t%s\n", progsZoneTime(s.Otime))
	fmt.Fprintf(w, "\tReceive transid: \t%d\n", s.Rtransid)
	fmt.Fprintf(w, "\tReceive time: \t\t%s\n", progsZoneTime(s.Rtime))
	fmt.Fprintf(w, "\tSnapshot(s):\n")
	if s.UUID != (gobtrfs.UUID{}) {
		for _, o := range subs {
			if o.ParentUUID == s.UUID {
				fmt.Fprintf(w, "\t\t\t\t%s\n", quoteName(o.Path))
			}
		}
	}
	return nil
}

// subvolGetDefault prints the default subvolume as btrfs subvolume
// get-default does.
func subvolGetDefault(img *rdImageFlags, image string, w, stderr io.Writer) error {
	fsys, err := img.open(image, true, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	id, err := fsys.DefaultSubvolume()
	if err != nil {
		return err
	}
	if id == 5 {
		fmt.Fprintln(w, "ID 5 (FS_TREE)")
		return nil
	}
	subs, err := fsys.Subvolumes()
	if err != nil {
		return err
	}
	for _, s := range subs {
		if s.ID == id {
			fmt.Fprintf(w, "ID %d gen %d top level %d path %s\n", s.ID, s.Generation, s.ParentID, quoteName(s.Path))
			return nil
		}
	}
	return fmt.Errorf("the default subvolume %d does not exist", id)
}

// progsZoneTime is btrfs-progs' "%Y-%m-%d %X %z"; "-" for none.
func progsZoneTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 -0700")
}
