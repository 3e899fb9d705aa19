package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Quota groups: the quota tree's QGROUP_INFO counters must equal what the
// trees say. A subvolume's level-0 qgroup references every extent (data
// extent or tree block) that the subvolume's tree reaches, and holds it
// exclusively when no other subvolume reaches it; a higher-level qgroup
// references an extent when one of its member subvolumes (directly or
// through nested groups) does, and holds it exclusively when every
// subvolume that reaches it is one of its members.
//
// mirrors btrfs-progs check/qgroup-verify.c (qgroup_verify_all,
// account_one_extent): progs resolves each extent's roots through its
// backrefs; we collect them while walking the subvolume trees, which give
// the same sets on a consistent filesystem (backref damage is reported by
// the extent checks). Like progs, we skip the comparison when the status
// item says a rescan is running or the counters are inconsistent.

// qgItem locates a quota tree item for problems.
type qgItem struct {
	key  ondisk.Key
	leaf ondisk.LogicalAddr
}

// qgGroup is one QGROUP_INFO with what the trees say.
type qgGroup struct {
	qgItem
	id         uint64
	disk       item.QgroupInfo
	parents    []uint64 // from QGROUP_RELATION items
	rfer, excl uint64   // computed
}

// qgExtent is an extent some subvolume reaches, with the subvolumes.
type qgExtent struct {
	size  uint64
	roots []ondisk.ObjectID // distinct, in the order the trees were walked
}

// qgroupState is what the quota tree holds and what the walks found.
type qgroupState struct {
	status    *item.QgroupStatus
	statusAt  qgItem
	groups    map[uint64]*qgGroup
	relations map[[2]uint64]qgItem // (objectid, offset) of each RELATION item
	extents   map[uint64]*qgExtent // by extent start
	unsure    []string             // why the computed counts cannot be trusted
}

func newQgroupState() *qgroupState {
	return &qgroupState{groups: map[uint64]*qgGroup{}, relations: map[[2]uint64]qgItem{}, extents: map[uint64]*qgExtent{}}
}

// qgroupID prints a qgroup id as btrfs does: level/subvolume.
func qgroupID(id uint64) string {
	return fmt.Sprintf("%d/%d", item.QgroupLevel(id), item.QgroupSubvolID(id))
}

// isQgroupTree reports whether a tree is accounted to a level-0 qgroup.
// mirrors is_fstree of btrfs-progs (the data reloc tree is not one)
func isQgroupTree(id ondisk.ObjectID) bool {
	return id == ondisk.FSTreeObjectID || id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID
}

// quotaLeaf reads the items of a quota tree leaf.
func (c *checker) quotaLeaf(n *diskio.Node, fresh bool) {
	q := c.qg
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		d := n.ItemData(i)
		at := qgItem{k, n.Addr}
		bad := func(format string, args ...any) {
			c.problem(ClassQgroup, ondisk.QuotaTreeObjectID, n.Addr, keyp(k), format, args...)
		}
		switch k.Type {
		case ondisk.QgroupStatusKey:
			st, err := item.DecodeQgroupStatus(d)
			if err != nil {
				bad("%v", err)
				continue
			}
			if q.status != nil {
				bad("second QGROUP_STATUS item")
				continue
			}
			q.status, q.statusAt = &st, at
		case ondisk.QgroupInfoKey:
			info, err := item.DecodeQgroupInfo(d)
			if err != nil {
				bad("%v", err)
				continue
			}
			if k.ObjectID != 0 {
				bad("QGROUP_INFO key objectid %d, expected 0", k.ObjectID)
			}
			q.groups[k.Offset] = &qgGroup{qgItem: at, id: k.Offset, disk: info}
		case ondisk.QgroupLimitKey:
			if _, err := item.DecodeQgroupLimit(d); err != nil {
				bad("%v", err)
				continue
			}
			// INFO items sort before LIMIT items (both objectid 0)
			if q.groups[k.Offset] == nil {
				bad("QGROUP_LIMIT for qgroup %s, which has no QGROUP_INFO", qgroupID(k.Offset))
			}
		case ondisk.QgroupRelationKey:
			q.relations[[2]uint64{uint64(k.ObjectID), k.Offset}] = at
		default:
			bad("unexpected %s item in the quota tree", k.Type)
		}
	}
}

// qgroupRef records that tree id reaches the extent at start (trees are
// walked one after the other, so a repeat is the last root listed).
func (q *qgroupState) ref(start, size uint64, id ondisk.ObjectID) {
	e := q.extents[start]
	if e == nil {
		e = &qgExtent{size: size}
		q.extents[start] = e
	}
	if n := len(e.roots); n > 0 && e.roots[n-1] == id {
		return
	}
	e.roots = append(e.roots, id)
}

// qgroupBlock accounts a block of a subvolume tree (and, for a leaf, the
// data extents of its file extent items) to the tree being walked.
func (c *checker) qgroupBlock(w *walker, n *diskio.Node) {
	q, id := c.qg, w.ri.id
	q.ref(uint64(n.Addr), c.nodesize, id)
	if !n.IsLeaf() {
		return
	}
	for i := 0; i < n.NumItems(); i++ {
		if n.Key(i).Type != ondisk.ExtentDataKey {
			continue
		}
		d := n.ItemData(i)
		if len(d) < item.FileExtentItemSize || d[20] == item.FileExtentInline {
			continue
		}
		disk, diskLen := le.Uint64(d[21:]), le.Uint64(d[29:])
		if disk == 0 {
			continue
		}
		q.ref(disk, diskLen, id)
	}
}

// checkQgroups compares the QGROUP_INFO counters with the walks.
// mirrors qgroup_verify_all and report_qgroups
func (c *checker) checkQgroups() {
	q := c.qg
	if q == nil {
		return
	}
	if q.status == nil {
		c.problem(ClassQgroup, ondisk.QuotaTreeObjectID, 0, keyp(ondisk.Key{Type: ondisk.QgroupStatusKey}), "quota tree without a QGROUP_STATUS item")
	}
	c.qgroupRelations()
	if reason := c.qgroupSkipReason(); reason != "" {
		c.rep.warn("qgroup counters not verified: %s", reason)
		return
	}
	c.qgroupAccount()
	ids := make([]uint64, 0, len(q.groups))
	for id := range q.groups {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		g := q.groups[id]
		var diffs []string
		if g.rfer != g.disk.Referenced {
			diffs = append(diffs, fmt.Sprintf("referenced %d on disk, the trees say %d", g.disk.Referenced, g.rfer))
		}
		if g.excl != g.disk.Exclusive {
			diffs = append(diffs, fmt.Sprintf("exclusive %d on disk, the trees say %d", g.disk.Exclusive, g.excl))
		}
		if len(diffs) > 0 {
			c.problem(ClassQgroup, ondisk.QuotaTreeObjectID, g.leaf, keyp(g.key), "qgroup %s: %s", qgroupID(id), strings.Join(diffs, "; "))
		}
	}
}

// qgroupSkipReason says why the counters cannot be compared, or "".
func (c *checker) qgroupSkipReason() string {
	q := c.qg
	switch {
	case c.sb.IncompatFlags&ondisk.IncompatSimpleQuota != 0 || q.status != nil && q.status.Flags&item.QgroupStatusFlagSimpleMode != 0:
		return "simple quotas (squota) count extents by owner, not by reachability"
	case q.status != nil && q.status.Flags&item.QgroupStatusFlagRescan != 0:
		return "the quota status says a rescan is in progress, a difference is expected"
	case q.status != nil && q.status.Flags&item.QgroupStatusFlagInconsistent != 0:
		return "the quota status says the counters are inconsistent (a rescan has not run), a difference is expected"
	case len(q.unsure) > 0:
		return strings.Join(q.unsure, "; ")
	}
	return ""
}

// qgroupRelations links member groups to their parents. Each relation is
// stored twice, (member, parent) and (parent, member); the one with the
// smaller objectid names the member.
func (c *checker) qgroupRelations() {
	q := c.qg
	pairs := make([][2]uint64, 0, len(q.relations))
	for p := range q.relations {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool {
		return pairs[i][0] < pairs[j][0] || pairs[i][0] == pairs[j][0] && pairs[i][1] < pairs[j][1]
	})
	for _, p := range pairs {
		at := q.relations[p]
		member, parent := p[0], p[1]
		bad := func(format string, args ...any) {
			c.problem(ClassQgroup, ondisk.QuotaTreeObjectID, at.leaf, keyp(at.key), format, args...)
		}
		if member == parent {
			bad("qgroup %s is related to itself", qgroupID(member))
			continue
		}
		if member > parent {
			if _, ok := q.relations[[2]uint64{parent, member}]; !ok {
				c.rep.warn("quota tree %v: QGROUP_RELATION without its reverse item (%d, QGROUP_RELATION, %d)", at.key, parent, member)
			}
			continue
		}
		m, g := q.groups[member], q.groups[parent]
		if m == nil || g == nil {
			// btrfs check fails loading such a relation
			bad("QGROUP_RELATION between %s and %s, which has no QGROUP_INFO", qgroupID(member), qgroupID(parent))
			continue
		}
		if item.QgroupLevel(parent) <= item.QgroupLevel(member) {
			bad("QGROUP_RELATION: parent %s is not above member %s", qgroupID(parent), qgroupID(member))
			continue
		}
		if _, ok := q.relations[[2]uint64{parent, member}]; !ok {
			c.rep.warn("quota tree %v: QGROUP_RELATION without its reverse item (%d, QGROUP_RELATION, %d)", at.key, parent, member)
		}
		m.parents = append(m.parents, parent)
	}
}

// qgroupAccount adds every extent to the groups that reach it.
// mirrors account_one_extent
func (c *checker) qgroupAccount() {
	q := c.qg
	type delta struct {
		g    *qgGroup
		excl bool
	}
	cache := map[string][]delta{} // by root set
	var sig []byte
	for start, e := range q.extents {
		if i := c.ext.find(start); i >= 0 {
			e.size = c.ext.recs[i].length // the extent item says how big it is
		}
		sig = sig[:0]
		for _, r := range e.roots {
			sig = strconv.AppendUint(append(sig, ','), uint64(r), 10)
		}
		ds, ok := cache[string(sig)]
		if !ok {
			// how many of the extent's roots reach each group
			count := map[*qgGroup]int{}
			var order []*qgGroup
			for _, r := range e.roots {
				g0 := q.groups[uint64(r)]
				if g0 == nil {
					continue
				}
				seen := map[*qgGroup]bool{g0: true}
				todo := []*qgGroup{g0}
				for len(todo) > 0 {
					g := todo[0]
					todo = todo[1:]
					if count[g] == 0 {
						order = append(order, g)
					}
					count[g]++
					for _, p := range g.parents {
						if pg := q.groups[p]; pg != nil && !seen[pg] {
							seen[pg] = true
							todo = append(todo, pg)
						}
					}
				}
			}
			for _, g := range order {
				ds = append(ds, delta{g, count[g] == len(e.roots)})
			}
			cache[string(sig)] = ds
		}
		for _, d := range ds {
			d.g.rfer += e.size
			if d.excl {
				d.g.excl += e.size
			}
		}
	}
}
