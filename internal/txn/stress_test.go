package txn_test

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// addPrealloc maps a preallocated (unwritten) extent at file offset off.
func (o *op) addPrealloc(tree, ino ondisk.ObjectID, off uint64, addr ondisk.LogicalAddr, n uint64) {
	o.t.Helper()
	t := o.tree(tree)
	fi := item.FileExtentItem{Generation: o.h.Transid(), RAMBytes: n, Type: item.FileExtentPrealloc,
		DiskBytenr: addr, DiskNumBytes: n, NumBytes: n}
	o.must(t.InsertItem(o.a, ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: off}, fi.Bytes()),
		"insert prealloc extent")
	o.must(o.h.AddDataRef(addr, n, tree, ino, off), "add data ref")
	x := o.readInode(t, ino)
	x.Size = max(x.Size, off+n)
	x.NBytes += n
	o.writeInode(t, ino, x)
}

type commitRow struct {
	phase   string
	dur     time.Duration
	settle  time.Duration
	write   time.Duration
	super   time.Duration
	heads   int
	blocks  int
	passes  int
	extents int
}

// TestStress004 is seed 004's stress workload scaled down: fallocate half
// of a large sparse filesystem in maximal extents, free it all, then make a
// fragmented pattern (every other small extent freed, which turns the free
// space tree's records into bitmaps) and free that too. It logs each
// commit's critical section (delayed refs through the superblock flush) and
// ends with btrfs check. GOBTRFS_STRESS_GIB sets the image size (default
// 1024, 64 with -short).
func TestStress004(t *testing.T) {
	gib := int64(1024)
	if testing.Short() {
		gib = 64
	}
	if v, err := strconv.Atoi(os.Getenv("GOBTRFS_STRESS_GIB")); err == nil && v > 0 {
		gib = int64(v)
	}
	img := mkfs(t, gib<<30)
	var rows []commitRow
	commit := func(im *image, phase string, extents int) {
		before := im.fs.Stats().Commits
		im.commit(t)
		s := im.fs.Stats()
		if s.Commits == before {
			return
		}
		rows = append(rows, commitRow{phase, s.LastCommit, s.LastSettle, s.LastWrite, s.LastSuper,
			s.LastRefHeads, s.LastBlocks, s.LastLoops, extents})
	}
	im := openImage(t, img)
	const ext = 128 << 20
	total := uint64(gib<<30) / 2 / ext
	perFile := uint64(64)
	files := (total + perFile - 1) / perFile
	start := time.Now()
	n := 0
	for f := uint64(0); f < files; f++ {
		h := im.begin(t)
		o := newOp(t, h)
		ino := ondisk.ObjectID(300 + f)
		o.createFile(5, ino, fmt.Sprintf("falloc%d", f))
		for i := uint64(0); i < perFile && f*perFile+i < total; i++ {
			addr, err := h.AllocData(ext)
			o.must(err, "alloc")
			o.addPrealloc(5, ino, i*ext, addr, ext)
			n++
		}
		h.End()
		if f%8 == 7 || f == files-1 {
			commit(im, "fallocate", n)
			n = 0
		}
	}
	t.Logf("fallocated %d GiB in %d extents in %v", total*ext>>30, total, time.Since(start))
	for f := uint64(0); f < files; f++ {
		h := im.begin(t)
		newOp(t, h).deleteFile(5, ondisk.ObjectID(300+f), fmt.Sprintf("falloc%d", f))
		h.End()
		if f%8 == 7 || f == files-1 {
			commit(im, "free", int(min(8, files)*perFile))
		}
	}
	// Fragmented: many 64 KiB extents; free every other one.
	r := rand.New(rand.NewSource(1))
	const small = 64 << 10
	const nsmall = 40000
	h := im.begin(t)
	o := newOp(t, h)
	o.createFile(5, 100000, "frag")
	for i := 0; i < nsmall; i++ {
		addr, err := h.AllocData(small)
		o.must(err, "alloc")
		o.addPrealloc(5, 100000, uint64(i)*small, addr, small)
		if i%5000 == 4999 {
			h.End()
			commit(im, "fragment", 5000)
			h = im.begin(t)
			o = newOp(t, h)
		}
	}
	_ = r
	h.End()
	commit(im, "fragment", 0)
	// Punch every other extent.
	h = im.begin(t)
	o = newOp(t, h)
	tree := o.tree(5)
	for i := 0; i < nsmall; i += 2 {
		k := ondisk.Key{ObjectID: 100000, Type: ondisk.ExtentDataKey, Offset: uint64(i) * small}
		data, ok, err := tree.Lookup(k)
		if err != nil || !ok {
			t.Fatalf("extent %d: %v %v", i, ok, err)
		}
		fi, _ := item.DecodeFileExtentItem(data)
		o.must(o.h.DropDataRef(fi.DiskBytenr, fi.DiskNumBytes, 5, 100000, k.Offset), "drop")
		o.must(tree.DeleteItem(o.a, k), "delete extent item")
		x := o.readInode(tree, 100000)
		x.NBytes -= small
		o.writeInode(tree, 100000, x)
		if i%5000 == 4998 {
			h.End()
			commit(im, "punch holes", 2500)
			h = im.begin(t)
			o = newOp(t, h)
			tree = o.tree(5)
		}
	}
	h.End()
	commit(im, "punch holes", 0)
	bitmaps := 0
	fst, _ := im.fi.Tree(ondisk.FreeSpaceTreeObjectID)
	fst.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, _ []byte) bool {
		if k.Type == ondisk.FreeSpaceBitmapKey {
			bitmaps++
		}
		return true
	})
	t.Logf("free space tree after punching holes: %d bitmap items", bitmaps)
	h = im.begin(t)
	newOp(t, h).deleteFile(5, 100000, "frag")
	h.End()
	commit(im, "free fragmented", nsmall/2)
	im.close(t)
	var max, maxSettle time.Duration
	t.Logf("%-16s %10s %10s %10s %10s %8s %8s %7s %8s", "phase", "critical", "refs+items", "blocks+fl",
		"super+fl", "heads", "blocks", "passes", "extents")
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	for _, r := range rows {
		t.Logf("%-16s %10v %10v %10v %10v %8d %8d %7d %8d", r.phase, us(r.dur), us(r.settle), us(r.write), us(r.super),
			r.heads, r.blocks, r.passes, r.extents)
		max = maxDur(max, r.dur)
		maxSettle = maxDur(maxSettle, r.settle)
	}
	t.Logf("%d GiB image: max commit critical section %v (max without I/O %v) over %d commits",
		gib, max, maxSettle, len(rows))
	phases := map[string][]time.Duration{}
	var order []string
	for _, r := range rows {
		if phases[r.phase] == nil {
			order = append(order, r.phase)
		}
		phases[r.phase] = append(phases[r.phase], r.dur)
	}
	for _, p := range order {
		d := phases[p]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		t.Logf("%-16s %4d commits: median %v, max %v", p, len(d), us(d[len(d)/2]), us(d[len(d)-1]))
	}
	checktest.Image(t, img)
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
