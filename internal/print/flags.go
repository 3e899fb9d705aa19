package print

import (
	"fmt"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// bgFlagsString mirrors bg_flags_to_str, quirks included: only DATA clears
// "empty", so METADATA and SYSTEM get a "|" only after DATA; and the profile
// is always appended, "single" in lower case as 6.2's raid table spells it.
func bgFlagsString(flags uint64) string {
	var s strings.Builder
	empty := true
	if flags&ondisk.BlockGroupData != 0 {
		empty = false
		s.WriteString("DATA")
	}
	if flags&ondisk.BlockGroupMetadata != 0 {
		if !empty {
			s.WriteString("|")
		}
		s.WriteString("METADATA")
	}
	if flags&ondisk.BlockGroupSystem != 0 {
		if !empty {
			s.WriteString("|")
		}
		s.WriteString("SYSTEM")
	}
	s.WriteString("|")
	s.WriteString(raidName(flags))
	return s.String()
}

// raidName mirrors btrfs_bg_type_to_raid_name (upper_name of btrfs_raid_array).
func raidName(flags uint64) string {
	switch {
	case flags&ondisk.BlockGroupRaid10 != 0:
		return "RAID10"
	case flags&ondisk.BlockGroupRaid1 != 0:
		return "RAID1"
	case flags&ondisk.BlockGroupRaid1C3 != 0:
		return "RAID1C3"
	case flags&ondisk.BlockGroupRaid1C4 != 0:
		return "RAID1C4"
	case flags&ondisk.BlockGroupDup != 0:
		return "DUP"
	case flags&ondisk.BlockGroupRaid0 != 0:
		return "RAID0"
	case flags&ondisk.BlockGroupRaid5 != 0:
		return "RAID5"
	case flags&ondisk.BlockGroupRaid6 != 0:
		return "RAID6"
	}
	return "single"
}

// qgroupStatusFlagsString mirrors qgroup_flags_to_str.
func qgroupStatusFlagsString(flags uint64) string {
	s := "OFF"
	if flags&item.QgroupStatusFlagOn != 0 {
		s = "ON"
	}
	if flags&item.QgroupStatusFlagRescan != 0 {
		s += "|SCANNING"
	}
	if flags&item.QgroupStatusFlagInconsistent != 0 {
		s += "|INCONSISTENT"
	}
	return s
}

var inodeFlagNames = []string{"NODATASUM", "NODATACOW", "READONLY", "NOCOMPRESS", "PREALLOC", "SYNC",
	"IMMUTABLE", "APPEND", "NODUMP", "NOATIME", "DIRSYNC", "COMPRESS"}

// inodeFlagsString mirrors inode_flags_to_str.
func inodeFlagsString(flags uint64) string {
	var names []string
	for i, n := range inodeFlagNames {
		if flags&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// extentFlagsString mirrors extent_flags_to_str (FULL_BACKREF always gets a
// leading "|").
func extentFlagsString(flags uint64) string {
	s := ""
	if flags&item.ExtentFlagData != 0 {
		s = "DATA"
	}
	if flags&item.ExtentFlagTreeBlock != 0 {
		if s != "" {
			s += "|"
		}
		s += "TREE_BLOCK"
	}
	if flags&item.BlockFlagFullBackref != 0 {
		s += "|FULL_BACKREF"
	}
	return s
}

// headerFlagsString mirrors header_flags_to_str.
func headerFlagsString(flags uint64) string {
	s := ""
	if flags&ondisk.HeaderFlagWritten != 0 {
		s = "WRITTEN"
	}
	if flags&ondisk.HeaderFlagReloc != 0 {
		if s != "" {
			s += "|"
		}
		s += "RELOC"
	}
	return s
}

func compressString(c uint8) string {
	switch c {
	case item.CompressNone:
		return "none"
	case item.CompressZlib:
		return "zlib"
	case item.CompressLZO:
		return "lzo"
	case item.CompressZstd:
		return "zstd"
	}
	return fmt.Sprintf("UNKNOWN.%d", c)
}

func fileExtentTypeString(t uint8) string {
	switch t {
	case item.FileExtentInline:
		return "inline"
	case item.FileExtentPrealloc:
		return "prealloc"
	case item.FileExtentReg:
		return "regular"
	}
	return "unknown"
}

var dirTypeNames = map[uint8]string{
	item.FTRegFile: "FILE", item.FTDir: "DIR", item.FTChrdev: "CHRDEV", item.FTBlkdev: "BLKDEV",
	item.FTFifo: "FIFO", item.FTSock: "SOCK", item.FTSymlink: "SYMLINK", item.FTXattr: "XATTR",
}

func dirTypeString(t uint8) string {
	if n, ok := dirTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("DIR_ITEM.%d", t)
}

// cString is printf's "%.*s": the bytes up to the first NUL, at most max
// (max < 0: no limit).
func cString(b []byte, max int) []byte {
	if max >= 0 && len(b) > max {
		b = b[:max]
	}
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
