package ctree

import (
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Raw leaf layout helpers for the write path. A leaf is the header, item
// headers growing up from the header, and item data growing down from the end
// of the block: item i's data lies at offset(i) (relative to the end of the
// header), offsets descend with i and the data areas are contiguous.
// These helpers read single fields instead of decoding whole items.

const (
	hdrSize  = ondisk.HeaderSize
	itemSz   = ondisk.ItemHeaderSize
	keyPtrSz = ondisk.KeyPtrSize
)

var le = binary.LittleEndian

func numItems(n *diskio.Node) int { return int(le.Uint32(n.Data[0x60:])) }

func setNumItems(n *diskio.Node, nr int) { le.PutUint32(n.Data[0x60:], uint32(nr)) }

func itemOffset(n *diskio.Node, i int) int { return int(le.Uint32(n.Data[hdrSize+i*itemSz+17:])) }

func itemSize(n *diskio.Node, i int) int { return int(le.Uint32(n.Data[hdrSize+i*itemSz+21:])) }

func setItemOffset(n *diskio.Node, i, off int) {
	le.PutUint32(n.Data[hdrSize+i*itemSz+17:], uint32(off))
}

func setItemSize(n *diskio.Node, i, size int) {
	le.PutUint32(n.Data[hdrSize+i*itemSz+21:], uint32(size))
}

func setItemKey(n *diskio.Node, i int, k ondisk.Key) { k.Encode(n.Data[hdrSize+i*itemSz:]) }

// leafDataSize is the room for item headers and data. mirrors BTRFS_LEAF_DATA_SIZE
func leafDataSize(n *diskio.Node) int { return len(n.Data) - hdrSize }

// itemDataEnd is where item i's data ends. mirrors btrfs_item_data_end
func itemDataEnd(n *diskio.Node, i int) int { return itemOffset(n, i) + itemSize(n, i) }

// leafDataEnd is the start of the lowest item data. mirrors leaf_data_end
func leafDataEnd(n *diskio.Node) int {
	nr := numItems(n)
	if nr == 0 {
		return leafDataSize(n)
	}
	return itemOffset(n, nr-1)
}

// leafSpaceUsed is the bytes items [start, start+nr) take, headers included.
// mirrors leaf_space_used
func leafSpaceUsed(n *diskio.Node, start, nr int) int {
	end := min(numItems(n), start+nr) - 1
	if nr <= 0 || end < start {
		return 0
	}
	return itemDataEnd(n, start) - itemOffset(n, end) + (end-start+1)*itemSz
}

// leafFree is the unused bytes of a leaf. mirrors btrfs_leaf_free_space
func leafFree(n *diskio.Node) int { return leafDataSize(n) - leafSpaceUsed(n, 0, numItems(n)) }

// moveLeafData moves length data bytes within a leaf (offsets relative to the header end).
func moveLeafData(n *diskio.Node, dst, src, length int) {
	if length > 0 {
		copy(n.Data[hdrSize+dst:hdrSize+dst+length], n.Data[hdrSize+src:hdrSize+src+length])
	}
}

// copyLeafData copies length data bytes from src to dst leaf.
func copyLeafData(dst *diskio.Node, dstOff int, src *diskio.Node, srcOff, length int) {
	if length > 0 {
		copy(dst.Data[hdrSize+dstOff:hdrSize+dstOff+length], src.Data[hdrSize+srcOff:hdrSize+srcOff+length])
	}
}

// moveLeafItems moves count item headers within a leaf.
func moveLeafItems(n *diskio.Node, dstSlot, srcSlot, count int) {
	if count > 0 {
		copy(n.Data[hdrSize+dstSlot*itemSz:hdrSize+(dstSlot+count)*itemSz],
			n.Data[hdrSize+srcSlot*itemSz:hdrSize+(srcSlot+count)*itemSz])
	}
}

// copyLeafItems copies count item headers from src to dst leaf.
func copyLeafItems(dst *diskio.Node, dstSlot int, src *diskio.Node, srcSlot, count int) {
	if count > 0 {
		copy(dst.Data[hdrSize+dstSlot*itemSz:hdrSize+(dstSlot+count)*itemSz],
			src.Data[hdrSize+srcSlot*itemSz:hdrSize+(srcSlot+count)*itemSz])
	}
}

// repackOffsets sets the data offsets of items [0, nr) of a leaf whose data is
// contiguous at the end of the block, in item order.
func repackOffsets(n *diskio.Node, nr int) {
	off := leafDataSize(n)
	for i := 0; i < nr; i++ {
		off -= itemSize(n, i)
		setItemOffset(n, i, off)
	}
}

// leafInsertItem makes room for an item of size zeroed bytes at slot; the
// caller has checked the free space. mirrors setup_items_for_insert
func leafInsertItem(leaf *diskio.Node, slot int, key ondisk.Key, size int) {
	nr := numItems(leaf)
	dataEnd := leafDataEnd(leaf)
	if slot < nr {
		oldData := itemDataEnd(leaf, slot)
		for i := slot; i < nr; i++ {
			setItemOffset(leaf, i, itemOffset(leaf, i)-size)
		}
		moveLeafItems(leaf, slot+1, slot, nr-slot)
		moveLeafData(leaf, dataEnd-size, dataEnd, oldData-dataEnd)
		dataEnd = oldData
	}
	setItemKey(leaf, slot, key)
	setItemOffset(leaf, slot, dataEnd-size)
	setItemSize(leaf, slot, size)
	clear(leaf.Data[hdrSize+dataEnd-size : hdrSize+dataEnd])
	setNumItems(leaf, nr+1)
}

// leafDeleteItems removes items [slot, slot+n) and closes the gap.
func leafDeleteItems(leaf *diskio.Node, slot, n int) {
	nr := numItems(leaf)
	if slot+n != nr {
		lastOff := itemOffset(leaf, slot+n-1)
		dataEnd := leafDataEnd(leaf)
		dsize := itemDataEnd(leaf, slot) - lastOff
		moveLeafData(leaf, dataEnd+dsize, dataEnd, lastOff-dataEnd)
		for i := slot + n; i < nr; i++ {
			setItemOffset(leaf, i, itemOffset(leaf, i)+dsize)
		}
		moveLeafItems(leaf, slot, slot+n, nr-slot-n)
	}
	setNumItems(leaf, nr-n)
}

// leafExtendItem grows item slot by size zeroed bytes at its end; the caller
// has checked the free space. mirrors btrfs_extend_item
func leafExtendItem(leaf *diskio.Node, slot, size int) {
	nr := numItems(leaf)
	dataEnd := leafDataEnd(leaf)
	oldData := itemDataEnd(leaf, slot)
	for i := slot; i < nr; i++ {
		setItemOffset(leaf, i, itemOffset(leaf, i)-size)
	}
	moveLeafData(leaf, dataEnd-size, dataEnd, oldData-dataEnd)
	setItemSize(leaf, slot, itemSize(leaf, slot)+size)
	clear(leaf.Data[hdrSize+oldData-size : hdrSize+oldData])
}

// leafTruncateItem shrinks item slot to newSize, dropping bytes at its end
// (fromEnd) or at its start. mirrors btrfs_truncate_item, without its key and
// inline-extent adjustments
func leafTruncateItem(leaf *diskio.Node, slot, newSize int, fromEnd bool) {
	nr := numItems(leaf)
	dataEnd := leafDataEnd(leaf)
	oldStart := itemOffset(leaf, slot)
	diff := itemSize(leaf, slot) - newSize
	for i := slot; i < nr; i++ {
		setItemOffset(leaf, i, itemOffset(leaf, i)+diff)
	}
	if fromEnd {
		moveLeafData(leaf, dataEnd+diff, dataEnd, oldStart+newSize-dataEnd)
	} else {
		moveLeafData(leaf, dataEnd+diff, dataEnd, oldStart-dataEnd)
	}
	setItemSize(leaf, slot, newSize)
}
