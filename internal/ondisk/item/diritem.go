package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// DirItemHeaderSize is struct btrfs_dir_item without name and data.
const DirItemHeaderSize = 30

// DirItem is one entry of a DIR_ITEM, DIR_INDEX or XATTR_ITEM item. For
// xattrs Name is the attribute name and Data its value; for directory
// entries Data is empty.
//
//	0 location key(17) 17 transid 25 data_len u16 27 name_len u16 29 type u8 30 name, data
type DirItem struct {
	Location ondisk.Key
	Transid  uint64
	Type     uint8
	Name     []byte
	Data     []byte
}

// DirItems is a whole DIR_ITEM or XATTR_ITEM item: entries whose name
// hashes collide. DIR_INDEX items hold exactly one.
type DirItems []DirItem

// DecodeDirItem parses the first entry of b and returns its encoded length.
func DecodeDirItem(b []byte) (DirItem, int, error) {
	var d DirItem
	if len(b) < DirItemHeaderSize {
		return d, 0, short("dir item", len(b), DirItemHeaderSize)
	}
	d.Location = ondisk.DecodeKey(b[0:])
	d.Transid = le.Uint64(b[17:])
	dataLen := int(le.Uint16(b[25:]))
	nameLen := int(le.Uint16(b[27:]))
	d.Type = b[29]
	n := DirItemHeaderSize + nameLen + dataLen
	if len(b) < n {
		return d, 0, short("dir item name and data", len(b), n)
	}
	d.Name = cloneBytes(b[DirItemHeaderSize : DirItemHeaderSize+nameLen])
	d.Data = cloneBytes(b[DirItemHeaderSize+nameLen : n])
	return d, n, nil
}

// DecodeDirItems parses a whole item. On damage it returns the entries
// before it with the error (a lookup may still find its name among them).
func DecodeDirItems(b []byte) (DirItems, error) {
	var out DirItems
	for p := 0; p < len(b); {
		d, n, err := DecodeDirItem(b[p:])
		if err != nil {
			return out, atOffset(err, p)
		}
		out = append(out, d)
		p += n
	}
	return out, nil
}

// Size is the encoded size of the entry.
func (d *DirItem) Size() int { return DirItemHeaderSize + len(d.Name) + len(d.Data) }

// Encode writes the entry into b (at least d.Size() bytes).
func (d *DirItem) Encode(b []byte) {
	d.Location.Encode(b[0:])
	le.PutUint64(b[17:], d.Transid)
	le.PutUint16(b[25:], uint16(len(d.Data)))
	le.PutUint16(b[27:], uint16(len(d.Name)))
	b[29] = d.Type
	copy(b[DirItemHeaderSize:], d.Name)
	copy(b[DirItemHeaderSize+len(d.Name):], d.Data)
}

// Bytes encodes the single entry to a new slice.
func (d *DirItem) Bytes() []byte {
	b := make([]byte, d.Size())
	d.Encode(b)
	return b
}

// Size is the encoded size of the item.
func (ds DirItems) Size() int {
	n := 0
	for i := range ds {
		n += ds[i].Size()
	}
	return n
}

// Encode writes the item into b (at least ds.Size() bytes).
func (ds DirItems) Encode(b []byte) {
	p := 0
	for i := range ds {
		ds[i].Encode(b[p:])
		p += ds[i].Size()
	}
}

// Bytes encodes to a new slice.
func (ds DirItems) Bytes() []byte {
	b := make([]byte, ds.Size())
	ds.Encode(b)
	return b
}
