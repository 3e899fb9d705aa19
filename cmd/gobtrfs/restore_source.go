package main

import (
	"github.com/gobtrfs/gobtrfs"
)

// rsFile is an inode of the image as restore reads it. *gobtrfs.File
// provides it (rsGobtrfsFile). Restore keeps its own guards against hostile
// images (names, duplicates, directory cycles, sizes) even where the
// library already refuses the damage; tests reach those guards with a fake
// tree behind this interface.
type rsFile interface {
	Sys() *gobtrfs.Stat
	// Entries lists a directory in on-disk (index) order; with an error,
	// the entries read before it.
	Entries() ([]rsEntry, error)
	ReadAt(p []byte, off int64) (int, error)
	SeekData(off int64) (int64, error)
	SeekHole(off int64) (int64, error)
	ReadLink() (string, error)
	Xattrs() ([]gobtrfs.Xattr, error)
	Close() error
}

// rsEntry is one directory entry.
type rsEntry interface {
	Name() string
	// Open opens the inode the entry names (a symlink is not followed).
	Open() (rsFile, error)
	// Subvolume reports whether the entry links another subvolume, and its ID.
	Subvolume() (uint64, bool)
}

type rsGobtrfsFile struct{ *gobtrfs.File }

func (f rsGobtrfsFile) Entries() ([]rsEntry, error) {
	ents, err := f.File.ReadDir(-1)
	out := make([]rsEntry, 0, len(ents))
	for _, e := range ents {
		out = append(out, rsGobtrfsEntry{e.(*gobtrfs.DirEntry)})
	}
	return out, err
}

type rsGobtrfsEntry struct{ *gobtrfs.DirEntry }

func (e rsGobtrfsEntry) Open() (rsFile, error) {
	f, err := e.DirEntry.Open()
	if err != nil {
		return nil, err
	}
	return rsGobtrfsFile{f}, nil
}
