package print

import (
	"fmt"
	"io"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// itemView is one item of a leaf. btrfs-progs reads fixed-size structs from
// the extent buffer whatever the item size, so win returns need bytes from
// the item's start, running on into the rest of the leaf (and zero-padded
// past its end) the way those reads do.
type itemView struct {
	key  ondisk.Key
	off  uint32 // item offset as stored (relative to the end of the header)
	size uint32
	leaf []byte
	data []byte // exactly the item's bytes
}

func (v *itemView) win(need int) []byte {
	start := ondisk.HeaderSize + int(v.off)
	if start+need <= len(v.leaf) {
		return v.leaf[start : start+need]
	}
	b := make([]byte, need)
	if start < len(v.leaf) {
		copy(b, v.leaf[start:])
	}
	return b
}

// rest is the leaf from the item's start to the end of the block.
func (v *itemView) rest() []byte {
	start := ondisk.HeaderSize + int(v.off)
	if start > len(v.leaf) {
		return nil
	}
	return v.leaf[start:]
}

// printLeaf mirrors btrfs_print_leaf.
func (p *printer) printLeaf(n *diskio.Node) {
	p.printHeader(n)
	dataSize := uint32(diskio.LeafDataSize(p.nodeSize))
	for i := 0; i < n.NumItems(); i++ {
		it := n.Item(i)
		if it.Offset > dataSize || uint64(it.Size)+uint64(it.Offset) > uint64(dataSize) {
			p.warnf("leaf %d slot %d pointer invalid, offset %d size %d leaf data limit %d",
				uint64(n.Addr), i, it.Offset, it.Size, dataSize)
			p.warnf("skip remaining slots")
			break
		}
		start := ondisk.HeaderSize + int(it.Offset)
		v := &itemView{key: it.Key, off: it.Offset, size: it.Size, leaf: n.Data,
			data: n.Data[start : start+int(it.Size)]}
		p.printf("\titem %d key %s itemoff %d itemsize %d\n", i, KeyString(it.Key), it.Offset, it.Size)
		p.printItem(v)
	}
}

// printItem prints the body of one item. mirrors the switch in btrfs_print_leaf
func (p *printer) printItem(v *itemView) {
	k := v.key
	if k.Type == 0 && k.ObjectID == ondisk.FreeSpaceObjectID {
		p.printFreeSpaceHeader(v)
	}
	switch k.Type {
	case ondisk.InodeItemKey:
		p.printInodeItem(v)
	case ondisk.InodeRefKey:
		p.printInodeRefs(v)
	case ondisk.InodeExtrefKey:
		p.printInodeExtrefs(v)
	case ondisk.DirItemKey, ondisk.DirIndexKey, ondisk.XattrItemKey:
		p.printDirItems(v)
	case ondisk.DirLogIndexKey, ondisk.DirLogItemKey:
		x, _ := item.DecodeDirLogItem(v.win(item.DirLogItemSize))
		p.printf("\t\tdir log end %d\n", x.End)
	case ondisk.OrphanItemKey:
		p.printf("\t\torphan item\n")
	case ondisk.RootItemKey:
		p.printRootItem(v)
	case ondisk.RootRefKey:
		p.printRootRef(v, "ref")
	case ondisk.RootBackrefKey:
		p.printRootRef(v, "backref")
	case ondisk.ExtentItemKey:
		p.printExtentItem(v, false)
	case ondisk.MetadataItemKey:
		p.printExtentItem(v, true)
	case ondisk.TreeBlockRefKey:
		p.printf("\t\ttree block backref\n")
	case ondisk.SharedBlockRefKey:
		p.printf("\t\tshared block backref\n")
	case ondisk.ExtentDataRefKey:
		r, _ := item.DecodeExtentDataRef(v.win(item.ExtentDataRefSize))
		p.printExtentDataRef(r)
	case ondisk.SharedDataRefKey:
		r, _ := item.DecodeSharedDataRef(v.win(item.SharedDataRefSize))
		p.printf("\t\tshared data backref count %d\n", r.Count)
	case ondisk.ExtentRefV0Key:
		p.printf("\t\textent ref v0 (deprecated)\n")
	case csumItemKey:
		p.printf("\t\tcsum item\n")
	case ondisk.ExtentCsumKey:
		p.printExtentCsum(v)
	case ondisk.ExtentDataKey:
		p.printFileExtent(v)
	case ondisk.BlockGroupItemKey:
		bg, _ := item.DecodeBlockGroupItem(v.win(item.BlockGroupItemSize))
		p.printf("\t\tblock group used %d chunk_objectid %d flags %s\n", bg.Used, uint64(bg.ChunkObjectID),
			bgFlagsString(bg.Flags))
	case ondisk.FreeSpaceInfoKey:
		fi, _ := item.DecodeFreeSpaceInfo(v.win(item.FreeSpaceInfoSize))
		p.printf("\t\tfree space info extent count %d flags %d\n", fi.ExtentCount, fi.Flags)
	case ondisk.FreeSpaceExtentKey:
		p.printf("\t\tfree space extent\n")
	case ondisk.FreeSpaceBitmapKey:
		p.printf("\t\tfree space bitmap\n")
	case ondisk.ChunkItemKey:
		p.printChunkItem(v)
	case ondisk.DevItemKey:
		p.printDevItem(v)
	case ondisk.DevExtentKey:
		p.printDevExtent(v)
	case ondisk.QgroupStatusKey:
		s, _ := item.DecodeQgroupStatus(v.win(item.QgroupStatusSize))
		p.printf("\t\tversion %d generation %d flags %s scan %d\n", s.Version, s.Generation,
			qgroupStatusFlagsString(s.Flags), s.Rescan)
	case ondisk.QgroupRelationKey:
	case ondisk.QgroupInfoKey:
		q, _ := item.DecodeQgroupInfo(v.win(item.QgroupInfoSize))
		p.printf("\t\tgeneration %d\n\t\treferenced %d referenced_compressed %d\n\t\texclusive %d exclusive_compressed %d\n",
			q.Generation, q.Referenced, q.ReferencedCompressed, q.Exclusive, q.ExclusiveCompressed)
	case ondisk.QgroupLimitKey:
		q, _ := item.DecodeQgroupLimit(v.win(item.QgroupLimitSize))
		p.printf("\t\tflags %x\n\t\tmax_referenced %d max_exclusive %d\n\t\trsv_referenced %d rsv_exclusive %d\n",
			q.Flags, int64(q.MaxReferenced), int64(q.MaxExclusive), int64(q.RsvReferenced), int64(q.RsvExclusive))
	case ondisk.UUIDKeySubvol, ondisk.UUIDKeyReceivedSubvol:
		p.printUUIDItem(v)
	case ondisk.StringItemKey:
		s, _ := item.DecodeStringItem(v.data)
		p.printf("\t\titem data %s\n", cString(s.Data, -1))
	case ondisk.PersistentItemKey:
		p.printPersistentItem(v)
	case ondisk.TemporaryItemKey:
		p.printTemporaryItem(v)
	}
}

func (p *printer) printTimespec(prefix string, t item.Timespec) {
	// strftime("%Y-%m-%d %H:%M:%S") of localtime_r, as print_timespec does.
	ts := time.Unix(t.Sec, 0).Format("2006-01-02 15:04:05")
	p.printf("%s%d.%d (%s)\n", prefix, uint64(t.Sec), t.Nsec, ts)
}

func (p *printer) printInodeItem(v *itemView) {
	x, _ := item.DecodeInodeItem(v.win(item.InodeItemSize))
	p.printf("\t\tgeneration %d transid %d size %d nbytes %d\n", x.Generation, x.Transid, x.Size, x.NBytes)
	p.printf("\t\tblock group %d mode %o links %d uid %d gid %d rdev %d\n", x.BlockGroup, x.Mode, x.NLink,
		x.UID, x.GID, x.Rdev)
	p.printf("\t\tsequence %d flags 0x%x(%s)\n", x.Sequence, x.Flags, inodeFlagsString(x.Flags))
	p.printTimespec("\t\tatime ", x.Atime)
	p.printTimespec("\t\tctime ", x.Ctime)
	p.printTimespec("\t\tmtime ", x.Mtime)
	p.printTimespec("\t\totime ", x.Otime)
}

// name prints "name: NAME\n" or the hidden form.
func (p *printer) name(prefix string, name []byte) {
	if p.hideNames {
		p.printf("%sHIDDEN\n", prefix)
		return
	}
	p.printf("%s%s\n", prefix, cString(name, item.MaxNameLen))
}

// malformed reports an entry that does not fit its item. btrfs-progs would
// print whatever bytes follow; we say where the item went wrong and stop.
func (p *printer) malformed(v *itemView, err error) {
	p.printf("\t\tmalformed item: %v\n", err)
	p.warnf("item %s: %v", KeyString(v.key), err)
}

func (p *printer) printInodeRefs(v *itemView) {
	for cur := 0; cur < len(v.data); {
		r, n, err := item.DecodeInodeRef(v.data[cur:])
		if err != nil {
			p.malformed(v, err)
			return
		}
		p.printf("\t\tindex %d namelen %d ", r.Index, len(r.Name))
		p.name("name: ", r.Name)
		cur += n
	}
}

func (p *printer) printInodeExtrefs(v *itemView) {
	for cur := 0; cur < len(v.data); {
		r, n, err := item.DecodeInodeExtref(v.data[cur:])
		if err != nil {
			p.malformed(v, err)
			return
		}
		p.printf("\t\tindex %d parent %d namelen %d ", r.Index, uint64(r.Parent), len(r.Name))
		p.name("name: ", r.Name)
		cur += n
	}
}

func (p *printer) printDirItems(v *itemView) {
	for cur := 0; cur < len(v.data); {
		d, n, err := item.DecodeDirItem(v.data[cur:])
		if err != nil {
			p.malformed(v, err)
			return
		}
		p.printf("\t\tlocation key %s type %s\n", KeyString(d.Location), dirTypeString(d.Type))
		p.printf("\t\ttransid %d data_len %d name_len %d\n", d.Transid, len(d.Data), len(d.Name))
		p.name("\t\tname: ", d.Name)
		if len(d.Data) > 0 {
			p.name("\t\tdata ", d.Data)
		}
		cur += n
	}
}

func (p *printer) printRootItem(v *itemView) {
	// print_root_item copies the item into a zeroed struct: short (v1)
	// items read as zeros past their end.
	b := make([]byte, item.RootItemSize)
	copy(b, v.data)
	r, _ := item.DecodeRootItem(b)
	flags := "none"
	if r.Flags&item.RootSubvolRdonly != 0 {
		flags = "RDONLY"
	}
	p.printf("\t\tgeneration %d root_dirid %d bytenr %d byte_limit %d bytes_used %d\n", uint64(r.Generation),
		uint64(r.RootDirID), uint64(r.Bytenr), r.ByteLimit, r.BytesUsed)
	p.printf("\t\tlast_snapshot %d flags 0x%x(%s) refs %d\n", r.LastSnapshot, r.Flags, flags, r.Refs)
	p.printf("\t\tdrop_progress key %s drop_level %d\n", KeyString(r.DropProgress), r.DropLevel)
	p.printf("\t\tlevel %d generation_v2 %d\n", r.Level, uint64(r.GenerationV2))
	if r.Generation != r.GenerationV2 {
		return
	}
	p.printf("\t\tuuid %s\n", r.UUID)
	p.printf("\t\tparent_uuid %s\n", r.ParentUUID)
	p.printf("\t\treceived_uuid %s\n", r.ReceivedUUID)
	p.printf("\t\tctransid %d otransid %d stransid %d rtransid %d\n", r.Ctransid, r.Otransid, r.Stransid, r.Rtransid)
	p.printTimespec("\t\tctime ", r.Ctime)
	p.printTimespec("\t\totime ", r.Otime)
	p.printTimespec("\t\tstime ", r.Stime)
	p.printTimespec("\t\trtime ", r.Rtime)
}

func (p *printer) printRootRef(v *itemView, tag string) {
	r, err := item.DecodeRootRef(v.data)
	if err != nil {
		p.malformed(v, err)
		return
	}
	p.printf("\t\troot %s key dirid %d sequence %d name %s\n", tag, uint64(r.DirID), r.Sequence, cString(r.Name, -1))
}

func (p *printer) printExtentDataRef(r item.ExtentDataRef) {
	p.printf("\t\textent data backref root %s objectid %d offset %d count %d\n",
		ObjectIDString(r.Root, 0), uint64(r.ObjectID), r.Offset, r.Count)
}

// printExtentItem mirrors print_extent_item: inline refs are printed until
// the item ends or a type 6.2 does not know (EXTENT_OWNER_REF included).
func (p *printer) printExtentItem(v *itemView, metadata bool) {
	if v.size < item.ExtentItemSize {
		return
	}
	rest := v.rest()
	var e item.ExtentItem
	e.Refs = le64(rest[0:])
	e.Generation = ondisk.Generation(le64(rest[8:]))
	e.Flags = le64(rest[16:])
	p.printf("\t\trefs %d gen %d flags %s\n", e.Refs, uint64(e.Generation), extentFlagsString(e.Flags))
	ptr := item.ExtentItemSize
	switch {
	case e.Flags&item.ExtentFlagTreeBlock != 0 && !metadata:
		b := v.win(ptr + item.TreeBlockInfoSize)
		key := ondisk.DecodeKey(b[ptr:])
		p.printf("\t\ttree block key %s level %d\n", KeyString(key), b[ptr+ondisk.KeySize])
		ptr += item.TreeBlockInfoSize
	case metadata:
		p.printf("\t\ttree block skinny level %d\n", int32(v.key.Offset))
	}
	for ptr < int(v.size) {
		if ptr >= len(rest) {
			return
		}
		r, n, err := item.DecodeInlineRef(rest[ptr:])
		if err != nil {
			return
		}
		switch r.Type {
		case ondisk.TreeBlockRefKey:
			p.printf("\t\ttree block backref root %s\n", ObjectIDString(ondisk.ObjectID(r.Offset), 0))
		case ondisk.SharedBlockRefKey:
			p.printf("\t\tshared block backref parent %d\n", r.Offset)
		case ondisk.ExtentDataRefKey:
			p.printExtentDataRef(r.DataRef)
		case ondisk.SharedDataRefKey:
			p.printf("\t\tshared data backref parent %d count %d\n", r.Offset, r.Count)
		default:
			return // 6.2 has no EXTENT_OWNER_REF and stops here
		}
		ptr += n
	}
}

func le64(b []byte) uint64 {
	if len(b) < 8 {
		var t [8]byte
		copy(t[:], b)
		b = t[:]
	}
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// printExtentCsum mirrors print_extent_csum.
func (p *printer) printExtentCsum(v *itemView) {
	cs, _ := item.DecodeExtentCsum(v.data)
	csumSize := p.csumType.Size()
	size := uint32(cs.Count(csumSize)) * p.sectorSize
	off := v.key.Offset
	p.printf("\t\trange start %d end %d length %d\n", off, off+uint64(size), size)
	if !p.csumItems {
		return
	}
	oneLine := max(1, ondisk.CsumSize/csumSize/2)
	cur := oneLine
	for i := 0; size > 0; i++ {
		switch {
		case cur == oneLine:
			p.printf("\t\t")
		case cur == 0:
			cur = oneLine
			p.printf("\n\t\t")
		default:
			p.printf(" ")
		}
		p.printf("[%d] 0x%x", off, cs.Sum(i, csumSize))
		off += uint64(p.sectorSize)
		size -= p.sectorSize
		cur--
	}
	p.printf("\n")
}

// printFileExtent mirrors print_file_extent_item.
func (p *printer) printFileExtent(v *itemView) {
	f, _ := item.DecodeFileExtentItem(v.win(item.FileExtentItemSize))
	p.printf("\t\tgeneration %d type %d (%s)\n", uint64(f.Generation), f.Type, fileExtentTypeString(f.Type))
	switch f.Type {
	case item.FileExtentInline:
		p.printf("\t\tinline extent data size %d ram_bytes %d compression %d (%s)\n",
			v.size-item.FileExtentInlineDataStart, f.RAMBytes, f.Compression, compressString(f.Compression))
	case item.FileExtentPrealloc:
		p.printf("\t\tprealloc data disk byte %d nr %d\n", uint64(f.DiskBytenr), f.DiskNumBytes)
		p.printf("\t\tprealloc data offset %d nr %d\n", f.Offset, f.NumBytes)
	default:
		p.printf("\t\textent data disk byte %d nr %d\n", uint64(f.DiskBytenr), f.DiskNumBytes)
		p.printf("\t\textent data offset %d nr %d ram %d\n", f.Offset, f.NumBytes, f.RAMBytes)
		p.printf("\t\textent compression %d (%s)\n", f.Compression, compressString(f.Compression))
	}
}

// printChunkItem mirrors print_chunk_item for a chunk inside a leaf.
func (p *printer) printChunkItem(v *itemView) {
	b := v.win(ondisk.ChunkItemSize)
	n := int(b[44]) | int(b[45])<<8
	if n < 1 {
		p.printf("invalid num_stripes: %d\n", n)
		return
	}
	size := ondisk.ChunkItemSize + n*ondisk.StripeSize
	if ondisk.HeaderSize+int(v.off)+size > int(p.nodeSize) {
		p.printf("\t\tchunk item invalid\n")
		return
	}
	printChunk(p.w, v.win(size))
}

// printChunk prints a chunk whose stripes all lie in b.
func printChunk(w io.Writer, b []byte) {
	c, err := item.DecodeChunkItem(b)
	if err != nil {
		writef(w, "\t\tchunk item invalid\n")
		return
	}
	writef(w, "\t\tlength %d owner %d stripe_len %d type %s\n", c.Length, uint64(c.Owner), c.StripeLen,
		bgFlagsString(c.Type))
	writef(w, "\t\tio_align %d io_width %d sector_size %d\n", c.IOAlign, c.IOWidth, c.SectorSize)
	writef(w, "\t\tnum_stripes %d sub_stripes %d\n", c.NumStripes, c.SubStripes)
	for i, s := range c.Stripes {
		writef(w, "\t\t\tstripe %d devid %d offset %d\n", i, uint64(s.DevID), uint64(s.Offset))
		writef(w, "\t\t\tdev_uuid %s\n", s.DevUUID)
	}
}

func (p *printer) printDevItem(v *itemView) {
	d, _ := item.DecodeDevItem(v.win(ondisk.DevItemSize))
	p.printf("\t\tdevid %d total_bytes %d bytes_used %d\n", uint64(d.DevID), d.TotalBytes, d.BytesUsed)
	p.printf("\t\tio_align %d io_width %d sector_size %d type %d\n", d.IOAlign, d.IOWidth, d.SectorSize, d.Type)
	p.printf("\t\tgeneration %d start_offset %d dev_group %d\n", uint64(d.Generation), d.StartOffset, d.DevGroup)
	p.printf("\t\tseek_speed %d bandwidth %d\n", d.SeekSpeed, d.Bandwidth)
	p.printf("\t\tuuid %s\n\t\tfsid %s\n", d.UUID, d.FSID)
}

func (p *printer) printDevExtent(v *itemView) {
	d, _ := item.DecodeDevExtent(v.win(item.DevExtentSize))
	p.printf("\t\tdev extent chunk_tree %d\n\t\tchunk_objectid %d chunk_offset %d length %d\n\t\tchunk_tree_uuid %s\n",
		uint64(d.ChunkTree), uint64(d.ChunkObjectID), uint64(d.ChunkOffset), d.Length, d.ChunkTreeUUID)
}

func (p *printer) printFreeSpaceHeader(v *itemView) {
	h, _ := item.DecodeFreeSpaceHeader(v.win(item.FreeSpaceHeaderSize))
	p.printf("\t\tlocation key %s\n", KeyString(h.Location))
	p.printf("\t\tcache generation %d entries %d bitmaps %d\n", h.Generation, h.NumEntries, h.NumBitmaps)
}

func (p *printer) printUUIDItem(v *itemView) {
	u, err := item.DecodeUUIDItem(v.data)
	if err != nil {
		p.printf("btrfs: uuid item with illegal size %d!\n", v.size)
		return
	}
	for _, id := range u.SubvolIDs {
		p.printf("\t\tsubvol_id %d\n", id)
	}
}

// printPersistentItem mirrors print_persistent_item and print_dev_stats.
func (p *printer) printPersistentItem(v *itemView) {
	k := v.key
	p.printf("\t\tpersistent item objectid %s offset %d\n", ObjectIDString(k.ObjectID, k.Type), k.Offset)
	if k.ObjectID != ondisk.DevStatsObjectID {
		p.printf("\t\tunknown persistent item objectid %d\n", uint64(k.ObjectID))
		return
	}
	need := max(int(v.size), 8*item.DevStatValuesMax)
	need += (8 - need%8) % 8
	s, _ := item.DecodeDevStats(v.win(need))
	p.printf("\t\tdevice stats\n")
	p.printf("\t\twrite_errs %d read_errs %d flush_errs %d corruption_errs %d generation %d\n",
		s.Value(item.DevStatWriteErrs), s.Value(item.DevStatReadErrs), s.Value(item.DevStatFlushErrs),
		s.Value(item.DevStatCorruptionErrs), s.Value(item.DevStatGenerationErrs))
	known := uint32(8 * item.DevStatValuesMax)
	if known < v.size {
		p.printf("\t\tunknown stats item bytes %d", v.size-known)
		for i := item.DevStatValuesMax; uint32(i*8) < v.size; i++ {
			p.printf("\t\tunknown item %d offset %d value %d\n", i, i*8, s.Value(i))
		}
	}
}

// csumTreeTmpObjectID is BTRFS_CSUM_TREE_TMP_OBJECTID (csum type conversion).
const csumTreeTmpObjectID ondisk.ObjectID = 13

// printTemporaryItem mirrors print_temporary_item and print_balance_item.
func (p *printer) printTemporaryItem(v *itemView) {
	k := v.key
	p.printf("\t\ttemporary item objectid %s offset %d\n", ObjectIDString(k.ObjectID, k.Type), k.Offset)
	switch k.ObjectID {
	case ondisk.BalanceObjectID:
		b, _ := item.DecodeBalanceItem(v.win(item.BalanceItemSize))
		p.printf("\t\tbalance status flags %d\n", b.Flags)
		for _, a := range []struct {
			name string
			args *item.BalanceArgs
		}{{"DATA", &b.Data}, {"METADATA", &b.Meta}, {"SYSTEM", &b.Sys}} {
			p.printf("\t\t%s\n", a.name)
			p.printBalanceArgs(a.args)
		}
	case csumTreeTmpObjectID:
		p.printf("\t\tcsum tree tmp root %d\n", k.Offset)
	default:
		p.printf("\t\tunknown temporary item objectid %d\n", uint64(k.ObjectID))
	}
}

func (p *printer) printBalanceArgs(a *item.BalanceArgs) {
	p.printf("\t\tprofiles %d devid %d target %d flags %d\n", a.Profiles, a.DevID, a.Target, a.Flags)
	p.printf("\t\tusage_min %d usage_max %d pstart %d pend %d\n", a.UsageMin(), a.UsageMax(), a.PStart, a.PEnd)
	p.printf("\t\tvstart %d vend %d limit_min %d limit_max %d\n", a.VStart, a.VEnd, a.LimitMin(), a.LimitMax())
	p.printf("\t\tstripes_min %d stripes_max %d\n", a.StripesMin, a.StripesMax)
}

func writef(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format, args...) }
