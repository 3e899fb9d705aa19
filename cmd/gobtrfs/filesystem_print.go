package main

// Printing space information in btrfs-progs' layouts (cmds/filesystem.c
// and cmds/filesystem-usage.c), with its unit options: the numbers of
// `btrfs filesystem df|usage|show` on a mount of the image.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/spaceinfo"
)

// sizeUnits is btrfs-progs' unit mode: raw bytes, human-readable (base
// 1024 or 1000), or a fixed unit.
type sizeUnits struct {
	raw   bool
	base  uint64 // 1024 (default) or 1000 (--si)
	fixed int    // 0: human; 1 KiB, 2 MiB, 3 GiB, 4 TiB
}

func (u sizeUnits) human() bool { return !u.raw && u.fixed == 0 && u.base != 1000 } // UNITS_HUMAN: binary only

// size formats n. mirrors pretty_size_snprintf
func (u sizeUnits) size(n uint64) string {
	if u.raw {
		return fmt.Sprintf("%d", n)
	}
	base := u.base
	if base == 0 {
		base = 1024
	}
	suffix := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if base == 1000 {
		suffix = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	}
	divs := 0
	last := n
	if u.fixed > 0 {
		for divs < u.fixed {
			last = n
			n /= base
			divs++
		}
	} else {
		for n >= base && divs < len(suffix)-1 {
			last = n
			n /= base
			divs++
		}
	}
	if divs == 0 {
		return fmt.Sprintf("%.2f%s", float32(n), suffix[0])
	}
	return fmt.Sprintf("%.2f%s", float32(last)/float32(base), suffix[divs])
}

// printDF prints `btrfs filesystem df`.
func printDF(w io.Writer, in *spaceinfo.Info, u sizeUnits) {
	for _, s := range in.Spaces {
		fmt.Fprintf(w, "%s, %s: total=%s, used=%s\n", spaceinfo.TypeName(s.Flags), spaceinfo.ProfileName(s.Flags),
			u.size(s.Total), u.size(s.Used))
	}
}

// sortedSpaces orders the spaces as btrfs filesystem usage does: by
// type, System last, then by profile. mirrors cmp_chunk_block_group
func sortedSpaces(in *spaceinfo.Info) []spaceinfo.Space {
	out := append([]spaceinfo.Space(nil), in.Spaces...)
	typ := func(f uint64) uint64 {
		if f&spaceinfo.GlobalRsvFlag != 0 {
			return 0
		}
		return f & ondisk.BlockGroupTypeMask
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Flags, out[j].Flags
		if typ(a) == typ(b) {
			return a&ondisk.BlockGroupProfileMask < b&ondisk.BlockGroupProfileMask
		}
		if b&ondisk.BlockGroupSystem != 0 {
			return true
		}
		if a&ondisk.BlockGroupSystem != 0 {
			return false
		}
		return typ(a) < typ(b)
	})
	return out
}

// printUsage prints `btrfs filesystem usage`: the overall part, then the
// linear layout, or with tabular (-T) the table.
// mirrors print_filesystem_usage_overall + _cmd_filesystem_usage_linear
func printUsage(w io.Writer, in *spaceinfo.Info, u sizeUnits, tabular bool) {
	var rSize, rSlack, rMissing uint64
	for _, d := range in.Devices {
		rSize += d.Size
		rSlack += d.Slack()
		if d.Missing {
			rMissing += d.Size
		}
	}
	var rData, rDataUsed, lData, rMeta, rMetaUsed, lMeta, rSys, rSysUsed uint64
	maxRatio := uint64(1)
	mixed := false
	for _, s := range in.Spaces {
		if s.Flags&spaceinfo.GlobalRsvFlag != 0 {
			continue
		}
		n := spaceinfo.NCopies(s.Flags)
		maxRatio = max(maxRatio, n)
		if s.Flags&ondisk.BlockGroupData != 0 && s.Flags&ondisk.BlockGroupMetadata != 0 {
			mixed = true
		}
		if s.Flags&ondisk.BlockGroupData != 0 {
			rData, rDataUsed, lData = rData+s.Total*n, rDataUsed+s.Used*n, lData+s.Total
		}
		if s.Flags&ondisk.BlockGroupMetadata != 0 {
			rMeta, rMetaUsed, lMeta = rMeta+s.Total*n, rMetaUsed+s.Used*n, lMeta+s.Total
		}
		if s.Flags&ondisk.BlockGroupSystem != 0 {
			rSys, rSysUsed = rSys+s.Total*n, rSysUsed+s.Used*n
		}
	}
	rChunks, rUsed := rData+rSys, rDataUsed+rSysUsed
	if !mixed {
		rChunks, rUsed = rChunks+rMeta, rUsed+rMetaUsed
	}
	unused := rSize - min(rSize, rChunks)
	dataRatio := ratio(rData, lData)
	metaRatio := ratio(rMeta, lMeta)
	if mixed {
		metaRatio = dataRatio
	}
	freeEst := uint64(float64(rData-min(rDataUsed, rData)) / dataRatio)
	if mixed {
		freeEst -= min(freeEst, in.GlobalReserve)
	}
	freeMin := freeEst
	if unused >= 16<<20 { // MIN_UNALOCATED_THRESH
		freeEst += uint64(float64(unused) / dataRatio)
		freeMin += unused / maxRatio
	}
	_, _, avail := in.Statfs()
	width := 10
	if !u.human() {
		width = 18
	}
	fmt.Fprintf(w, "Overall:\n")
	fmt.Fprintf(w, "    Device size:\t\t%*s\n", width, u.size(rSize))
	fmt.Fprintf(w, "    Device allocated:\t\t%*s\n", width, u.size(rChunks))
	fmt.Fprintf(w, "    Device unallocated:\t\t%*s\n", width, u.size(unused))
	fmt.Fprintf(w, "    Device missing:\t\t%*s\n", width, u.size(rMissing))
	fmt.Fprintf(w, "    Device slack:\t\t%*s\n", width, u.size(rSlack))
	fmt.Fprintf(w, "    Used:\t\t\t%*s\n", width, u.size(rUsed))
	fmt.Fprintf(w, "    Free (estimated):\t\t%*s\t(min: %s)\n", width, u.size(freeEst), u.size(freeMin))
	fmt.Fprintf(w, "    Free (statfs, df):\t\t%*s\n", width, u.size(avail))
	fmt.Fprintf(w, "    Data ratio:\t\t\t%*.2f\n", width, dataRatio)
	fmt.Fprintf(w, "    Metadata ratio:\t\t%*.2f\n", width, metaRatio)
	fmt.Fprintf(w, "    Global reserve:\t\t%*s\t(used: %s)\n", width, u.size(in.GlobalReserve), u.size(0))
	if multi := multipleProfiles(in); multi != "" {
		fmt.Fprintf(w, "    Multiple profiles:\t\t%*s\t(%s)\n", width, "yes", multi)
	} else {
		fmt.Fprintf(w, "    Multiple profiles:\t\t%*s\n", width, "no")
	}
	fmt.Fprintln(w)
	if tabular {
		printUsageTable(w, in, u)
		return
	}
	for _, s := range sortedSpaces(in) {
		if s.Flags&spaceinfo.GlobalRsvFlag != 0 {
			continue
		}
		fmt.Fprintf(w, "%s,%s: Size:%s, Used:%s (%.2f%%)\n", spaceinfo.TypeName(s.Flags), spaceinfo.ProfileName(s.Flags),
			u.size(s.Total), u.size(s.Used), 100*float32(s.Used)/float32(s.Total+1))
		for _, d := range in.Devices {
			if n := d.ByType[s.Flags]; n > 0 {
				fmt.Fprintf(w, "   %s\t%10s\n", d.Path, u.size(n))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Unallocated:\n")
	for _, d := range in.Devices {
		var alloc uint64
		for _, n := range d.ByType {
			alloc += n
		}
		fmt.Fprintf(w, "   %s\t%10s\n", d.Path, u.size(d.Size-min(alloc, d.Size)))
	}
}

func ratio(raw, logical uint64) float64 {
	if logical == 0 {
		return 1 // no chunks of the type (progs would divide by zero)
	}
	return float64(raw) / float64(logical)
}

// multipleProfiles names the types with more than one profile, "" if none.
// mirrors btrfs_test_for_multiple_profiles
func multipleProfiles(in *spaceinfo.Info) string {
	var out []string
	for _, t := range []struct {
		flag uint64
		name string
	}{{ondisk.BlockGroupData, "data"}, {ondisk.BlockGroupMetadata, "metadata"}, {ondisk.BlockGroupSystem, "system"}} {
		n := 0
		for _, s := range in.Spaces {
			if s.Flags&spaceinfo.GlobalRsvFlag == 0 && s.Flags&t.flag != 0 {
				n++
			}
		}
		if n > 1 {
			out = append(out, t.name)
		}
	}
	return strings.Join(out, ", ")
}

// printShow prints `btrfs filesystem show` for an unmounted filesystem.
func printShow(w io.Writer, sb *ondisk.Superblock, in *spaceinfo.Info, u sizeUnits) {
	if l := sb.LabelString(); l != "" {
		fmt.Fprintf(w, "Label: '%s' ", quoteLabel(l))
	} else {
		fmt.Fprintf(w, "Label: none ")
	}
	fmt.Fprintf(w, " uuid: %v\n\tTotal devices %d FS bytes used %s\n", sb.FSID, sb.NumDevices, u.size(sb.BytesUsed))
	missing := false
	for _, d := range in.Devices {
		if d.Missing {
			missing = true
			continue
		}
		fmt.Fprintf(w, "\tdevid %4d size %s used %s path %s\n", d.DevID, u.size(d.Size), u.size(d.Allocated), d.Path)
	}
	if missing {
		fmt.Fprintf(w, "\t*** Some devices missing\n")
	}
	fmt.Fprintln(w)
}

// printUsageTable prints the -T table of btrfs filesystem usage: a column
// per block group type and profile, one row per device, totals and use.
// mirrors _cmd_filesystem_usage_tabular
func printUsageTable(w io.Writer, in *spaceinfo.Info, u sizeUnits) {
	var spaces []spaceinfo.Space
	for _, s := range sortedSpaces(in) {
		if s.Flags&spaceinfo.GlobalRsvFlag == 0 {
			spaces = append(spaces, s)
		}
	}
	const hdr = 3 // rows of header: type, profile, dashes
	ncols := 5 + len(spaces)
	unallocCol, totalCol, slackCol := 2+len(spaces), 3+len(spaces), 4+len(spaces)
	t := newCellTable(ncols, hdr+len(in.Devices)+3)
	for i, s := range spaces {
		t.set(2+i, 0, "<"+spaceinfo.TypeName(s.Flags))
		t.set(2+i, 1, "<"+spaceinfo.ProfileName(s.Flags))
	}
	t.set(0, 1, "<Id")
	t.set(1, 1, "<Path")
	t.set(unallocCol, 1, "<Unallocated")
	t.set(totalCol, 1, "<Total")
	t.set(slackCol, 1, "<Slack")
	var totUnused, totTotal, totSlack uint64
	for r, d := range in.Devices {
		row := hdr + r
		t.set(0, row, fmt.Sprintf(">%d", d.DevID))
		t.set(1, row, "<"+d.Path)
		var alloc uint64
		for i, s := range spaces {
			if n := d.ByType[s.Flags]; n > 0 {
				t.set(2+i, row, ">"+u.size(n))
				alloc += n
			} else {
				t.set(2+i, row, ">-")
			}
		}
		unused := d.Size - min(alloc, d.Size)
		t.set(unallocCol, row, ">"+u.size(unused))
		t.set(totalCol, row, ">"+u.size(d.Size))
		if sl := d.Slack(); sl > 0 {
			t.set(slackCol, row, ">"+u.size(sl))
		} else {
			t.set(slackCol, row, ">-")
		}
		totUnused, totTotal, totSlack = totUnused+unused, totTotal+d.Size, totSlack+d.Slack()
	}
	for c := 0; c < ncols; c++ {
		t.set(c, hdr-1, "*-")
		t.set(c, hdr+len(in.Devices), "*-")
	}
	foot := hdr + len(in.Devices) + 1
	t.set(1, foot, "<Total")
	t.set(1, foot+1, "<Used")
	for i, s := range spaces {
		t.set(2+i, foot, ">"+u.size(s.Total))
		t.set(2+i, foot+1, ">"+u.size(s.Used))
	}
	t.set(unallocCol, foot, ">"+u.size(totUnused))
	t.set(totalCol, foot, ">"+u.size(totTotal))
	t.set(slackCol, foot, ">"+u.size(totSlack))
	t.dump(w)
}

// cellTable is btrfs-progs' string table: cells starting with '<' are
// left aligned, '>' right aligned, "*C" filled with C to the column's
// width; columns are as wide as their widest cell, one space apart.
// mirrors table_printf / table_dump
type cellTable struct {
	ncols int
	cells [][]string // [row][col]
}

func newCellTable(ncols, nrows int) *cellTable {
	t := &cellTable{ncols: ncols, cells: make([][]string, nrows)}
	for i := range t.cells {
		t.cells[i] = make([]string, ncols)
	}
	return t
}

func (t *cellTable) set(col, row int, s string) { t.cells[row][col] = s }

func (t *cellTable) dump(w io.Writer) {
	width := make([]int, t.ncols)
	for _, row := range t.cells {
		for c, cell := range row {
			if n := len(cell) - 1; n > 0 && cell[0] != '*' {
				width[c] = max(width[c], n)
			}
		}
	}
	var b strings.Builder
	for _, row := range t.cells {
		for c, cell := range row {
			switch {
			case cell == "":
				b.WriteString(strings.Repeat(" ", width[c]))
			case cell[0] == '*' && len(cell) > 1:
				b.WriteString(strings.Repeat(cell[1:2], width[c]))
			case cell[0] == '<':
				fmt.Fprintf(&b, "%-*s", width[c], cell[1:])
			default:
				fmt.Fprintf(&b, "%*s", width[c], cell[1:])
			}
			if c != t.ncols-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// quoteLabel is a label as quoteName quotes it, without the $'...' around
// it where show already puts quotes.
func quoteLabel(l string) string {
	if q := quoteName(l); q != l {
		return strings.TrimSuffix(strings.TrimPrefix(q, "$'"), "'")
	}
	return l
}
