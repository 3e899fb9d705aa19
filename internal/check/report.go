package check

import (
	"fmt"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Class names the group of checks a problem comes from.
type Class string

// Problem classes, one per group of checks (see the package comment).
const (
	ClassSuper      Class = "super"       // superblock and backup roots
	ClassTree       Class = "tree"        // block structure: checksums, levels, keys, generations, owners
	ClassExtent     Class = "extent"      // extent items against the references found in the trees
	ClassBlockGroup Class = "block-group" // block group items: used, type, placement of extents
	ClassFreeSpace  Class = "free-space"  // free space tree against the extent tree
	ClassChunk      Class = "chunk"       // chunks, dev extents, dev items, sys_chunk_array
	ClassCsum       Class = "csum"        // checksum items and data checksums
	ClassInode      Class = "inode"       // inodes, names, file extents of the fs trees
	ClassRootRef    Class = "root-ref"    // ROOT_REF / ROOT_BACKREF and subvolume links
	ClassQgroup     Class = "qgroup"      // quota tree items and qgroup counters against the trees
	ClassSpaceCache Class = "space-cache" // v1 free space cache inodes and headers of the root tree
)

// Problem is one inconsistency: where it is (tree, block, item key) and
// what is wrong.
type Problem struct {
	Class Class
	Tree  ondisk.ObjectID    // tree the problem was found in; 0 when none applies
	Block ondisk.LogicalAddr // tree block (or extent) concerned; 0 when none applies
	Key   *ondisk.Key        // item concerned, if any
	Msg   string
}

// String prints the problem as one line:
// "[inode] tree FS_TREE block 30441472 key (257 INODE_ITEM 0): nlink 2 but 1 name".
func (p Problem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]", p.Class)
	if p.Tree == 0 && p.Class == ClassSuper {
		b.WriteString(" superblock")
	}
	if p.Tree != 0 {
		fmt.Fprintf(&b, " tree %s", ondisk.TreeName(p.Tree))
	}
	if p.Block != 0 {
		fmt.Fprintf(&b, " block %d", uint64(p.Block))
	}
	if p.Key != nil {
		fmt.Fprintf(&b, " key %v", *p.Key)
	}
	b.WriteString(": ")
	b.WriteString(p.Msg)
	return b.String()
}

// maxStoredProblems bounds Report.Problems on badly damaged images; the
// count in Report.NumProblems stays exact.
const maxStoredProblems = 10000

// Report is the outcome of a check.
type Report struct {
	// Problems are the errors found, in the order found (at most
	// maxStoredProblems; NumProblems counts all of them).
	Problems    []Problem
	NumProblems int
	// Warnings are oddities that btrfs check also tolerates (a bad first
	// copy of a DUP block, a stale device size).
	Warnings []string
	// InUse is set when another process had the image open for writing
	// while it was checked: the result may be stale or show half-written
	// state.
	InUse string

	// Summary figures, as btrfs check prints them.
	BytesUsed         uint64 // sum of the extent items' sizes ("found N bytes used")
	CsumBytes         uint64 // bytes of checksum items
	TreeBytes         uint64 // bytes of tree blocks reached from the roots
	FSTreeBytes       uint64 // of those, owned by subvolume trees
	ExtentTreeBytes   uint64 // of those, owned by the extent tree
	BtreeSpaceWaste   uint64 // unused bytes in tree blocks
	DataBytesAlloc    uint64 // disk bytes of the file extents' data extents
	DataBytesRef      uint64 // bytes the file extents reference
	DataBytesVerified uint64 // data bytes whose checksums were verified (Options.CheckDataCsum)
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return r.NumProblems == 0 }

// Err returns nil for a clean filesystem, or an error listing the first problems.
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "check: %d error(s) found", r.NumProblems)
	for i, p := range r.Problems {
		if i == 20 {
			fmt.Fprintf(&b, "\n\t... and %d more", r.NumProblems-i)
			break
		}
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return &Error{Report: r, msg: b.String()}
}

// Error is the error Report.Err returns; it carries the report.
type Error struct {
	Report *Report
	msg    string
}

func (e *Error) Error() string { return e.msg }

// String prints every problem, then the summary line.
func (r *Report) String() string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString("ERROR: ")
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	if r.NumProblems > len(r.Problems) {
		fmt.Fprintf(&b, "ERROR: ... %d more not stored\n", r.NumProblems-len(r.Problems))
	}
	b.WriteString(r.Summary())
	return b.String()
}

// Summary is the line btrfs check ends with.
func (r *Report) Summary() string {
	if r.OK() {
		return fmt.Sprintf("found %d bytes used, no error found", r.BytesUsed)
	}
	return fmt.Sprintf("found %d bytes used, %d error(s) found", r.BytesUsed, r.NumProblems)
}

// Find returns the problems of class c (any class when c is "") in tree
// (any tree when 0) whose key equals key (any key when nil).
func (r *Report) Find(c Class, tree ondisk.ObjectID, key *ondisk.Key) []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if c != "" && p.Class != c {
			continue
		}
		if tree != 0 && p.Tree != tree {
			continue
		}
		if key != nil && (p.Key == nil || *p.Key != *key) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func (r *Report) add(p Problem) {
	r.NumProblems++
	if len(r.Problems) < maxStoredProblems {
		r.Problems = append(r.Problems, p)
	}
}

func (r *Report) warn(format string, args ...any) {
	if len(r.Warnings) < maxStoredProblems {
		r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
	}
}

// keyp returns a pointer to a copy of k (for Problem.Key).
func keyp(k ondisk.Key) *ondisk.Key { return &k }
