package freespace

// Thresholds returns the extent counts at which a block group's records
// change layout: to bitmaps when extent_count exceeds high, back to extents
// when it drops below low. The extent layout costs 25 bytes per free range,
// the bitmap layout 25+256 bytes per bitmap; the 100-range gap between the two
// keeps a group from thrashing between layouts.
// mirrors btrfs_set_free_space_tree_thresholds
func Thresholds(length uint64, sectorSize uint32) (high, low uint32) {
	bitmapRange := uint64(sectorSize) * BitmapBits
	if bitmapRange == 0 {
		return 0, 0
	}
	numBitmaps := (length + bitmapRange - 1) / bitmapRange
	total := numBitmaps * uint64(itemCost+BitmapSize)
	high = uint32(total / itemCost)
	if high > 100 {
		low = high - 100
	}
	return high, low
}
