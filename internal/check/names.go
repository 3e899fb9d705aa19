package check

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// inodeRef reads an INODE_REF item: the names of the current inode in
// directory key.offset.
func (ic *inodeChecker) inodeRef(k ondisk.Key, d []byte) {
	s := &ic.cur
	parent := k.Offset
	for p := 0; p < len(d); {
		if len(d)-p < item.InodeRefHeaderSize {
			ic.bad(k, "truncated INODE_REF entry at byte %d", p)
			return
		}
		index := le.Uint64(d[p:])
		nl := int(le.Uint16(d[p+8:]))
		p += item.InodeRefHeaderSize
		if nl > len(d)-p {
			ic.bad(k, "INODE_REF name of %d bytes overruns the item", nl)
			return
		}
		name := d[p : p+nl]
		p += nl
		if s.ino == ic.rootDir && parent == s.ino {
			if string(name) != ".." || index != 0 {
				ic.bad(k, "root directory's own INODE_REF is %q index %d, expected \"..\" index 0", name, index)
			}
			s.rootDotDot = true
			continue
		}
		ic.checkName(k, name)
		s.names++
		ic.addRef(k, parent, index, name)
	}
}

func (ic *inodeChecker) inodeExtref(k ondisk.Key, d []byte) {
	s := &ic.cur
	for p := 0; p < len(d); {
		if len(d)-p < item.InodeExtrefHeaderSize {
			ic.bad(k, "truncated INODE_EXTREF entry at byte %d", p)
			return
		}
		parent, index := le.Uint64(d[p:]), le.Uint64(d[p+8:])
		nl := int(le.Uint16(d[p+16:]))
		p += item.InodeExtrefHeaderSize
		if nl > len(d)-p {
			ic.bad(k, "INODE_EXTREF name of %d bytes overruns the item", nl)
			return
		}
		name := d[p : p+nl]
		p += nl
		if h := item.ExtrefHash(ondisk.ObjectID(parent), name); h != k.Offset {
			ic.bad(k, "INODE_EXTREF key offset is not the hash %d of parent %d name %q", h, parent, name)
		}
		ic.checkName(k, name)
		s.names++
		ic.addRef(k, parent, index, name)
	}
}

func (ic *inodeChecker) checkName(k ondisk.Key, name []byte) {
	if len(name) == 0 || len(name) > item.MaxNameLen {
		ic.bad(k, "name of %d bytes", len(name))
	}
}

// dirItem reads DIR_ITEM, DIR_INDEX and XATTR_ITEM items.
func (ic *inodeChecker) dirItem(k ondisk.Key, d []byte) {
	s := &ic.cur
	entries := 0
	for p := 0; p < len(d); entries++ {
		if len(d)-p < item.DirItemHeaderSize {
			ic.bad(k, "truncated dir item entry at byte %d", p)
			return
		}
		loc := ondisk.DecodeKey(d[p:])
		dataLen, nameLen := int(le.Uint16(d[p+25:])), int(le.Uint16(d[p+27:]))
		typ := d[p+29]
		p += item.DirItemHeaderSize
		if nameLen+dataLen > len(d)-p {
			ic.bad(k, "dir item name and data (%d+%d bytes) overrun the item", nameLen, dataLen)
			return
		}
		name := d[p : p+nameLen]
		p += nameLen + dataLen
		ic.checkName(k, name)
		if k.Type != ondisk.DirIndexKey {
			if h := item.NameHash(name); h != k.Offset {
				ic.bad(k, "name %q hashes to %d, not the key offset", name, h)
			}
		}
		if k.Type == ondisk.XattrItemKey {
			if typ != item.FTXattr {
				ic.bad(k, "xattr %q has type %d, expected %d (XATTR)", name, typ, item.FTXattr)
			}
			continue
		}
		s.dirEntries = true
		s.dirSize += uint64(nameLen)
		if typ == 0 || typ >= item.FTXattr {
			ic.bad(k, "dir entry %q has type %d", name, typ)
		}
		if dataLen != 0 {
			ic.bad(k, "dir entry %q carries %d bytes of data", name, dataLen)
		}
		if loc.Type != ondisk.InodeItemKey && loc.Type != ondisk.RootItemKey {
			ic.bad(k, "dir entry %q points to %v, neither an inode nor a subvolume", name, loc)
			continue
		}
		ic.addEntry(k, loc, typ, name)
	}
	if k.Type == ondisk.DirIndexKey && entries != 1 {
		ic.bad(k, "DIR_INDEX holds %d entries, expected 1", entries)
	}
}
