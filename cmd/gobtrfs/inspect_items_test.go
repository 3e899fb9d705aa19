package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
)

// codec decodes an item and re-encodes it; exact says whether the encoding
// must reproduce the bytes (false where the decoder drops reserved fields).
type codec struct {
	exact bool
	run   func(k ondisk.Key, b []byte) ([]byte, error)
}

func lossless[T any](decode func([]byte) (T, error), encode func(*T) []byte) codec {
	return codec{true, func(_ ondisk.Key, b []byte) ([]byte, error) {
		x, err := decode(b)
		if err != nil {
			return nil, err
		}
		return encode(&x), nil
	}}
}

func decodeOnly[T any](decode func([]byte) (T, error)) codec {
	return codec{false, func(_ ondisk.Key, b []byte) ([]byte, error) {
		_, err := decode(b)
		return nil, err
	}}
}

// hashed checks that each entry's hash is the key offset.
func dirItemsHashed(k ondisk.Key, b []byte) ([]byte, error) {
	ds, err := item.DecodeDirItems(b)
	if err != nil {
		return nil, err
	}
	if k.Type != ondisk.DirIndexKey {
		for _, d := range ds {
			if h := item.NameHash(d.Name); h != k.Offset {
				return nil, fmt.Errorf("name %q hashes to %d, key offset %d", d.Name, h, k.Offset)
			}
		}
	} else if len(ds) != 1 {
		return nil, fmt.Errorf("DIR_INDEX with %d entries", len(ds))
	}
	return ds.Bytes(), nil
}

var itemCodecs = map[ondisk.ItemType]codec{
	ondisk.InodeItemKey: decodeOnly(item.DecodeInodeItem),
	ondisk.InodeRefKey:  lossless(item.DecodeInodeRefs, func(x *item.InodeRefs) []byte { return x.Bytes() }),
	ondisk.InodeExtrefKey: {true, func(k ondisk.Key, b []byte) ([]byte, error) {
		rs, err := item.DecodeInodeExtrefs(b)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if h := item.ExtrefHash(r.Parent, r.Name); h != k.Offset {
				return nil, fmt.Errorf("extref %q hashes to %d, key offset %d", r.Name, h, k.Offset)
			}
		}
		return rs.Bytes(), nil
	}},
	ondisk.DirItemKey:      {true, dirItemsHashed},
	ondisk.DirIndexKey:     {true, dirItemsHashed},
	ondisk.XattrItemKey:    {true, dirItemsHashed},
	ondisk.ExtentDataKey:   lossless(item.DecodeFileExtentItem, (*item.FileExtentItem).Bytes),
	ondisk.ExtentCsumKey:   lossless(item.DecodeExtentCsum, (*item.ExtentCsum).Bytes),
	ondisk.RootItemKey:     decodeOnly(item.DecodeRootItem),
	ondisk.RootRefKey:      lossless(item.DecodeRootRef, (*item.RootRef).Bytes),
	ondisk.RootBackrefKey:  lossless(item.DecodeRootRef, (*item.RootRef).Bytes),
	ondisk.ExtentItemKey:   lossless(item.DecodeExtentItem, (*item.ExtentItem).Bytes),
	ondisk.MetadataItemKey: lossless(item.DecodeMetadataItem, (*item.MetadataItem).Bytes),
	ondisk.TreeBlockRefKey: lossless(item.DecodeTreeBlockRef, func(x *item.TreeBlockRef) []byte { return x.Bytes() }),
	ondisk.SharedBlockRefKey: lossless(item.DecodeSharedBlockRef,
		func(x *item.SharedBlockRef) []byte { return x.Bytes() }),
	ondisk.ExtentDataRefKey: {true, func(k ondisk.Key, b []byte) ([]byte, error) {
		r, err := item.DecodeExtentDataRef(b)
		if err != nil {
			return nil, err
		}
		if r.Hash() != k.Offset {
			return nil, fmt.Errorf("extent data ref %+v hashes to %d, key offset %d", r, r.Hash(), k.Offset)
		}
		return r.Bytes(), nil
	}},
	ondisk.SharedDataRefKey:   lossless(item.DecodeSharedDataRef, (*item.SharedDataRef).Bytes),
	ondisk.BlockGroupItemKey:  lossless(item.DecodeBlockGroupItem, (*item.BlockGroupItem).Bytes),
	ondisk.FreeSpaceInfoKey:   lossless(item.DecodeFreeSpaceInfo, (*item.FreeSpaceInfo).Bytes),
	ondisk.FreeSpaceBitmapKey: lossless(item.DecodeFreeSpaceBitmap, (*item.FreeSpaceBitmap).Bytes),
	ondisk.DevExtentKey:       lossless(item.DecodeDevExtent, (*item.DevExtent).Bytes),
	ondisk.DevItemKey:         lossless(item.DecodeDevItem, item.DevItemBytes),
	ondisk.ChunkItemKey:       lossless(item.DecodeChunkItem, item.ChunkItemBytes),
	ondisk.QgroupStatusKey:    lossless(item.DecodeQgroupStatus, (*item.QgroupStatus).Bytes),
	ondisk.QgroupInfoKey:      lossless(item.DecodeQgroupInfo, (*item.QgroupInfo).Bytes),
	ondisk.QgroupLimitKey:     lossless(item.DecodeQgroupLimit, (*item.QgroupLimit).Bytes),
	ondisk.QgroupRelationKey: lossless(item.DecodeQgroupRelation,
		func(x *item.QgroupRelation) []byte { return x.Bytes() }),
	ondisk.UUIDKeySubvol:         lossless(item.DecodeUUIDItem, (*item.UUIDItem).Bytes),
	ondisk.UUIDKeyReceivedSubvol: lossless(item.DecodeUUIDItem, (*item.UUIDItem).Bytes),
	ondisk.PersistentItemKey:     lossless(item.DecodeDevStats, (*item.DevStats).Bytes),
	ondisk.DevReplaceKey:         lossless(item.DecodeDevReplace, (*item.DevReplace).Bytes),
	ondisk.TemporaryItemKey:      decodeOnly(item.DecodeBalanceItem),
	ondisk.OrphanItemKey:         lossless(item.DecodeOrphanItem, func(x *item.OrphanItem) []byte { return x.Bytes() }),
	ondisk.DirLogItemKey:         lossless(item.DecodeDirLogItem, (*item.DirLogItem).Bytes),
	ondisk.DirLogIndexKey:        lossless(item.DecodeDirLogItem, (*item.DirLogItem).Bytes),
	ondisk.StringItemKey:         lossless(item.DecodeStringItem, (*item.StringItem).Bytes),
}

// decodeAllItems decodes every item of every tree of img with the item
// package, checks name and ref hashes against key offsets, and requires
// encode(decode(b)) == b for the types that keep every byte.
func decodeAllItems(t *testing.T, img string) {
	t.Helper()
	fs := testimg.OpenFS(t, img)
	trees := []*ctree.Tree{fs.RootTree, fs.ChunkTree()}
	fs.RootTree.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, data []byte) bool {
		if k.Type == ondisk.RootItemKey {
			if tr, err := fs.Tree(k.ObjectID); err == nil {
				trees = append(trees, tr)
			}
		}
		return true
	})
	n, bad := 0, 0
	for _, tr := range trees {
		err := tr.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, data []byte) bool {
			c, ok := itemCodecs[k.Type]
			if k.Type == ondisk.TemporaryItemKey && k.ObjectID != ondisk.BalanceObjectID ||
				k.Type == ondisk.PersistentItemKey && k.ObjectID != ondisk.DevStatsObjectID {
				ok = false
			}
			if k.Type == 0 && k.ObjectID == ondisk.FreeSpaceObjectID {
				c, ok = lossless(item.DecodeFreeSpaceHeader, (*item.FreeSpaceHeader).Bytes), true
			}
			if !ok {
				return true
			}
			n++
			enc, err := c.run(k, data)
			if err == nil && c.exact && !bytes.Equal(enc, data) {
				err = fmt.Errorf("re-encoded item differs:\n  disk % x\n  ours % x", data, enc)
			}
			if err != nil {
				bad++
				if bad <= 10 {
					t.Errorf("tree %s item %v: %v", ondisk.TreeName(tr.ID), k, err)
				}
			}
			return true
		})
		if err != nil {
			t.Errorf("tree %s: %v", ondisk.TreeName(tr.ID), err)
		}
	}
	t.Logf("decoded %d items of %d trees, %d bad", n, len(trees), bad)
}
