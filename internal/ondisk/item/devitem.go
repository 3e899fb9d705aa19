package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// DevItem is a DEV_ITEM (key: DEV_ITEMS, DEV_ITEM, devid) in the chunk tree;
// the layout is shared with the superblock's copy (ondisk.DevItem).
type DevItem = ondisk.DevItem

// DecodeDevItem parses a dev item, checking its size.
func DecodeDevItem(b []byte) (DevItem, error) {
	if len(b) < ondisk.DevItemSize {
		return DevItem{}, short("dev item", len(b), ondisk.DevItemSize)
	}
	return ondisk.DecodeDevItem(b), nil
}

// DevItemBytes encodes a dev item to a new slice.
func DevItemBytes(d *DevItem) []byte {
	b := make([]byte, ondisk.DevItemSize)
	d.Encode(b)
	return b
}
