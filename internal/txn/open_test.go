package txn_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	gomkfs "github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// TestBlockGroupTree runs the random workload on an image with the
// block-group-tree feature (made with our mkfs: btrfs-progs 6.2's cannot),
// whose block group items live in their own tree.
func TestBlockGroupTree(t *testing.T) {
	needProgs(t)
	img := filepath.Join(t.TempDir(), "img")
	os.WriteFile(img, nil, 0o644)
	os.Truncate(img, 512<<20)
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	feats := gomkfs.DefaultFeatures()
	feats.CompatRO |= ondisk.CompatROBlockGroupTree
	if err := gomkfs.Make(dev, gomkfs.Config{Features: feats}); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	checktest.Image(t, img)
	r := rand.New(rand.NewSource(testSeed(t)))
	m := newModel()
	for round := 0; round < 3; round++ {
		im := openImage(t, img)
		if got := im.fi.BlockGroupTreeID(); got != ondisk.BlockGroupTreeObjectID {
			t.Fatalf("block group items in tree %d", got)
		}
		m.randomOps(t, im, r, 150, true)
		im.close(t)
		checktest.Image(t, img)
		im = openImage(t, img)
		m.verify(t, im)
		im.close(t)
	}
	if os.Geteuid() == 0 {
		dir, umount := mountImage(t, img, "rw")
		m.verifyMounted(t, dir)
		os.WriteFile(filepath.Join(dir, "k"), make([]byte, 1<<20), 0o644)
		umount()
		checktest.Image(t, img)
	}
}

// TestOpenRefuses checks the images Open must not write to.
func TestOpenRefuses(t *testing.T) {
	img := mkfs(t, 128<<20)
	checktest.Damaged(img) // superblocks with unknown flags and a bogus log root
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Open(fi); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only fsinfo: %v", err)
	}

	// An unknown compat_ro flag: name it.
	sb := *fi.Super
	sb.CompatROFlags |= 1 << 20
	writeSuper(t, dev, &sb)
	if _, err := fsinfo.Open(dev, fsinfo.Options{}); err == nil || !strings.Contains(err.Error(), "bit 20") {
		t.Errorf("unknown compat_ro, fsinfo: %v", err)
	}
	fi, err = fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	fi.ReadOnly = false // as if fsinfo had let it through
	if _, err := txn.Open(fi); err == nil || !strings.Contains(err.Error(), "bit 20") {
		t.Errorf("unknown compat_ro, txn: %v", err)
	}

	// A log tree to replay.
	sb.CompatROFlags &^= 1 << 20
	sb.LogRoot, sb.LogRootLevel = sb.Root, sb.RootLevel
	writeSuper(t, dev, &sb)
	fi, err = fsinfo.Open(dev, fsinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Open(fi); !errors.Is(err, txn.ErrLogTree) {
		t.Errorf("log tree: %v", err)
	}
	replayed := false
	replay := func(f *txn.Engine) error { replayed = true; return nil }
	if _, err := txn.OpenWith(fi, txn.OpenOptions{ReplayLog: replay}); err != nil || !replayed {
		t.Errorf("log tree with a replay hook: %v (replayed %v)", err, replayed)
	}
}

func writeSuper(t *testing.T, dev blockdev.Device, sb *ondisk.Superblock) {
	t.Helper()
	sb.Bytenr = ondisk.SuperMirrorOffsets[0]
	b := sb.Encode()
	csum.Type(sb.CsumType).SetBlock(b)
	if _, err := dev.WriteAt(b, int64(sb.Bytenr)); err != nil {
		t.Fatal(err)
	}
}

// TestV1CacheInvalidated opens an image whose superblock says a v1 space
// cache exists (and no free space tree): the first commit sets
// cache_generation to -1 so that no cache is trusted again.
func TestV1CacheInvalidated(t *testing.T) {
	img := mkfs(t, 256<<20, "-R", "^free-space-tree")
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := diskio.ReadSuper(dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb := res.Super
	sb.CacheGeneration = uint64(sb.Generation)
	writeSuper(t, dev, sb)
	im := openDev(t, img, dev)
	h := im.begin(t)
	tree, _ := h.Tree(5)
	setXattr(t, h, tree, 256, "user.a", []byte("b"))
	h.End()
	im.close(t)
	dev, _ = blockdev.OpenFile(img, true)
	defer dev.Close()
	res, err = diskio.ReadSuper(dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Super.CacheGeneration != ^uint64(0) {
		t.Errorf("cache_generation %d after commit", res.Super.CacheGeneration)
	}
	checktest.Image(t, img)
}

// TestSuperOnlyCommit: a commit whose only change is the superblock (here
// the v1 cache invalidation of an open that changes nothing) still writes
// a root tree block of the new generation. The superblock's generation is
// what a reader expects of the root tree's root block; before, such a
// commit left it at the previous generation ("parent transid verify
// failed" for btrfs check and the kernel).
func TestSuperOnlyCommit(t *testing.T) {
	img := mkfs(t, 128<<20, "-R", "^free-space-tree")
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := diskio.ReadSuper(dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb := res.Super
	sb.CacheGeneration = uint64(sb.Generation)
	writeSuper(t, dev, sb)
	im := openDev(t, img, dev)
	im.close(t)
	checktest.Image(t, img)
}

// TestCommitTimer lets the timer commit.
func TestCommitTimer(t *testing.T) {
	img := mkfs(t, 128<<20)
	im := openImage(t, img)
	im.fs.StartCommitTimer(20 * time.Millisecond)
	h := im.begin(t)
	tree, _ := h.Tree(5)
	setXattr(t, h, tree, 256, "user.timer", []byte("x"))
	h.End()
	deadline := time.Now().Add(10 * time.Second)
	for im.fs.Stats().Commits == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if im.fs.Stats().Commits == 0 {
		t.Fatal("the timer never committed")
	}
	im.close(t)
	checktest.Image(t, img)
}

// TestConcurrentHandles has goroutines join transactions concurrently
// while others commit (run with -race).
func TestConcurrentHandles(t *testing.T) {
	img := mkfs(t, 256<<20)
	im := openImage(t, img)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				h, err := im.fs.Begin()
				if err != nil {
					errs <- err
					return
				}
				tree, err := h.Tree(5)
				if err == nil {
					name := fmt.Sprintf("user.g%d.%d", g, i)
					err = tree.InsertItem(h.Alloc(), xattrKey(256, name), xattrBytes(h.Transid(), name))
				}
				h.End()
				if err != nil {
					errs <- err
					return
				}
				if i%50 == 0 {
					if err := im.fs.Commit(); err != nil {
						errs <- err
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	im.close(t)
	checktest.Image(t, img)
}

// TestNewChunks adds chunks of every type (a SYSTEM one goes into the
// superblock's sys_chunk_array too), fills them a little, and checks the
// image with btrfs check and, as root, Linux.
func TestNewChunks(t *testing.T) {
	for _, args := range [][]string{{}, {"-m", "single"}} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			img := mkfs(t, 1<<30, args...)
			im := openImage(t, img)
			before := len(im.fi.Chunks.All())
			sysBefore, _ := im.fi.Super.SysChunks()
			h := im.begin(t)
			for _, kind := range []uint64{ondisk.BlockGroupSystem, ondisk.BlockGroupMetadata, ondisk.BlockGroupData} {
				if err := h.AllocChunk(kind); err != nil {
					t.Fatal(err)
				}
			}
			h.End()
			r := rand.New(rand.NewSource(1))
			m := newModel()
			m.randomOps(t, im, r, 100, true)
			im.close(t)
			checktest.Image(t, img)
			im = openImage(t, img)
			sys, _ := im.fi.Super.SysChunks()
			if got := len(im.fi.Chunks.All()); got != before+3 || len(sys) != len(sysBefore)+1 {
				t.Errorf("%d chunks (%d system), had %d (%d)", got, len(sys), before, len(sysBefore))
			}
			m.verify(t, im)
			im.close(t)
			if os.Geteuid() == 0 {
				dir, umount := mountImage(t, img, "rw")
				m.verifyMounted(t, dir)
				os.WriteFile(filepath.Join(dir, "k"), make([]byte, 1<<20), 0o644)
				umount()
				checktest.Image(t, img)
			}
		})
	}
}

// TestBackupRoots commits several times and checks that the superblock's
// four backup slots hold the last four generations' roots.
func TestBackupRoots(t *testing.T) {
	img := mkfs(t, 128<<20)
	im := openImage(t, img)
	for i := 0; i < 7; i++ {
		h := im.begin(t)
		tree, _ := h.Tree(5)
		setXattr(t, h, tree, 256, fmt.Sprintf("user.%d", i), []byte("v"))
		h.End()
		im.commit(t)
		sb := im.fs.Super()
		found := false
		gens := map[uint64]bool{}
		for _, b := range sb.BackupRoots {
			gens[b.TreeRootGen] = true
			if b.TreeRootGen == uint64(sb.Generation) {
				found = true
				if b.TreeRoot != uint64(sb.Root) || b.ChunkRoot != uint64(sb.ChunkRoot) || b.BytesUsed != sb.BytesUsed ||
					b.FSRoot == 0 || b.ExtentRoot == 0 || b.CsumRoot == 0 || b.DevRoot == 0 {
					t.Errorf("generation %d: backup %+v does not match the superblock", sb.Generation, b)
				}
			}
		}
		if !found {
			t.Fatalf("generation %d: no backup slot", sb.Generation)
		}
		if i >= 3 {
			for g := uint64(sb.Generation) - 3; g <= uint64(sb.Generation); g++ {
				if !gens[g] {
					t.Errorf("generation %d: backups lack generation %d: %v", sb.Generation, g, gens)
				}
			}
		}
	}
	im.close(t)
	checktest.Image(t, img)
	// btrfs-progs can open the filesystem from the newest backup root.
	testutil.CheckImage(t, img, "--backup")
}
