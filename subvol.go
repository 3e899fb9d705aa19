package gobtrfs

import "github.com/gobtrfs/gobtrfs/internal/fsread"

// Subvolume describes one subvolume or snapshot, as `btrfs subvolume list`
// and `show` tell it. Its fields:
//
//   - ID: the subvolume ID (5 for the top level);
//   - ParentID: the subvolume holding the link to it (0 for the top level);
//   - DirID: the directory inode in the parent holding the link;
//   - Path: where it is from the top-level subvolume ("" for the top level);
//   - UUID, ParentUUID (the source of a snapshot), ReceivedUUID (btrfs receive);
//   - ReadOnly: a read-only subvolume or snapshot;
//   - Generation: the last transaction that changed it; Otransid: the one
//     that created it;
//   - Otime and Ctime: when it was created and last changed.
type Subvolume = fsread.Subvolume

// UUID is a 16-byte identifier; String prints it as 8-4-4-4-12 hex digits,
// or "-" when zero (as btrfs-progs prints a missing one).
type UUID = fsread.UUID

// Subvolumes lists every subvolume, top level first, then by ID.
func (f *FS) Subvolumes() ([]Subvolume, error) {
	if err := f.errIfClosed("subvolumes", "."); err != nil {
		return nil, err
	}
	return f.e.Subvolumes()
}

// DefaultSubvolume returns the ID of the subvolume mounted by default: the
// "default" entry of the root tree directory, or 5 (the top level).
func (f *FS) DefaultSubvolume() (uint64, error) {
	if err := f.errIfClosed("subvolumes", "."); err != nil {
		return 0, err
	}
	return f.e.DefaultSubvolume()
}

// Root returns the ID of the subvolume this FS presents as "/".
func (f *FS) Root() uint64 { return uint64(f.root.Root) }
