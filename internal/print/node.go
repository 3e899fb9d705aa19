package print

import (
	"bufio"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// printer holds what print-tree.c takes from fs_info and the print mode.
type printer struct {
	w           *bufio.Writer
	nodeSize    uint32
	sectorSize  uint32
	csumType    csum.Type
	hideNames   bool
	csumHeaders bool
	csumItems   bool
	dfs         bool
	warn        func(string)
}

func (p *printer) printf(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

func (p *printer) warnf(format string, args ...any) {
	if p.warn != nil {
		p.warn(fmt.Sprintf(format, args...))
	}
}

// nodePtrsPerBlock is BTRFS_NODEPTRS_PER_EXTENT_BUFFER.
func (p *printer) nodePtrsPerBlock() int { return diskio.MaxKeyPtrs(p.nodeSize) }

// printHeader mirrors print_header_info.
func (p *printer) printHeader(n *diskio.Node) {
	h := n.Header()
	nr := n.NumItems()
	kind := "leaf"
	if h.Level > 0 {
		kind = "node"
		p.printf("node %d level %d items %d free space %d generation %d owner %s\n",
			uint64(n.Addr), h.Level, uint32(nr), uint32(p.nodePtrsPerBlock()-nr), uint64(h.Generation),
			ObjectIDString(h.Owner, 0))
	} else {
		p.printf("leaf %d items %d free space %d generation %d owner %s\n",
			uint64(h.Bytenr), uint32(nr), int32(n.LeafFreeSpace()), uint64(h.Generation),
			ObjectIDString(h.Owner, 0))
	}
	csumStr := ""
	if p.csumHeaders {
		csumStr = fmt.Sprintf(" csum 0x%x", h.Csum[:p.csumType.Size()])
	}
	p.printf("%s %d flags 0x%x(%s) backref revision %d%s\n", kind, uint64(h.Bytenr), h.Flags,
		headerFlagsString(h.Flags), h.BackrefRev, csumStr)
	p.printf("fs uuid %s\nchunk uuid %s\n", h.FSID, h.ChunkTreeUUID)
}

// printNode prints one internal node's header and key pointers.
func (p *printer) printNode(n *diskio.Node) {
	p.printHeader(n)
	nr := min(n.NumItems(), p.nodePtrsPerBlock())
	for i := 0; i < nr; i++ {
		kp := n.KeyPtr(i)
		p.printf("\tkey %s block %d gen %d\n", KeyString(kp.Key), uint64(kp.BlockPtr), uint64(kp.Generation))
	}
}

// printBlock prints a leaf or node without following children.
func (p *printer) printBlock(n *diskio.Node) {
	if n.IsLeaf() {
		p.printLeaf(n)
	} else {
		p.printNode(n)
	}
}

// printTree prints root and, when follow, every block below it: breadth
// first (all nodes of a level, then the next level) by default, depth first
// with dfs. mirrors btrfs_print_tree
func (p *printer) printTree(t *ctree.Tree, root *diskio.Node, follow bool) {
	p.printBlock(root)
	if !follow || root.IsLeaf() {
		return
	}
	if p.dfs {
		p.printChildrenDFS(t, root)
	} else {
		p.printChildrenBFS(t, root)
	}
}

// readChild reads what kp points to, expecting a block of level.
func (p *printer) readChild(t *ctree.Tree, kp ondisk.KeyPtr, level int) (*diskio.Node, error) {
	return t.R.ReadNode(kp.BlockPtr, diskio.Expect{Tree: t.ID, Level: level, Generation: kp.Generation, FirstKey: &kp.Key})
}

// printChildrenDFS mirrors dfs_print_children.
func (p *printer) printChildrenDFS(t *ctree.Tree, n *diskio.Node) {
	for i := 0; i < n.NumItems(); i++ {
		kp := n.KeyPtr(i)
		c, err := p.readChild(t, kp, n.Level()-1)
		if err != nil {
			p.warnf("failed to read %d in tree %d: %v", uint64(kp.BlockPtr), uint64(n.Owner()), err)
			continue
		}
		p.printBlock(c)
		if !c.IsLeaf() {
			p.printChildrenDFS(t, c)
		}
	}
}

// printChildrenBFS mirrors bfs_print_children: every block of each level
// below root, left to right. Only the key pointers of the next level are
// kept, so memory stays proportional to the width of one level. Where
// btrfs-progs stops at an unreadable block, this warns and goes on.
func (p *printer) printChildrenBFS(t *ctree.Tree, root *diskio.Node) {
	ptrs := keyPtrs(root)
	for level := root.Level() - 1; level >= 0 && len(ptrs) > 0; level-- {
		var next []ondisk.KeyPtr
		for _, kp := range ptrs {
			c, err := p.readChild(t, kp, level)
			if err != nil {
				p.warnf("failed to read %d in tree %s: %v", uint64(kp.BlockPtr), ondisk.TreeName(t.ID), err)
				continue
			}
			p.printBlock(c)
			if level > 0 {
				next = append(next, keyPtrs(c)...)
			}
		}
		ptrs = next
	}
}

func keyPtrs(n *diskio.Node) []ondisk.KeyPtr {
	out := make([]ondisk.KeyPtr, n.NumItems())
	for i := range out {
		out[i] = n.KeyPtr(i)
	}
	return out
}

// printExtentsOnly prints only the leaves below n, depth first (dump-tree -e).
// mirrors print_extents
func (p *printer) printExtentsOnly(t *ctree.Tree, n *diskio.Node) {
	if n.IsLeaf() {
		p.printLeaf(n)
		return
	}
	for i := 0; i < n.NumItems(); i++ {
		kp := n.KeyPtr(i)
		c, err := p.readChild(t, kp, n.Level()-1)
		if err != nil {
			p.warnf("failed to read %d in tree %s: %v", uint64(kp.BlockPtr), ondisk.TreeName(t.ID), err)
			continue
		}
		p.printExtentsOnly(t, c)
	}
}
