package freespace

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// AddFree records [start, start+length) of bg as free space: the range must
// be sector-aligned, inside the group and used until now.
// mirrors __btrfs_add_to_free_space_tree
func AddFree(e Editor, bg BlockGroup, start ondisk.LogicalAddr, length uint64, sectorSize uint32) error {
	return opError("add", bg, start, length, modify(e, bg, start, length, sectorSize, false))
}

// RemoveFree records [start, start+length) of bg as used: the range must be
// sector-aligned, inside the group and free until now.
// mirrors __btrfs_remove_from_free_space_tree
func RemoveFree(e Editor, bg BlockGroup, start ondisk.LogicalAddr, length uint64, sectorSize uint32) error {
	return opError("remove", bg, start, length, modify(e, bg, start, length, sectorSize, true))
}

func modify(e Editor, bg BlockGroup, start ondisk.LogicalAddr, length uint64, sectorSize uint32, remove bool) error {
	g, err := newGeom(bg, sectorSize)
	if err != nil {
		return err
	}
	s, end, err := g.checkRange(start, length)
	if err != nil {
		return err
	}
	info, err := ReadInfo(e, bg)
	if err != nil {
		return err
	}
	switch {
	case info.UsingBitmaps():
		return modifyBitmaps(e, g, info, s, end, remove)
	case remove:
		return removeExtent(e, g, info, s, end)
	default:
		return addExtent(e, g, info, s, end)
	}
}
