package treelog

import (
	"bytes"
	"hash/maphash"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// contentOff is where the part of a log block that its content decides
// starts: nritems, level and the items. Before it, the header holds the
// checksum, fsid, bytenr, flags, chunk tree uuid, generation and owner,
// which are the same for every block of the transaction's log but bytenr.
const contentOff = 0x60

// diskBlocks are the blocks of the log that the superblock on disk points
// to, by content: the next build uses a block again instead of writing an
// equal one (a log grows at its end as new inodes are fsync'd, so most of
// it is unchanged from one fsync to the next). mirrors the kernel's log
// trees, which are changed in place (COW within the transaction), not
// rebuilt
type diskBlocks struct {
	seed   maphash.Seed
	byHash map[uint64][]diskBlock
	addrs  []ondisk.LogicalAddr
	spare  [][]byte // content buffers of dropped blocks, reused
}

type diskBlock struct {
	addr    ondisk.LogicalAddr
	content []byte
}

// find returns the address of a block on disk whose content equals b's
// and that used does not hold: a block is used once per build, even when
// two log trees have equal leaves (checksum items of an extent both log,
// one per leaf), since a block in two trees is pinned twice by replay.
func (d *diskBlocks) find(b []byte, used map[ondisk.LogicalAddr]bool) (ondisk.LogicalAddr, bool) {
	if d.byHash == nil {
		return 0, false
	}
	c := b[contentOff:]
	for _, x := range d.byHash[maphash.Bytes(d.seed, c)] {
		if !used[x.addr] && bytes.Equal(x.content, c) {
			return x.addr, true
		}
	}
	return 0, false
}

// replace makes the log just synced (new blocks written, reused blocks
// kept) the one on disk and returns the blocks of the previous log that
// it no longer uses, to be freed.
func (d *diskBlocks) replace(written []*diskio.Node, reused []ondisk.LogicalAddr) []ondisk.LogicalAddr {
	if d.byHash == nil {
		d.seed, d.byHash = maphash.MakeSeed(), map[uint64][]diskBlock{}
	}
	keep := make(map[ondisk.LogicalAddr]bool, len(reused))
	for _, a := range reused {
		keep[a] = true
	}
	var drop []ondisk.LogicalAddr
	for h, xs := range d.byHash {
		out := xs[:0]
		for _, x := range xs {
			if keep[x.addr] {
				out = append(out, x)
			} else {
				drop = append(drop, x.addr)
				d.spare = append(d.spare, x.content)
			}
		}
		if len(out) == 0 {
			delete(d.byHash, h)
		} else {
			d.byHash[h] = out
		}
	}
	for _, n := range written {
		c := n.Data[contentOff:]
		var buf []byte
		if k := len(d.spare); k > 0 && cap(d.spare[k-1]) >= len(c) {
			buf, d.spare = d.spare[k-1][:len(c)], d.spare[:k-1]
		} else {
			buf = make([]byte, len(c))
		}
		copy(buf, c)
		h := maphash.Bytes(d.seed, c)
		d.byHash[h] = append(d.byHash[h], diskBlock{n.Addr, buf})
	}
	d.addrs = d.addrs[:0]
	for _, xs := range d.byHash {
		for _, x := range xs {
			d.addrs = append(d.addrs, x.addr)
		}
	}
	return drop
}

// reset forgets the log (a commit dropped it and freed its blocks).
func (d *diskBlocks) reset() {
	for h, xs := range d.byHash {
		for _, x := range xs {
			d.spare = append(d.spare, x.content)
		}
		delete(d.byHash, h)
	}
	d.addrs = d.addrs[:0]
}
