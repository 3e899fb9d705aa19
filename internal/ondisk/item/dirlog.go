package item

// DirLogItemSize is the size of struct btrfs_dir_log_item.
const DirLogItemSize = 8

// DirLogItem is a DIR_LOG_ITEM or DIR_LOG_INDEX item of a log tree (key:
// dir, type, first index logged): the logged range ends at End.
type DirLogItem struct {
	End uint64
}

// DecodeDirLogItem parses a dir log item.
func DecodeDirLogItem(b []byte) (DirLogItem, error) {
	if len(b) < DirLogItemSize {
		return DirLogItem{}, short("dir log item", len(b), DirLogItemSize)
	}
	return DirLogItem{le.Uint64(b)}, nil
}

// Size is DirLogItemSize.
func (x *DirLogItem) Size() int { return DirLogItemSize }

// Encode writes the item into b.
func (x *DirLogItem) Encode(b []byte) { le.PutUint64(b, x.End) }

// Bytes encodes to a new slice.
func (x *DirLogItem) Bytes() []byte {
	b := make([]byte, DirLogItemSize)
	x.Encode(b)
	return b
}
