package gobtrfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/acl"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// aclOf builds an ACL from entries given as tag, perm, id triples.
func aclOf(es ...uint32) acl.ACL {
	var a acl.ACL
	for i := 0; i+2 < len(es); i += 3 {
		a = append(a, acl.Entry{Tag: acl.Tag(es[i]), Perm: uint16(es[i+1]), ID: es[i+2]})
	}
	return a
}

const noID = acl.UndefinedID

// TestRWACL: the library's Setxattr, Chmod and creates follow the kernel's
// ACL rules (fs/posix_acl.c, fs/btrfs/acl.c), and the kernel reads back
// what we stored.
func TestRWACL(t *testing.T) {
	img := filepath.Join(t.TempDir(), "acl.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wantErr := func(what string, err error, want syscall.Errno) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	U, UO, G, GO, M, O := uint32(acl.User), uint32(acl.UserObj), uint32(acl.Group), uint32(acl.GroupObj), uint32(acl.Mask), uint32(acl.Other)

	// A mode-equivalent access ACL (what cp -a sets) only sets the mode.
	must(w.WriteFile("/equiv", []byte("x"), 0o600))
	must(w.Setxattr("/equiv", acl.AccessXattr, acl.FromMode(0o644).Bytes(), 0))
	// An ACL with a named user is stored; the group bits become the mask.
	named := aclOf(UO, 6, noID, U, 6, 65534, GO, 4, noID, M, 6, noID, O, 4, noID)
	must(w.WriteFile("/named", []byte("x"), 0o600))
	must(w.Setxattr("/named", acl.AccessXattr, named.Bytes(), 0))
	// chmod rewrites owner, mask and other; the library keeps S_ISGID (it
	// acts as root, with CAP_FSETID).
	must(w.WriteFile("/chmod", []byte("x"), 0o644))
	must(w.Setxattr("/chmod", acl.AccessXattr, named.Bytes(), 0))
	must(w.Chmod("/chmod", 0o604|fs.ModeSetgid))
	// An equivalent ACL on a set-group-ID file keeps the bit too.
	must(w.WriteFile("/sgid", []byte("x"), 0o600))
	must(w.Chmod("/sgid", 0o700|fs.ModeSetgid))
	must(w.Setxattr("/sgid", acl.AccessXattr, acl.FromMode(0o750).Bytes(), 0))
	// Removing an ACL leaves the mode; removing an absent one is no error.
	must(w.WriteFile("/removed", []byte("x"), 0o644))
	must(w.Setxattr("/removed", acl.AccessXattr, named.Bytes(), 0))
	must(w.Removexattr("/removed", acl.AccessXattr))
	must(w.Removexattr("/removed", acl.AccessXattr))
	// A bare header removes the ACL as well.
	must(w.WriteFile("/bare", []byte("x"), 0o644))
	must(w.Setxattr("/bare", acl.AccessXattr, named.Bytes(), 0))
	must(w.Setxattr("/bare", acl.AccessXattr, acl.ACL{}.Bytes(), 0))

	// Default ACLs are inherited: files take it as their access ACL, the
	// mode masked by it; directories take both; symlinks nothing.
	def := aclOf(UO, 7, noID, U, 5, 65534, GO, 5, noID, G, 7, 1000, M, 7, noID, O, 0, noID)
	must(w.Mkdir("/d", 0o755))
	must(w.Setxattr("/d", acl.DefaultXattr, def.Bytes(), 0))
	must(w.WriteFile("/d/f", []byte("x"), 0o666))
	must(w.Mkdir("/d/sub", 0o777))
	must(w.WriteFile("/d/sub/g", []byte("x"), 0o640))
	must(w.Symlink("f", "/d/link"))
	minimal := aclOf(UO, 7, noID, GO, 5, noID, O, 4, noID)
	must(w.Mkdir("/m", 0o755))
	must(w.Setxattr("/m", acl.DefaultXattr, minimal.Bytes(), 0))
	must(w.WriteFile("/m/f", []byte("x"), 0o666))

	// What the kernel refuses.
	wantErr("default ACL on a file", w.Setxattr("/equiv", acl.DefaultXattr, minimal.Bytes(), 0), syscall.EACCES)
	wantErr("named entry without mask", w.Setxattr("/equiv", acl.AccessXattr,
		aclOf(UO, 6, noID, U, 4, 7, GO, 4, noID, O, 4, noID).Bytes(), 0), syscall.EINVAL)
	wantErr("version 1", w.Setxattr("/equiv", acl.AccessXattr, []byte{1, 0, 0, 0}, 0), syscall.EOPNOTSUPP)
	wantErr("torn entry", w.Setxattr("/equiv", acl.AccessXattr, minimal.Bytes()[:10], 0), syscall.EINVAL)
	wantErr("ACL on a symlink", w.Setxattr("/d/link", acl.AccessXattr, minimal.Bytes(), 0), syscall.EOPNOTSUPP)
	must(w.Close())
	checktest.Image(t, img)

	type want struct {
		mode         uint32
		access, dflt acl.ACL
	}
	expect := map[string]want{
		"equiv":   {mode: 0o100644},
		"named":   {mode: 0o100664, access: named},
		"chmod":   {mode: 0o102604, access: aclOf(UO, 6, noID, U, 6, 65534, GO, 4, noID, M, 0, noID, O, 4, noID)},
		"sgid":    {mode: 0o102750},
		"removed": {mode: 0o100664},
		"bare":    {mode: 0o100664},
		"d":       {mode: 0o040755, dflt: def},
		"d/f":     {mode: 0o100660, access: aclOf(UO, 6, noID, U, 5, 65534, GO, 5, noID, G, 7, 1000, M, 6, noID, O, 0, noID)},
		"d/sub":   {mode: 0o040770, access: aclOf(UO, 7, noID, U, 5, 65534, GO, 5, noID, G, 7, 1000, M, 7, noID, O, 0, noID), dflt: def},
		"d/sub/g": {mode: 0o100640, access: aclOf(UO, 6, noID, U, 5, 65534, GO, 5, noID, G, 7, 1000, M, 4, noID, O, 0, noID)},
		"m":       {mode: 0o040755, dflt: minimal},
		"m/f":     {mode: 0o100644},
	}
	r, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for name, e := range expect {
		fi, err := r.Lstat(name)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Sys().(*gobtrfs.Stat).Mode; m != e.mode {
			t.Errorf("%s: mode %o, want %o", name, m, e.mode)
		}
		for _, x := range []struct {
			name string
			want acl.ACL
		}{{acl.AccessXattr, e.access}, {acl.DefaultXattr, e.dflt}} {
			v, err := r.GetXattr(name, x.name)
			if x.want == nil {
				if err == nil {
					t.Errorf("%s: %s stored (%x), want none", name, x.name, v)
				}
				continue
			}
			if err != nil || !bytes.Equal(v, x.want.Bytes()) {
				t.Errorf("%s: %s = %x (%v), want %s", name, x.name, v, err, x.want)
			}
		}
	}
	if v, err := r.GetXattr("d/link", acl.AccessXattr); err == nil {
		t.Errorf("symlink took an ACL: %x", v)
	}

	if !testutil.HaveRootLoop() {
		t.Log("kernel comparison skipped: needs root with loop devices")
		return
	}
	// The kernel parses what we stored and shows the same.
	mnt := testutil.LoopMount(t, img, "ro")
	defer testutil.Unmount(t, mnt)
	for name, e := range expect {
		p := filepath.Join(mnt, name)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil || st.Mode != e.mode {
			t.Errorf("kernel: %s mode %o (%v), want %o", name, st.Mode, err, e.mode)
		}
		for _, x := range []struct {
			name string
			want acl.ACL
		}{{acl.AccessXattr, e.access}, {acl.DefaultXattr, e.dflt}} {
			buf := make([]byte, 4096)
			n, err := unix.Lgetxattr(p, x.name, buf)
			if x.want == nil {
				if !errors.Is(err, unix.ENODATA) {
					t.Errorf("kernel: %s %s: %v, want ENODATA", name, x.name, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(buf[:max(n, 0)], x.want.Bytes()) {
				t.Errorf("kernel: %s %s = %x (%v), want %s", name, x.name, buf[:max(n, 0)], err, x.want)
			}
		}
	}
}
