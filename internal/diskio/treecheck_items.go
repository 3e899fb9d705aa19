package diskio

import (
	"encoding/binary"
	"math/bits"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// The item rules of the kernel's tree-checker: a block whose checksum is
// right but whose items break them is as corrupt as a block with a bad
// checksum (the kernel refuses it with "corrupt leaf"), so the reader skips
// that copy and tries the next. Without them a writer would COW such a block
// and carry the damage into a new, correctly checksummed block. The rules
// use only the block itself (no superblock generation), so they hold for
// blocks of the running transaction as well.

var le = binary.LittleEndian

// itemRules are what the item checks need to know of the filesystem.
type itemRules struct {
	sectorSize uint64
	nodeSize   uint32
	csumSize   int
}

func (r *Reader) itemRules() itemRules {
	return itemRules{sectorSize: uint64(r.SectorSize), nodeSize: r.NodeSize, csumSize: r.Csum.Size()}
}

// checkItems applies the tree-checker's item rules to a block that passed
// checkNode. mirrors check_leaf_item, the empty-leaf rule of
// __btrfs_check_leaf and the pointer alignment rule of __btrfs_check_node
func (ru itemRules) checkItems(n *Node) error {
	if !n.IsLeaf() {
		for i := 0; i < n.NumItems(); i++ {
			if p := n.KeyPtr(i).BlockPtr; uint64(p)%ru.sectorSize != 0 {
				return corruptf("slot %d: unaligned block pointer %d (sectorsize %d)", i, p, ru.sectorSize)
			}
		}
		return nil
	}
	nr := n.NumItems()
	if nr == 0 {
		return checkEmptyLeaf(n)
	}
	var prev ondisk.Key
	for i := 0; i < nr; i++ {
		k := n.Key(i)
		if err := ru.checkItem(n, i, k, prev); err != nil {
			return corruptf("slot %d %v: %w", i, k, err)
		}
		prev = k
	}
	return nil
}

// checkEmptyLeaf refuses an empty leaf as the root of a tree that always
// holds items.
func checkEmptyLeaf(n *Node) error {
	if n.Header().Flags&ondisk.HeaderFlagReloc != 0 {
		return nil
	}
	switch o := n.Owner(); o {
	case ondisk.RootTreeObjectID, ondisk.ChunkTreeObjectID, ondisk.DevTreeObjectID, ondisk.FSTreeObjectID,
		ondisk.DataRelocTreeObjectID, ondisk.ExtentTreeObjectID:
		return corruptf("empty leaf: tree %s is never empty", ondisk.TreeName(o))
	}
	return nil
}

func (ru itemRules) checkItem(n *Node, slot int, k, prev ondisk.Key) error {
	data := n.ItemData(slot)
	switch k.Type {
	case ondisk.ExtentCsumKey:
		return ru.checkCsumItem(n, slot, k, prev, data)
	case ondisk.ExtentDataKey:
		return ru.checkFileExtent(n, slot, k, prev, data)
	case ondisk.DirItemKey, ondisk.DirIndexKey, ondisk.XattrItemKey:
		return ru.checkDirItem(n, k, prev, slot, data)
	case ondisk.InodeRefKey:
		return checkInodeRef(n, k, prev, slot, data)
	case ondisk.InodeItemKey:
		return checkInodeItem(k, data)
	case ondisk.RootItemKey:
		return ru.checkRootItem(k, data)
	case ondisk.ExtentItemKey, ondisk.MetadataItemKey:
		return ru.checkExtentItem(k, prev, data)
	case ondisk.TreeBlockRefKey, ondisk.SharedBlockRefKey, ondisk.SharedDataRefKey:
		return ru.checkSimpleRef(k, data)
	case ondisk.ExtentDataRefKey:
		return ru.checkExtentDataRef(k, data)
	case ondisk.BlockGroupItemKey:
		return checkBlockGroupItem(k, data)
	}
	return nil
}

// checkCsumItem mirrors check_csum_item.
func (ru itemRules) checkCsumItem(n *Node, slot int, k, prev ondisk.Key, data []byte) error {
	if k.ObjectID != ondisk.ExtentCsumObjectID {
		return corruptf("csum item objectid %d, expected %d", uint64(k.ObjectID), uint64(ondisk.ExtentCsumObjectID))
	}
	if k.Offset%ru.sectorSize != 0 {
		return corruptf("unaligned key offset for csum item: %d is not a multiple of sectorsize %d", k.Offset, ru.sectorSize)
	}
	if ru.csumSize > 0 && len(data)%ru.csumSize != 0 {
		return corruptf("csum item size %d is not a multiple of the checksum size %d", len(data), ru.csumSize)
	}
	if slot > 0 && prev.Type == ondisk.ExtentCsumKey && ru.csumSize > 0 {
		end := prev.Offset + uint64(n.Item(slot-1).Size)/uint64(ru.csumSize)*ru.sectorSize
		if end > k.Offset {
			return corruptf("previous csum item ends at %d, past this item's start", end)
		}
	}
	return nil
}

// isFSTree mirrors is_fstree: subvolume trees (and the top level).
func isFSTree(id ondisk.ObjectID) bool {
	return id == ondisk.FSTreeObjectID || id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID
}

// checkPrevIno mirrors check_prev_ino: in a subvolume tree every item of
// an inode follows its INODE_ITEM, so the previous key has the same objectid.
func checkPrevIno(n *Node, slot int, k, prev ondisk.Key) error {
	if slot == 0 || !isFSTree(n.Owner()) || k.ObjectID == prev.ObjectID {
		return nil
	}
	return corruptf("previous key has objectid %d, expected %d (missing inode item)", uint64(prev.ObjectID), uint64(k.ObjectID))
}

// checkFileExtent mirrors check_extent_data_item.
func (ru itemRules) checkFileExtent(n *Node, slot int, k, prev ondisk.Key, data []byte) error {
	if k.Offset%ru.sectorSize != 0 {
		return corruptf("unaligned file offset %d for file extent", k.Offset)
	}
	if err := checkPrevIno(n, slot, k, prev); err != nil {
		return err
	}
	if len(data) < item.FileExtentInlineDataStart {
		return corruptf("file extent item of %d bytes, less than %d", len(data), item.FileExtentInlineDataStart)
	}
	ram, comp, enc, typ := le.Uint64(data[8:]), data[16], data[17], data[20]
	switch {
	case typ > item.FileExtentPrealloc:
		return corruptf("invalid file extent type %d", typ)
	case comp > item.CompressZstd:
		return corruptf("invalid compression %d for file extent", comp)
	case enc != 0:
		return corruptf("invalid encryption %d for file extent", enc)
	}
	if typ == item.FileExtentInline {
		if k.Offset != 0 {
			return corruptf("inline file extent at file offset %d, expected 0", k.Offset)
		}
		if comp == item.CompressNone && uint64(len(data)) != item.FileExtentInlineDataStart+ram {
			return corruptf("uncompressed inline extent of %d bytes with ram_bytes %d", len(data), ram)
		}
		return nil
	}
	if len(data) != item.FileExtentItemSize {
		return corruptf("reg/prealloc file extent item of %d bytes, expected %d", len(data), item.FileExtentItemSize)
	}
	numBytes := le.Uint64(data[45:])
	for _, f := range [...]struct {
		name string
		v    uint64
	}{{"ram_bytes", ram}, {"disk_bytenr", le.Uint64(data[21:])}, {"disk_num_bytes", le.Uint64(data[29:])},
		{"offset", le.Uint64(data[37:])}, {"num_bytes", numBytes}} {
		if f.v%ru.sectorSize != 0 {
			return corruptf("file extent %s %d not aligned to sectorsize %d", f.name, f.v, ru.sectorSize)
		}
	}
	if k.Offset+numBytes < k.Offset {
		return corruptf("file extent end overflows: offset %d num_bytes %d", k.Offset, numBytes)
	}
	if slot > 0 && prev.ObjectID == k.ObjectID && prev.Type == ondisk.ExtentDataKey {
		if end := ru.fileExtentEnd(prev, n.ItemData(slot-1)); end > k.Offset {
			return corruptf("previous file extent ends at %d, past this one's start", end)
		}
	}
	return nil
}

// fileExtentEnd mirrors file_extent_end (for an item already checked).
func (ru itemRules) fileExtentEnd(k ondisk.Key, data []byte) uint64 {
	if len(data) < item.FileExtentInlineDataStart {
		return k.Offset
	}
	if data[20] == item.FileExtentInline {
		return (k.Offset + le.Uint64(data[8:]) + ru.sectorSize - 1) / ru.sectorSize * ru.sectorSize
	}
	if len(data) < item.FileExtentItemSize {
		return k.Offset
	}
	return k.Offset + le.Uint64(data[45:])
}

// checkInodeKey mirrors check_inode_key for an INODE_ITEM's key or a dir
// item's location (type INODE_ITEM or 0).
func checkInodeKey(itemType ondisk.ItemType, loc ondisk.Key) error {
	if itemType == ondisk.XattrItemKey {
		if loc != (ondisk.Key{}) {
			return corruptf("xattr location key %v, expected all zero", loc)
		}
		return nil
	}
	id := loc.ObjectID
	if (id < ondisk.FirstFreeObjectID || id > ondisk.LastFreeObjectID) && id != ondisk.RootTreeDirObjectID &&
		id != ondisk.FreeInoObjectID {
		return corruptf("invalid inode number %d", uint64(id))
	}
	if loc.Offset != 0 {
		return corruptf("inode key offset %d, expected 0", loc.Offset)
	}
	return nil
}

// checkRootKey mirrors check_root_key for a ROOT_ITEM's key or a dir
// item's location of type ROOT_ITEM.
func checkRootKey(itemType ondisk.ItemType, k ondisk.Key) error {
	isRoot := itemType == ondisk.RootItemKey
	switch {
	case isRoot && k.ObjectID == ondisk.TreeRelocObjectID && !isFSTree(ondisk.ObjectID(k.Offset)) &&
		ondisk.ObjectID(k.Offset) != ondisk.DataRelocTreeObjectID: // older kernels relocate it too (fsck-tests/020)
		return corruptf("reloc tree for root %d, which is not a subvolume", k.Offset)
	case k.ObjectID == 0:
		return corruptf("root id 0")
	case !isRoot && !isFSTree(k.ObjectID):
		return corruptf("location key points at tree %d, not a subvolume", uint64(k.ObjectID))
	case k.ObjectID == ondisk.TreeRelocObjectID && k.Offset == 0:
		return corruptf("reloc tree for root 0")
	}
	return nil
}

// checkDirItem mirrors check_dir_item (DIR_ITEM, DIR_INDEX, XATTR_ITEM).
func (ru itemRules) checkDirItem(n *Node, k, prev ondisk.Key, slot int, data []byte) error {
	if err := checkPrevIno(n, slot, k, prev); err != nil {
		return err
	}
	maxData := int(ru.nodeSize) - ondisk.HeaderSize - ondisk.ItemHeaderSize - item.DirItemHeaderSize
	for cur := 0; cur < len(data); {
		if cur+item.DirItemHeaderSize > len(data) {
			return corruptf("dir item header crosses the item end (%d > %d)", cur+item.DirItemHeaderSize, len(data))
		}
		d := data[cur:]
		loc := ondisk.DecodeKey(d)
		switch loc.Type {
		case ondisk.RootItemKey:
			if err := checkRootKey(k.Type, loc); err != nil {
				return err
			}
		case ondisk.InodeItemKey, 0:
			if err := checkInodeKey(k.Type, loc); err != nil {
				return err
			}
		default:
			return corruptf("invalid location key type %d", loc.Type)
		}
		dataLen, nameLen, ft := int(le.Uint16(d[25:])), int(le.Uint16(d[27:])), item.FTType(d[29])
		isXattr := k.Type == ondisk.XattrItemKey
		switch {
		case ft == item.FTUnknown || ft > item.FTXattr:
			return corruptf("invalid dir item type %d", ft)
		case isXattr != (ft == item.FTXattr):
			return corruptf("dir item type %d in a %v item", ft, k.Type)
		case nameLen > 255:
			return corruptf("dir item name of %d bytes, max 255", nameLen)
		case nameLen+dataLen > maxData:
			return corruptf("dir item name and data of %d bytes, max %d", nameLen+dataLen, maxData)
		case dataLen != 0 && !isXattr:
			return corruptf("dir item with %d data bytes", dataLen)
		}
		total := item.DirItemHeaderSize + nameLen + dataLen
		if cur+total > len(data) {
			return corruptf("dir item crosses the item end (%d > %d)", cur+total, len(data))
		}
		if k.Type != ondisk.DirIndexKey {
			name := d[item.DirItemHeaderSize : item.DirItemHeaderSize+nameLen]
			if h := item.NameHash(name); h != k.Offset {
				return corruptf("name hash %#x does not match the key offset", h)
			}
		}
		cur += total
	}
	return nil
}

// checkInodeRef mirrors check_inode_ref.
func checkInodeRef(n *Node, k, prev ondisk.Key, slot int, data []byte) error {
	if err := checkPrevIno(n, slot, k, prev); err != nil {
		return err
	}
	const refHeader = 10 // index u64, name_len u16
	if len(data) <= refHeader {
		return corruptf("inode ref of %d bytes", len(data))
	}
	for cur := 0; cur < len(data); {
		if cur+refHeader > len(data) {
			return corruptf("inode ref header crosses the item end")
		}
		cur += refHeader + int(le.Uint16(data[cur+8:]))
		if cur > len(data) {
			return corruptf("inode ref name crosses the item end")
		}
	}
	return nil
}

// Mode bits an inode may have (S_IFMT | suid | sgid | sticky | 0777).
const validModeBits = 0o177777

// inodeFlagMask is BTRFS_INODE_FLAG_MASK: the incompat inode flags (the low
// 32 bits) this format knows.
const inodeFlagMask = 0xfff | item.InodeRootItemInit

// checkInodeItem mirrors check_inode_item (without the generation bounds,
// which need the superblock).
func checkInodeItem(k ondisk.Key, data []byte) error {
	if err := checkInodeKey(ondisk.InodeItemKey, k); err != nil {
		return err
	}
	if len(data) != item.InodeItemSize {
		return corruptf("inode item of %d bytes, expected %d", len(data), item.InodeItemSize)
	}
	return checkInodeFields(data)
}

// checkInodeFields checks the mode, nlink and flags of an encoded inode item.
func checkInodeFields(data []byte) error {
	mode := le.Uint32(data[52:])
	if mode&^validModeBits != 0 {
		return corruptf("unknown mode bits %#o", mode&^validModeBits)
	}
	switch t := mode & 0o170000; t {
	case 0o010000, 0o020000, 0o040000, 0o060000, 0o100000, 0o120000, 0o140000:
	default:
		return corruptf("invalid file type in mode %#o", mode)
	}
	if mode&0o170000 == 0o040000 && le.Uint32(data[40:]) > 1 {
		return corruptf("directory with nlink %d", le.Uint32(data[40:]))
	}
	if fl := uint32(le.Uint64(data[64:])); fl&^uint32(inodeFlagMask) != 0 {
		return corruptf("unknown inode flags %#x", fl&^uint32(inodeFlagMask))
	}
	return nil
}

// checkRootItem mirrors check_root_item (without the generation bounds).
func (ru itemRules) checkRootItem(k ondisk.Key, data []byte) error {
	if err := checkRootKey(ondisk.RootItemKey, k); err != nil {
		return err
	}
	if len(data) != item.RootItemSize && len(data) != item.RootItemSizeV1 {
		return corruptf("root item of %d bytes, expected %d or %d", len(data), item.RootItemSize, item.RootItemSizeV1)
	}
	if b := le.Uint64(data[176:]); b%ru.sectorSize != 0 {
		return corruptf("root bytenr %d not aligned to sectorsize %d", b, ru.sectorSize)
	}
	if lvl := data[238]; lvl >= ondisk.MaxLevel {
		return corruptf("root level %d", lvl)
	}
	if lvl := data[237]; lvl >= ondisk.MaxLevel {
		return corruptf("root drop level %d", lvl)
	}
	if fl := le.Uint64(data[208:]); fl&^uint64(item.RootSubvolRdonly|item.RootSubvolDead) != 0 {
		return corruptf("invalid root flags %#x", fl)
	}
	return nil
}

// checkExtentItem mirrors check_extent_item (without the generation bound
// and the skinny-metadata feature test, which need the superblock).
func (ru itemRules) checkExtentItem(k, prev ondisk.Key, data []byte) error {
	if uint64(k.ObjectID)%ru.sectorSize != 0 {
		return corruptf("extent bytenr %d not aligned to sectorsize %d", uint64(k.ObjectID), ru.sectorSize)
	}
	if k.Type == ondisk.MetadataItemKey && k.Offset >= ondisk.MaxLevel {
		return corruptf("metadata item level %d", k.Offset)
	}
	if len(data) < item.ExtentItemSize {
		return corruptf("extent item of %d bytes, less than %d", len(data), item.ExtentItemSize)
	}
	refs, flags := le.Uint64(data[0:]), le.Uint64(data[16:])
	kind := flags & (item.ExtentFlagData | item.ExtentFlagTreeBlock)
	if bits.OnesCount64(kind) != 1 {
		return corruptf("extent flags %#x: need exactly one of DATA and TREE_BLOCK", flags)
	}
	treeBlock := kind == item.ExtentFlagTreeBlock
	if treeBlock {
		if k.Type == ondisk.ExtentItemKey && k.Offset != uint64(ru.nodeSize) {
			return corruptf("tree block extent of %d bytes, nodesize is %d", k.Offset, ru.nodeSize)
		}
	} else {
		switch {
		case k.Type != ondisk.ExtentItemKey:
			return corruptf("data extent with key type %v", k.Type)
		case k.Offset%ru.sectorSize != 0:
			return corruptf("data extent length %d not aligned to sectorsize %d", k.Offset, ru.sectorSize)
		case flags&item.BlockFlagFullBackref != 0:
			return corruptf("data extent with FULL_BACKREF")
		}
	}
	p := item.ExtentItemSize
	if treeBlock && k.Type == ondisk.ExtentItemKey {
		if p+item.TreeBlockInfoSize > len(data) {
			return corruptf("tree block info crosses the item end")
		}
		if lvl := data[p+17]; lvl >= ondisk.MaxLevel {
			return corruptf("tree block info level %d", lvl)
		}
		p += item.TreeBlockInfoSize
	}
	inline, err := ru.checkInlineRefs(data[p:])
	if err != nil {
		return err
	}
	if inline > refs {
		return corruptf("extent refs %d, fewer than the %d inline", refs, inline)
	}
	if prev.Type == ondisk.ExtentItemKey || prev.Type == ondisk.MetadataItemKey {
		end := uint64(prev.ObjectID) + prev.Offset
		if prev.Type == ondisk.MetadataItemKey {
			end = uint64(prev.ObjectID) + uint64(ru.nodeSize)
		}
		if end > uint64(k.ObjectID) {
			return corruptf("previous extent %v overlaps this one", prev)
		}
	}
	return nil
}

// checkInlineRefs walks the inline refs of an extent item: each fits, has a
// known type, aligned parents and offsets, in the kernel's order (types
// ascending, and within a type sequence numbers descending), with no
// padding after the last. It returns the references they count.
func (ru itemRules) checkInlineRefs(b []byte) (uint64, error) {
	var count uint64
	lastType := ondisk.ItemType(0)
	lastSeq := ^uint64(0)
	for p := 0; p < len(b); {
		if p+9 > len(b) {
			return 0, corruptf("inline ref at %d crosses the item end", p)
		}
		t := ondisk.ItemType(b[p])
		off := le.Uint64(b[p+1:])
		size := item.InlineRefSize(t)
		if size == 0 {
			return 0, corruptf("unknown inline ref type %d", t)
		}
		if p+size > len(b) {
			return 0, corruptf("inline ref %v at %d crosses the item end", t, p)
		}
		seq := off
		switch t {
		case ondisk.TreeBlockRefKey:
			count++
		case ondisk.SharedBlockRefKey, ondisk.SharedDataRefKey:
			if off%ru.sectorSize != 0 {
				return 0, corruptf("inline ref parent %d not aligned to sectorsize %d", off, ru.sectorSize)
			}
			if t == ondisk.SharedDataRefKey {
				count += uint64(le.Uint32(b[p+9:]))
			} else {
				count++
			}
		case ondisk.ExtentDataRefKey:
			d := b[p+1:]
			root, oid, doff := le.Uint64(d), le.Uint64(d[8:]), le.Uint64(d[16:])
			if doff%ru.sectorSize != 0 {
				return 0, corruptf("inline data ref offset %d not aligned to sectorsize %d", doff, ru.sectorSize)
			}
			seq = item.ExtentDataRefHash(root, oid, doff)
			count += uint64(le.Uint32(d[24:]))
		}
		if t < lastType {
			return 0, corruptf("inline ref type %d after type %d", t, lastType)
		}
		if t > lastType {
			lastSeq = ^uint64(0)
		}
		if seq > lastSeq {
			return 0, corruptf("inline ref of type %d out of order (seq %#x after %#x)", t, seq, lastSeq)
		}
		lastType, lastSeq = t, seq
		p += size
	}
	return count, nil
}

// checkSimpleRef mirrors check_simple_keyed_refs.
func (ru itemRules) checkSimpleRef(k ondisk.Key, data []byte) error {
	want := 0
	if k.Type == ondisk.SharedDataRefKey {
		want = item.SharedDataRefSize
	}
	if len(data) != want {
		return corruptf("%v item of %d bytes, expected %d", k.Type, len(data), want)
	}
	if uint64(k.ObjectID)%ru.sectorSize != 0 {
		return corruptf("backref bytenr %d not aligned to sectorsize %d", uint64(k.ObjectID), ru.sectorSize)
	}
	if k.Type != ondisk.TreeBlockRefKey && k.Offset%ru.sectorSize != 0 {
		return corruptf("backref parent %d not aligned to sectorsize %d", k.Offset, ru.sectorSize)
	}
	return nil
}

// checkExtentDataRef mirrors check_extent_data_ref.
func (ru itemRules) checkExtentDataRef(k ondisk.Key, data []byte) error {
	if len(data)%item.ExtentDataRefSize != 0 {
		return corruptf("extent data ref item of %d bytes, not a multiple of %d", len(data), item.ExtentDataRefSize)
	}
	if uint64(k.ObjectID)%ru.sectorSize != 0 {
		return corruptf("backref bytenr %d not aligned to sectorsize %d", uint64(k.ObjectID), ru.sectorSize)
	}
	for p := 0; p < len(data); p += item.ExtentDataRefSize {
		if off := le.Uint64(data[p+16:]); off%ru.sectorSize != 0 {
			return corruptf("extent data ref offset %d not aligned to sectorsize %d", off, ru.sectorSize)
		}
	}
	return nil
}

// checkBlockGroupItem mirrors check_block_group_item.
func checkBlockGroupItem(k ondisk.Key, data []byte) error {
	const size = 24 // used, chunk_objectid, flags
	if k.Offset == 0 {
		return corruptf("block group of size 0")
	}
	if len(data) != size {
		return corruptf("block group item of %d bytes, expected %d", len(data), size)
	}
	used, chunkID, flags := le.Uint64(data), le.Uint64(data[8:]), le.Uint64(data[16:])
	if chunkID != uint64(ondisk.FirstChunkTreeObjectID) {
		return corruptf("block group chunk objectid %d, expected %d", chunkID, uint64(ondisk.FirstChunkTreeObjectID))
	}
	if used > k.Offset {
		return corruptf("block group used %d, more than its size %d", used, k.Offset)
	}
	if bits.OnesCount64(flags&ondisk.BlockGroupProfileMask) > 1 {
		return corruptf("block group flags %#x: more than one profile", flags)
	}
	switch flags & ondisk.BlockGroupTypeMask {
	case ondisk.BlockGroupData, ondisk.BlockGroupMetadata, ondisk.BlockGroupSystem,
		ondisk.BlockGroupData | ondisk.BlockGroupMetadata:
	default:
		return corruptf("block group flags %#x: invalid type", flags)
	}
	return nil
}
