package item

// OrphanItem is an ORPHAN_ITEM (key: ORPHAN or a tree id, ORPHAN_ITEM,
// inode or tree id). It has no data.
type OrphanItem struct{}

// DecodeOrphanItem accepts an orphan item (no data is read).
func DecodeOrphanItem(b []byte) (OrphanItem, error) { return OrphanItem{}, nil }

// Size is 0.
func (OrphanItem) Size() int { return 0 }

// Encode writes nothing.
func (OrphanItem) Encode(b []byte) {}

// Bytes returns an empty slice.
func (OrphanItem) Bytes() []byte { return []byte{} }
