// Package print prints superblocks and trees in the text format of
// btrfs-progs 6.2's `btrfs inspect-internal dump-super` and `dump-tree`
// (kernel-shared/print-tree.c), line for line, so that the two can be
// diffed.
package print

import (
	"bufio"
	"fmt"
	"io"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Flag tables of btrfs-progs 6.2 (a non-EXPERIMENTAL build). A flag is named
// only when it is in the table; the "supported" masks decide what is called
// unknown, so a supported flag without a name (VERITY) is not printed at all,
// exactly as 6.2 does.
type namedFlag struct {
	bit  uint64
	name string
}

var superFlagNames = []namedFlag{
	{ondisk.HeaderFlagWritten, "WRITTEN"},
	{ondisk.HeaderFlagReloc, "RELOC"},
	{1 << 35, "CHANGING_FSID"},
	{ondisk.SuperFlagSeeding, "SEEDING"},
	{ondisk.SuperFlagMetadump, "METADUMP"},
	{ondisk.SuperFlagMetadumpV2, "METADUMP_V2"},
}

const superFlagsSupported = ondisk.HeaderFlagWritten | ondisk.HeaderFlagReloc | 1<<35 |
	ondisk.SuperFlagSeeding | ondisk.SuperFlagMetadump | ondisk.SuperFlagMetadumpV2

var compatROFlagNames = []namedFlag{
	{ondisk.CompatROFreeSpaceTree, "FREE_SPACE_TREE"},
	{ondisk.CompatROFreeSpaceTreeValid, "FREE_SPACE_TREE_VALID"},
	{ondisk.CompatROBlockGroupTree, "BLOCK_GROUP_TREE"},
}

const compatROSupported = ondisk.CompatROFreeSpaceTree | ondisk.CompatROFreeSpaceTreeValid |
	ondisk.CompatROVerity | ondisk.CompatROBlockGroupTree

var incompatFlagNames = []namedFlag{
	{ondisk.IncompatMixedBackref, "MIXED_BACKREF"},
	{ondisk.IncompatDefaultSubvol, "DEFAULT_SUBVOL"},
	{ondisk.IncompatMixedGroups, "MIXED_GROUPS"},
	{ondisk.IncompatCompressLZO, "COMPRESS_LZO"},
	{ondisk.IncompatCompressZstd, "COMPRESS_ZSTD"},
	{ondisk.IncompatBigMetadata, "BIG_METADATA"},
	{ondisk.IncompatExtendedIref, "EXTENDED_IREF"},
	{ondisk.IncompatRaid56, "RAID56"},
	{ondisk.IncompatSkinnyMetadata, "SKINNY_METADATA"},
	{ondisk.IncompatNoHoles, "NO_HOLES"},
	{ondisk.IncompatMetadataUUID, "METADATA_UUID"},
	{ondisk.IncompatRaid1C34, "RAID1C34"},
	{ondisk.IncompatZoned, "ZONED"},
	{ondisk.IncompatExtentTreeV2, "EXTENT_TREE_V2"},
}

const incompatSupported = ondisk.IncompatMixedBackref | ondisk.IncompatDefaultSubvol |
	ondisk.IncompatCompressLZO | ondisk.IncompatCompressZstd | ondisk.IncompatBigMetadata |
	ondisk.IncompatExtendedIref | ondisk.IncompatRaid56 | ondisk.IncompatMixedGroups |
	ondisk.IncompatSkinnyMetadata | ondisk.IncompatNoHoles | ondisk.IncompatRaid1C34 |
	ondisk.IncompatMetadataUUID | ondisk.IncompatZoned

// readableFlags prints "\t\t\t( A |\n\t\t\t  B )\n". mirrors __print_readable_flag
func readableFlags(w *bufio.Writer, flags uint64, table []namedFlag, supported uint64) {
	if flags == 0 {
		return
	}
	w.WriteString("\t\t\t( ")
	first := true
	for _, f := range table {
		if flags&supported != 0 && flags&f.bit != 0 {
			if !first {
				w.WriteString("|\n\t\t\t  ")
			}
			fmt.Fprintf(w, "%s ", f.name)
			first = false
		}
	}
	if u := flags &^ supported; u != 0 {
		if !first {
			w.WriteString("|\n\t\t\t  ")
		}
		fmt.Fprintf(w, "unknown flag: 0x%x ", u)
	}
	w.WriteString(")\n")
}

// printable replaces non-printable bytes with '.' (C isprint in the C locale).
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 0x20 && c < 0x7f {
			out[i] = c
		} else {
			out[i] = '.'
		}
	}
	return string(out)
}

// DumpSuper prints sb like `btrfs inspect-internal dump-super` (with -f when
// full), without the "superblock: bytenr=..." banner the command adds.
// sb.Raw must hold the bytes read from disk (the checksum and magic are
// checked against them). mirrors btrfs_print_superblock
func DumpSuper(out io.Writer, sb *ondisk.Superblock, full bool) error {
	w := bufio.NewWriter(out)
	raw := sb.Raw[:]
	ct := csum.Type(sb.CsumType)
	csumSize := ondisk.CsumSize
	fmt.Fprintf(w, "csum_type\t\t%d (", sb.CsumType)
	if !ct.Valid() {
		w.WriteString("INVALID")
	} else {
		w.WriteString(csumName(ct))
		csumSize = ct.Size()
	}
	w.WriteString(")\n")
	fmt.Fprintf(w, "csum_size\t\t%d\n", csumSize)
	fmt.Fprintf(w, "csum\t\t\t0x%x", raw[:csumSize])
	switch {
	case !ct.Valid():
		w.WriteString(" [UNKNOWN CSUM TYPE OR SIZE]")
	case ct.VerifyBlock(raw):
		w.WriteString(" [match]")
	default:
		w.WriteString(" [DON'T MATCH]")
	}
	w.WriteString("\n")
	fmt.Fprintf(w, "bytenr\t\t\t%d\n", uint64(sb.Bytenr))
	fmt.Fprintf(w, "flags\t\t\t0x%x\n", sb.Flags)
	readableFlags(w, sb.Flags, superFlagNames, superFlagsSupported)
	fmt.Fprintf(w, "magic\t\t\t%s", printable(raw[0x40:0x48]))
	if sb.Magic == ondisk.SuperMagic {
		w.WriteString(" [match]\n")
	} else {
		w.WriteString(" [DON'T MATCH]\n")
	}
	fmt.Fprintf(w, "fsid\t\t\t%s\n", sb.FSID)
	// 6.2 prints the fsid again when there is no metadata_uuid.
	if sb.IncompatFlags&ondisk.IncompatMetadataUUID != 0 {
		fmt.Fprintf(w, "metadata_uuid\t\t%s\n", sb.MetadataUUID)
	} else {
		fmt.Fprintf(w, "metadata_uuid\t\t%s\n", sb.FSID)
	}
	label := sb.Label[:]
	for i, c := range label {
		if c == 0 {
			label = label[:i]
			break
		}
	}
	fmt.Fprintf(w, "label\t\t\t%s\n", printable(label))
	fmt.Fprintf(w, "generation\t\t%d\n", uint64(sb.Generation))
	fmt.Fprintf(w, "root\t\t\t%d\n", uint64(sb.Root))
	fmt.Fprintf(w, "sys_array_size\t\t%d\n", sb.SysChunkArraySize)
	fmt.Fprintf(w, "chunk_root_generation\t%d\n", uint64(sb.ChunkRootGeneration))
	fmt.Fprintf(w, "root_level\t\t%d\n", sb.RootLevel)
	fmt.Fprintf(w, "chunk_root\t\t%d\n", uint64(sb.ChunkRoot))
	fmt.Fprintf(w, "chunk_root_level\t%d\n", sb.ChunkRootLevel)
	fmt.Fprintf(w, "log_root\t\t%d\n", uint64(sb.LogRoot))
	fmt.Fprintf(w, "log_root_transid (deprecated)\t%d\n", sb.LogRootTransid)
	fmt.Fprintf(w, "log_root_level\t\t%d\n", sb.LogRootLevel)
	fmt.Fprintf(w, "total_bytes\t\t%d\n", sb.TotalBytes)
	fmt.Fprintf(w, "bytes_used\t\t%d\n", sb.BytesUsed)
	fmt.Fprintf(w, "sectorsize\t\t%d\n", sb.SectorSize)
	fmt.Fprintf(w, "nodesize\t\t%d\n", sb.NodeSize)
	fmt.Fprintf(w, "leafsize (deprecated)\t%d\n", sb.LeafSize)
	fmt.Fprintf(w, "stripesize\t\t%d\n", sb.StripeSize)
	fmt.Fprintf(w, "root_dir\t\t%d\n", uint64(sb.RootDirObjectID))
	fmt.Fprintf(w, "num_devices\t\t%d\n", sb.NumDevices)
	fmt.Fprintf(w, "compat_flags\t\t0x%x\n", sb.CompatFlags)
	fmt.Fprintf(w, "compat_ro_flags\t\t0x%x\n", sb.CompatROFlags)
	readableFlags(w, sb.CompatROFlags, compatROFlagNames, compatROSupported)
	fmt.Fprintf(w, "incompat_flags\t\t0x%x\n", sb.IncompatFlags)
	readableFlags(w, sb.IncompatFlags, incompatFlagNames, incompatSupported)
	fmt.Fprintf(w, "cache_generation\t%d\n", sb.CacheGeneration)
	fmt.Fprintf(w, "uuid_tree_generation\t%d\n", sb.UUIDTreeGeneration)
	d := &sb.DevItem
	fmt.Fprintf(w, "dev_item.uuid\t\t%s\n", d.UUID)
	match := d.FSID == sb.FSID
	if sb.IncompatFlags&ondisk.IncompatMetadataUUID != 0 {
		match = d.FSID == sb.MetadataUUID
	}
	fmt.Fprintf(w, "dev_item.fsid\t\t%s %s\n", d.FSID, matchString(match))
	fmt.Fprintf(w, "dev_item.type\t\t%d\n", d.Type)
	fmt.Fprintf(w, "dev_item.total_bytes\t%d\n", d.TotalBytes)
	fmt.Fprintf(w, "dev_item.bytes_used\t%d\n", d.BytesUsed)
	fmt.Fprintf(w, "dev_item.io_align\t%d\n", d.IOAlign)
	fmt.Fprintf(w, "dev_item.io_width\t%d\n", d.IOWidth)
	fmt.Fprintf(w, "dev_item.sector_size\t%d\n", d.SectorSize)
	fmt.Fprintf(w, "dev_item.devid\t\t%d\n", uint64(d.DevID))
	fmt.Fprintf(w, "dev_item.dev_group\t%d\n", d.DevGroup)
	fmt.Fprintf(w, "dev_item.seek_speed\t%d\n", d.SeekSpeed)
	fmt.Fprintf(w, "dev_item.bandwidth\t%d\n", d.Bandwidth)
	fmt.Fprintf(w, "dev_item.generation\t%d\n", uint64(d.Generation))
	if full {
		fmt.Fprintf(w, "sys_chunk_array[%d]:\n", ondisk.SysChunkArraySize)
		printSysChunkArray(w, sb)
		fmt.Fprintf(w, "backup_roots[%d]:\n", ondisk.NumBackupRoots)
		printBackupRoots(w, sb)
	}
	return w.Flush()
}

// csumName is btrfs_super_csum_name (6.2 says "blake2", not "blake2b").
func csumName(t csum.Type) string {
	if t == csum.Blake2 {
		return "blake2"
	}
	return t.String()
}

func matchString(ok bool) string {
	if ok {
		return "[match]"
	}
	return "[DON'T MATCH]"
}

// printSysChunkArray mirrors print_sys_chunk_array, including its error
// messages (which 6.2 writes to stderr; here they go to the same output).
func printSysChunkArray(w *bufio.Writer, sb *ondisk.Superblock) {
	size := int(sb.SysChunkArraySize)
	if size > ondisk.SysChunkArraySize {
		fmt.Fprintf(w, "ERROR: sys_array_size %d shouldn't exceed %d bytes\n", size, ondisk.SysChunkArraySize)
		return
	}
	arr := sb.SysChunkArray[:]
	for cur, i := 0, 0; cur < size; i++ {
		if cur+ondisk.KeySize > size {
			fmt.Fprintf(w, "ERROR: sys_array too short to read %d bytes at offset %d\n", ondisk.KeySize, cur)
			return
		}
		k := ondisk.DecodeKey(arr[cur:])
		cur += ondisk.KeySize
		fmt.Fprintf(w, "\titem %d key %s\n", i, KeyString(k))
		if k.Type != ondisk.ChunkItemKey {
			fmt.Fprintf(w, "ERROR: unexpected item type %d in sys_array at offset %d\n", k.Type, cur)
			return
		}
		if cur+ondisk.ChunkItemSize+ondisk.StripeSize > size {
			fmt.Fprintf(w, "ERROR: sys_array too short to read %d bytes at offset %d\n",
				ondisk.ChunkItemSize+ondisk.StripeSize, cur)
			return
		}
		n := int(uint16(arr[cur+44]) | uint16(arr[cur+45])<<8)
		if n == 0 {
			fmt.Fprintf(w, "ERROR: invalid number of stripes %d in sys_array at offset %d\n", n, cur)
			return
		}
		l := ondisk.ChunkItemSize + n*ondisk.StripeSize
		if cur+l > size {
			fmt.Fprintf(w, "ERROR: sys_array too short to read %d bytes at offset %d\n", l, cur)
			return
		}
		printChunk(w, arr[cur:cur+l])
		cur += l
	}
}

func printBackupRoots(w *bufio.Writer, sb *ondisk.Superblock) {
	extentName := "backup_extent_root"
	if sb.IncompatFlags&ondisk.IncompatExtentTreeV2 != 0 {
		extentName = "backup_block_group_root"
	}
	for i := range sb.BackupRoots {
		b := &sb.BackupRoots[i]
		if b.TreeRoot == 0 && b.TreeRootGen == 0 {
			continue
		}
		fmt.Fprintf(w, "\tbackup %d:\n", i)
		fmt.Fprintf(w, "\t\tbackup_tree_root:\t%d\tgen: %d\tlevel: %d\n", b.TreeRoot, b.TreeRootGen, b.TreeRootLevel)
		fmt.Fprintf(w, "\t\tbackup_chunk_root:\t%d\tgen: %d\tlevel: %d\n", b.ChunkRoot, b.ChunkRootGen, b.ChunkRootLevel)
		fmt.Fprintf(w, "\t\t%s:\t%d\tgen: %d\tlevel: %d\n", extentName, b.ExtentRoot, b.ExtentRootGen, b.ExtentRootLevel)
		fmt.Fprintf(w, "\t\tbackup_fs_root:\t\t%d\tgen: %d\tlevel: %d\n", b.FSRoot, b.FSRootGen, b.FSRootLevel)
		fmt.Fprintf(w, "\t\tbackup_dev_root:\t%d\tgen: %d\tlevel: %d\n", b.DevRoot, b.DevRootGen, b.DevRootLevel)
		fmt.Fprintf(w, "\t\tcsum_root:\t%d\tgen: %d\tlevel: %d\n", b.CsumRoot, b.CsumRootGen, b.CsumRootLevel)
		fmt.Fprintf(w, "\t\tbackup_total_bytes:\t%d\n", b.TotalBytes)
		fmt.Fprintf(w, "\t\tbackup_bytes_used:\t%d\n", b.BytesUsed)
		fmt.Fprintf(w, "\t\tbackup_num_devices:\t%d\n", b.NumDevices)
		w.WriteString("\n")
	}
}
