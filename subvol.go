package gobtrfs

import "github.com/gobtrfs/gobtrfs/internal/fsread"

// Subvolume describes one subvolume or snapshot.
type Subvolume = fsread.Subvolume

// UUID is a 16-byte identifier.
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
