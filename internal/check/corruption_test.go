package check

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// target is where a damaged image's problem must be reported.
type target struct {
	tree  ondisk.ObjectID
	key   *ondisk.Key        // nil: any key
	block ondisk.LogicalAddr // 0: any block
	// msgKey: the message must name this item key (a leaf the
	// tree-checker refuses is reported at the leaf, naming the bad item)
	msgKey *ondisk.Key
}

// corruption is one targeted damage.
type corruption struct {
	name  string
	class Class
	// apply damages the image and says where the problem is.
	apply func(e *editor) target
	// dataCsum runs both checkers with data checksum verification.
	dataCsum bool
	// progsBlind: btrfs check 6.2 does not look at this (our check does).
	progsBlind string
}

var le64 = binary.LittleEndian

// Predicates for finding items of the base image.
func isInode(mode uint32, pred func(d []byte) bool) func(ondisk.Key, []byte) bool {
	return func(k ondisk.Key, d []byte) bool {
		return k.Type == ondisk.InodeItemKey && k.ObjectID > ondisk.FirstFreeObjectID &&
			le64.Uint32(d[52:])&sIFMT == mode && (pred == nil || pred(d))
	}
}

func dataExtent(k ondisk.Key, d []byte) bool {
	return k.Type == ondisk.ExtentItemKey && le64.Uint64(d[16:])&item.ExtentFlagData != 0
}

func corruptions() []corruption {
	fs := ondisk.FSTreeObjectID
	return []corruption{
		{name: "tree/byte-flip", class: ClassTree, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFREG, nil))
			e.editBlock(f.leaf, false, func(b []byte) { b[len(b)/2] ^= 0x5a })
			return target{tree: fs, block: f.leaf}
		}},
		{name: "tree/dup-copy", class: ClassTree, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFREG, nil))
			b := e.readBlock(f.leaf)
			b[len(b)/2] ^= 0x5a
			copies, _, err := e.fi.Chunks.Map(f.leaf, uint64(len(b)))
			if err != nil || len(copies) < 2 {
				e.t.Fatalf("metadata is not DUP: %v", err)
			}
			if _, err := e.dev.WriteAt(b, int64(copies[0].Physical)); err != nil {
				e.t.Fatal(err)
			}
			return target{tree: fs, block: f.leaf}
		}},
		{name: "tree/transid", class: ClassTree, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFREG, nil))
			e.editBlock(f.leaf, true, func(b []byte) { le64.PutUint64(b[0x50:], le64.Uint64(b[0x50:])+1) })
			return target{tree: fs, block: f.leaf}
		}},
		{name: "tree/owner", class: ClassTree, apply: func(e *editor) target {
			f := e.find(ondisk.FSTreeObjectID, isInode(sIFREG, nil))
			e.editBlock(f.leaf, true, func(b []byte) { le64.PutUint64(b[0x58:], uint64(ondisk.CsumTreeObjectID)) })
			return target{tree: fs, block: f.leaf}
		}},
		{name: "tree/first-key", class: ClassTree, apply: func(e *editor) target {
			// the first item of a (non-root) leaf: an INODE_ITEM whose key
			// offset can change without breaking the order in the leaf
			f := e.find(fs, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.InodeItemKey && k.ObjectID > 257 })
			for f.slot != 0 {
				f = e.find(fs, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.InodeItemKey && k.ObjectID > f.key.ObjectID })
			}
			e.editBlock(f.leaf, true, func(b []byte) {
				k := f.key
				k.Offset = 1
				k.Encode(b[ondisk.HeaderSize:])
			})
			return target{tree: fs, block: f.leaf}
		}},
		{name: "extent/refs", class: ClassExtent, apply: func(e *editor) target {
			f := e.find(ondisk.ExtentTreeObjectID, dataExtent)
			e.editItem(f, func(d []byte) { le64.PutUint64(d, le64.Uint64(d)+1) })
			return target{tree: ondisk.ExtentTreeObjectID, key: &f.key}
		}},
		{name: "extent/backref-owner", class: ClassExtent, apply: func(e *editor) target {
			f := e.find(ondisk.ExtentTreeObjectID, func(k ondisk.Key, d []byte) bool {
				return dataExtent(k, d) && len(d) >= 24+29 && d[24] == byte(ondisk.ExtentDataRefKey)
			})
			// the inline EXTENT_DATA_REF's inode number
			e.editItem(f, func(d []byte) { le64.PutUint64(d[24+1+8:], le64.Uint64(d[24+1+8:])+1) })
			return target{tree: ondisk.ExtentTreeObjectID, key: &f.key}
		}},
		{name: "block-group/used", class: ClassBlockGroup, apply: func(e *editor) target {
			f := e.find(ondisk.ExtentTreeObjectID, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.BlockGroupItemKey && le64.Uint64(d) > 0
			})
			e.editItem(f, func(d []byte) { le64.PutUint64(d, le64.Uint64(d)+4096) })
			return target{tree: ondisk.ExtentTreeObjectID, key: &f.key}
		}},
		{name: "super/bytes-used", class: ClassSuper, apply: func(e *editor) target {
			e.editSuper(func(sb *ondisk.Superblock) { sb.BytesUsed += 4096 })
			return target{}
		}},
		{name: "super/backup-root", class: ClassSuper, progsBlind: "btrfs check 6.2 does not compare backup roots", apply: func(e *editor) target {
			e.editSuper(func(sb *ondisk.Superblock) {
				for i := range sb.BackupRoots {
					if b := &sb.BackupRoots[i]; b.TreeRootGen == uint64(sb.Generation) {
						b.FSRoot += uint64(sb.NodeSize)
					}
				}
			})
			return target{}
		}},
		{name: "free-space/delete-extent", class: ClassFreeSpace, apply: func(e *editor) target {
			var info ondisk.Key
			f := e.find(ondisk.FreeSpaceTreeObjectID, func(k ondisk.Key, d []byte) bool {
				if k.Type == ondisk.FreeSpaceInfoKey {
					info = k
				}
				return k.Type == ondisk.FreeSpaceExtentKey && info.ObjectID >= 13<<20 // a real block group
			})
			e.editBlock(f.leaf, true, func(b []byte) {
				// drop the item: FREE_SPACE_EXTENT items have no data, so
				// only the later headers move
				n := le64.Uint32(b[0x60:])
				p := ondisk.HeaderSize + f.slot*ondisk.ItemHeaderSize
				copy(b[p:], b[p+ondisk.ItemHeaderSize:ondisk.HeaderSize+int(n)*ondisk.ItemHeaderSize])
				le64.PutUint32(b[0x60:], n-1)
			})
			return target{tree: ondisk.FreeSpaceTreeObjectID, key: &info}
		}},
		{name: "free-space/extent-count", class: ClassFreeSpace, apply: func(e *editor) target {
			f := e.find(ondisk.FreeSpaceTreeObjectID, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.FreeSpaceInfoKey && k.ObjectID >= 13<<20
			})
			e.editItem(f, func(d []byte) { le64.PutUint32(d, le64.Uint32(d)+1) })
			return target{tree: ondisk.FreeSpaceTreeObjectID, key: &f.key}
		}},
		{name: "chunk/dev-item-bytes-used", class: ClassChunk, apply: func(e *editor) target {
			f := e.find(ondisk.ChunkTreeObjectID, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.DevItemKey })
			e.editItem(f, func(d []byte) { le64.PutUint64(d[16:], le64.Uint64(d[16:])+1<<20) })
			return target{tree: ondisk.ChunkTreeObjectID, key: &f.key}
		}},
		{name: "chunk/dev-extent-chunk-offset", class: ClassChunk, apply: func(e *editor) target {
			f := e.find(ondisk.DevTreeObjectID, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.DevExtentKey })
			e.editItem(f, func(d []byte) { le64.PutUint64(d[16:], le64.Uint64(d[16:])+1<<20) })
			return target{tree: ondisk.DevTreeObjectID, key: &f.key}
		}},
		{name: "inode/nlink", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFREG, func(d []byte) bool { return le64.Uint32(d[40:]) == 1 }))
			e.editItem(f, func(d []byte) { le64.PutUint32(d[40:], 2) })
			return target{tree: fs, key: &f.key}
		}},
		{name: "inode/nlink-zero", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFREG, func(d []byte) bool { return le64.Uint32(d[40:]) == 1 }))
			e.editItem(f, func(d []byte) { le64.PutUint32(d[40:], 0) })
			return target{tree: fs, key: &f.key}
		}},
		{name: "inode/nbytes", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFREG, func(d []byte) bool { return le64.Uint64(d[24:]) > 0 }))
			e.editItem(f, func(d []byte) { le64.PutUint64(d[24:], le64.Uint64(d[24:])+4096) })
			return target{tree: fs, key: &f.key}
		}},
		{name: "inode/dir-isize", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, isInode(sIFDIR, nil))
			e.editItem(f, func(d []byte) { le64.PutUint64(d[16:], le64.Uint64(d[16:])+2) })
			return target{tree: fs, key: &f.key}
		}},
		{name: "inode/dir-index-type", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.DirIndexKey && d[29] == item.FTRegFile })
			e.editItem(f, func(d []byte) { d[29] = item.FTSymlink })
			return target{tree: fs, key: &f.key}
		}},
		{name: "inode/dir-item-type", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.DirItemKey && d[29] == item.FTDir })
			e.editItem(f, func(d []byte) { d[29] = item.FTRegFile })
			return target{tree: fs, key: &f.key}
		}},
		{name: "inode/file-extent-num-bytes", class: ClassInode, apply: func(e *editor) target {
			f := e.find(fs, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.ExtentDataKey && len(d) == item.FileExtentItemSize && d[20] == item.FileExtentReg &&
					le64.Uint64(d[21:]) != 0
			})
			e.editItem(f, func(d []byte) { le64.PutUint64(d[45:], le64.Uint64(d[45:])+4096) })
			return target{tree: fs, key: &f.key}
		}},
		// the kernel's tree-checker (check_dir_item) refuses the whole leaf,
		// and so does our reader: a tree problem at the item's key
		{name: "inode/xattr-type", class: ClassTree, progsBlind: "btrfs check 6.2 ignores xattr item types", apply: func(e *editor) target {
			f := e.find(fs, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.XattrItemKey })
			e.editItem(f, func(d []byte) { d[29] = item.FTRegFile })
			// the problem is the leaf's (keyed by its parent's pointer) and
			// its message names the rejected item
			return target{tree: fs, block: f.leaf, msgKey: &f.key}
		}},
		{name: "free-space/no-block-group", class: ClassFreeSpace, apply: func(e *editor) target {
			// btrfs-progs fsck-tests/058 (first image): an entry far beyond
			// every block group
			k := ondisk.Key{ObjectID: 123123123451234123 &^ 4095, Type: ondisk.FreeSpaceInfoKey, Offset: 8 << 20}
			e.insertItem(ondisk.FreeSpaceTreeObjectID, k, make([]byte, 8))
			return target{tree: ondisk.FreeSpaceTreeObjectID, key: &k}
		}},
		{name: "free-space/stale-not-free", class: ClassFreeSpace, progsBlind: "btrfs check 6.2 only notices entries past the last block group", apply: func(e *editor) target {
			// the entry mkfs.btrfs 6.2 leaves for its deleted temporary
			// metadata chunk, minus its free extent record: no longer the
			// harmless all-free leftover, a block group that does not exist
			// whose space is in use
			var info ondisk.Key
			e.delete(ondisk.FreeSpaceTreeObjectID, func(k ondisk.Key, d []byte) bool {
				if k.Type == ondisk.FreeSpaceInfoKey {
					info = k
				}
				return k.Type == ondisk.FreeSpaceExtentKey && k.ObjectID == info.ObjectID && k.ObjectID > 1<<20 &&
					uint64(k.ObjectID)+k.Offset <= 13<<20
			})
			return target{tree: ondisk.FreeSpaceTreeObjectID, key: &info}
		}},
		{name: "inode/ino-cache", class: ClassInode, progsBlind: "btrfs check 6.2 ignores the deprecated inode cache", apply: func(e *editor) target {
			// btrfs-progs fsck-tests/064: FREE_INO items in a subvolume tree
			f := e.find(fs, isInode(sIFREG, nil))
			k := ondisk.Key{ObjectID: ondisk.FreeInoObjectID, Type: ondisk.InodeItemKey}
			e.insertItem(fs, k, f.data)
			return target{tree: fs, key: &k}
		}},
		{name: "csum/data", class: ClassCsum, dataCsum: true, apply: func(e *editor) target {
			f := e.find(ondisk.CsumTreeObjectID, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.ExtentCsumKey })
			e.editItem(f, func(d []byte) { d[0] ^= 0xff })
			return target{tree: ondisk.CsumTreeObjectID, key: &f.key}
		}},
	}
}

// TestCorruption damages a mkfs.btrfs image one way at a time and checks
// that our checker names the damaged tree and item, and that btrfs check
// --readonly also finds an error.
func TestCorruption(t *testing.T) {
	img0 := base(t)
	mustBeClean(t, img0, Options{})
	for _, cc := range corruptions() {
		t.Run(cc.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "img")
			copyImage(t, img0, img)
			e := openEditor(t, img)
			want := cc.apply(e)
			e.dev.Close()
			rep := ourCheck(t, img, Options{CheckDataCsum: cc.dataCsum})
			if rep.OK() {
				t.Fatalf("our check found nothing")
			}
			if !hasProblem(rep, cc.class, want) {
				t.Errorf("no %s problem at tree %s key %v block %d; got %s", cc.class, ondisk.TreeName(want.tree), want.key, want.block, describe(rep))
			}
			t.Logf("ours: %s", rep.Problems[0])
			var extra []string
			if cc.dataCsum {
				extra = append(extra, "--check-data-csum")
			}
			clean, out := progsCheck(t, img, extra...)
			switch {
			case cc.progsBlind != "" && clean:
				t.Logf("btrfs check finds it clean, as expected: %s", cc.progsBlind)
			case cc.progsBlind != "":
				t.Logf("btrfs check 6.2 was expected not to notice (%s), but it did:\n%s", cc.progsBlind, out)
			case clean:
				t.Errorf("btrfs check --readonly found no error:\n%s", out)
			}
		})
	}
}

func hasProblem(rep *Report, cl Class, want target) bool {
	for _, p := range rep.Find(cl, want.tree, want.key) {
		if want.msgKey != nil && !strings.Contains(p.Msg, fmt.Sprint(*want.msgKey)) {
			continue
		}
		if want.block == 0 || p.Block == want.block {
			return true
		}
	}
	return false
}
