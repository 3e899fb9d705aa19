package treelog_test

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/acl"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func TestRedteamBatch4(t *testing.T) {
	def := acl.ACL{{Tag: acl.UserObj, Perm: 7, ID: acl.UndefinedID}, {Tag: acl.User, Perm: 5, ID: 1000},
		{Tag: acl.GroupObj, Perm: 5, ID: acl.UndefinedID}, {Tag: acl.Mask, Perm: 5, ID: acl.UndefinedID},
		{Tag: acl.Other, Perm: 0, ID: acl.UndefinedID}}
	runRT(t, []rtCase{
		{"default-acl-inherit", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.SetXattr(d, acl.DefaultXattr, def.Bytes(), 0))
			n := create(t, f, d, "n", []byte("acl"))
			sub := mkdir(t, f, d, "sub")
			s := create(t, f, sub, "s", []byte("deep acl"))
			mustT(t, f.Fsync(n))
			mustT(t, f.Fsync(s))
			return nil
		}},
		{"acl-dir-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.SetXattr(d, acl.DefaultXattr, def.Bytes(), 0))
			mustT(t, f.SetXattr(a, acl.AccessXattr, def.Bytes(), 0))
			create(t, f, d, "n", []byte("acl"))
			mustT(t, f.Fsync(d))
			return nil
		}},
		{"new-subvol-then-file-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			_, err := f.CreateSubvolume(d, "nsv", 0o40755, 0, 0)
			mustT(t, err)
			write(t, f, a, 0, []byte("S"))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": fileDesc(0o644, 1, append([]byte("S"), original[1:]...))}
		}},
		{"new-subvol-then-dir-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			_, err := f.CreateSubvolume(d, "nsv", 0o40755, 0, 0)
			mustT(t, err)
			mustT(t, f.Fsync(d))
			return nil
		}},
		{"file-in-new-subvol", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			sv, err := f.CreateSubvolume(d, "nsv", 0o40755, 0, 0)
			mustT(t, err)
			x := create(t, f, ondisk.InodeRef{Root: sv, Ino: fsops.RootDirIno}, "x", []byte("x"))
			mustT(t, f.Fsync(x))
			return nil
		}},
		{"snapshot-then-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			svf := lookupPath(t, f, "sv/f")
			write(t, f, svf, 0, []byte("SNAP"))
			mustT(t, f.Fsync(svf))
			_, err := f.Snapshot(svf.Root, topDir, "snap", false)
			mustT(t, err)
			snapf := lookupPath(t, f, "snap/f")
			write(t, f, snapf, 0, []byte("snap"))
			mustT(t, f.Fsync(snapf))
			write(t, f, svf, 0, []byte("ORIG"))
			mustT(t, f.Fsync(svf))
			return nil
		}},
		{"exchange-dir-file-across-dirfsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d, e := lookupPath(t, f, "d"), lookupPath(t, f, "e")
			mustT(t, f.Rename(d, "a", e, "x", fsops.RenameExchange))
			mustT(t, f.Fsync(d))
			mustT(t, f.Fsync(e))
			return nil
		}},
		{"rename-dir-into-fsynced-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(topDir, "e", d, "e", 0))
			mustT(t, f.Fsync(d))
			return map[string]string{"e": "", "d/e/x": fileDesc(0o644, 1, nil)}
		}},
		{"mknod-fifo", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			p, err := f.Create(d, "fifo", 0o10644, 0, 0, 0)
			mustT(t, err)
			mustT(t, f.Fsync(p))
			return nil
		}},
	})
}
