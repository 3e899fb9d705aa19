package freespace

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// AddBlockGroup creates the records of a new, empty block group: its
// FREE_SPACE_INFO and one FREE_SPACE_EXTENT covering the whole group.
// mirrors __add_block_group_free_space (add_new_free_space_info, then
// __btrfs_add_to_free_space_tree for the whole group)
func AddBlockGroup(e Editor, bg BlockGroup, sectorSize uint32) error {
	g, err := newGeom(bg, sectorSize)
	if err == nil {
		err = checkNoRecords(e, g)
	}
	if err == nil {
		err = e.Insert(InfoKey(bg), Info{}.Encode())
	}
	if err == nil {
		err = addExtent(e, g, Info{}, g.start, g.end)
	}
	return opError("add block group", bg, 0, 0, err)
}

// RemoveBlockGroup deletes every record of a block group, its
// FREE_SPACE_INFO included. It checks them all before deleting any.
// mirrors btrfs_remove_block_group_free_space
func RemoveBlockGroup(e Editor, bg BlockGroup) error {
	return opError("remove block group", bg, 0, 0, removeBlockGroup(e, bg))
}

func removeBlockGroup(e Editor, bg BlockGroup) error {
	if bg.Length == 0 || uint64(bg.Start)+bg.Length < uint64(bg.Start) {
		return corrupt("invalid block group %d+%d", uint64(bg.Start), bg.Length)
	}
	if _, err := ReadInfo(e, bg); err != nil {
		return err
	}
	min := InfoKey(bg)
	max := ondisk.Key{ObjectID: ondisk.ObjectID(uint64(bg.Start) + bg.Length - 1), Type: 0xff, Offset: ^uint64(0)}
	end := uint64(bg.Start) + bg.Length
	var bad error
	err := e.Range(min, max, func(k ondisk.Key, _ []byte) bool {
		switch {
		case k == min:
		case k.Type != ondisk.FreeSpaceExtentKey && k.Type != ondisk.FreeSpaceBitmapKey:
			bad = corrupt("unexpected %v among the records of block group %d", k, uint64(bg.Start))
		case uint64(k.ObjectID)+k.Offset > end || k.Offset == 0:
			bad = corrupt("record %v reaches outside block group %d+%d", k, uint64(bg.Start), bg.Length)
		}
		return bad == nil
	})
	if err := firstErr(err, bad); err != nil {
		return err
	}
	var batch [keyBatch]ondisk.Key
	for {
		n := 0
		if err := e.Range(min, max, func(k ondisk.Key, _ []byte) bool {
			batch[n] = k
			n++
			return n < keyBatch
		}); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for _, k := range batch[:n] {
			if err := e.Delete(k); err != nil {
				return err
			}
		}
	}
}

// checkNoRecords fails if the group already has an info item or records.
func checkNoRecords(e Editor, g *geom) error {
	_, max := g.groupKeys()
	var found ondisk.Key
	any := false
	err := e.Range(InfoKey(g.bg()), max, func(k ondisk.Key, _ []byte) bool {
		found, any = k, true
		return false
	})
	if err == nil && any {
		err = corrupt("block group already has free space record %v", found)
	}
	return err
}
