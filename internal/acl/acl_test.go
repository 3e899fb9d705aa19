package acl

import (
	"bytes"
	"encoding/hex"
	"errors"
	"syscall"
	"testing"
)

// mustParseText builds an ACL from the short text form (String's).
func mustParseText(t testing.TB, s string) ACL {
	t.Helper()
	var a ACL
	for _, f := range bytes.Split([]byte(s), []byte(",")) {
		p := bytes.Split(f, []byte(":"))
		if len(p) != 3 || len(p[2]) != 3 {
			t.Fatalf("bad entry %q", f)
		}
		e := Entry{ID: UndefinedID}
		for i, c := range "rwx" {
			if p[2][i] == byte(c) {
				e.Perm |= 4 >> i
			}
		}
		named := len(p[1]) > 0
		if named {
			var id uint32
			for _, d := range p[1] {
				id = id*10 + uint32(d-'0')
			}
			e.ID = id
		}
		switch string(p[0]) {
		case "u":
			e.Tag = UserObj
			if named {
				e.Tag = User
			}
		case "g":
			e.Tag = GroupObj
			if named {
				e.Tag = Group
			}
		case "m":
			e.Tag = Mask
		case "o":
			e.Tag = Other
		default:
			t.Fatalf("bad tag in %q", f)
		}
		a = append(a, e)
	}
	return a
}

// What setfacl -m u::rw,u:1000:r,g::r,m::r,o::- hands the kernel, as the
// kernel stores it on btrfs (posix_acl_to_xattr).
const kernelBytes = "02000000" + "0100" + "0600" + "ffffffff" + "0200" + "0400" + "e8030000" +
	"0400" + "0400" + "ffffffff" + "1000" + "0400" + "ffffffff" + "2000" + "0000" + "ffffffff"

func TestFormat(t *testing.T) {
	b, _ := hex.DecodeString(kernelBytes)
	a, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.String(), "u::rw-,u:1000:r--,g::r--,m::r--,o::---"; got != want {
		t.Fatalf("parsed %s, want %s", got, want)
	}
	if err := a.Valid(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b) {
		t.Fatalf("Bytes:\n%x\nwant\n%x", a.Bytes(), b)
	}
}

func TestParseErrors(t *testing.T) {
	b, _ := hex.DecodeString(kernelBytes)
	bad := func(b []byte) []byte { return b }
	wrongVersion := append([]byte(nil), b...)
	wrongVersion[0] = 1
	badTag := append([]byte(nil), b...)
	badTag[4] = 0x40
	undefUser := append([]byte(nil), b...)
	copy(undefUser[16:20], []byte{0xff, 0xff, 0xff, 0xff})
	for _, c := range []struct {
		name string
		in   []byte
		want syscall.Errno
	}{
		{"empty", nil, syscall.EINVAL},
		{"short header", b[:3], syscall.EINVAL},
		{"partial entry", b[:len(b)-1], syscall.EINVAL},
		{"version", wrongVersion, syscall.EOPNOTSUPP},
		{"tag", badTag, syscall.EINVAL},
		{"undefined user id", undefUser, syscall.EINVAL},
	} {
		_, err := Parse(bad(c.in))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	a, err := Parse(b[:4])
	if err != nil || a != nil {
		t.Errorf("bare header: %v %v, want no ACL and no error", a, err)
	}
}

func TestValid(t *testing.T) {
	for _, c := range []struct {
		acl string
		ok  bool
	}{
		{"u::rw-,g::r--,o::r--", true},
		{"u::rw-,u:5:r--,g::r--,m::r--,o::---", true},
		{"u::rw-,g::r--,g:7:rwx,m::rwx,o::---", true},
		{"u::rw-,g::r--,m::r--,o::---", true},   // a mask with no named entry is fine
		{"u::rw-,u:5:r--,g::r--,o::---", false}, // named entry without mask
		{"g::r--,u::rw-,o::r--", false},         // out of order
		{"u::rw-,g::r--", false},                // no other
		{"u::rw-,u::rw-,g::r--,o::r--", false},  // two owners
		{"u::rw-,g::r--,o::r--,o::r--", false},  // two others
		{"u::rw-,g::r--,m::r--,m::r--,o::r--", false},
	} {
		err := mustParseText(t, c.acl).Valid()
		if (err == nil) != c.ok {
			t.Errorf("%s: Valid = %v, want ok=%v", c.acl, err, c.ok)
		}
	}
	a := mustParseText(t, "u::rw-,g::r--,o::r--")
	a[0].Perm = 8
	if err := a.Valid(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("perm 8: %v", err)
	}
}

func TestEquivMode(t *testing.T) {
	for _, c := range []struct {
		acl   string
		mode  uint32
		want  uint32
		equiv bool
	}{
		{"u::rw-,g::r--,o::r--", 0o100600, 0o100644, true},
		{"u::rwx,g::r-x,o::r-x", 0o42700, 0o42755, true},
		{"u::rw-,u:5:rwx,g::r--,m::rw-,o::---", 0o100644, 0o100660, false},
		{"u::---,g::---,o::---", 0o100777, 0o100000, true},
	} {
		m, eq, err := mustParseText(t, c.acl).EquivMode(c.mode)
		if err != nil || m != c.want || eq != c.equiv {
			t.Errorf("%s on %o: %o %v %v, want %o %v", c.acl, c.mode, m, eq, err, c.want, c.equiv)
		}
	}
}

func TestUpdateMode(t *testing.T) {
	a := mustParseText(t, "u::rw-,g::r--,o::r--")
	m, st, err := UpdateMode(a, 0o102600, false)
	if err != nil || m != 0o102644 || st != nil {
		t.Errorf("equivalent: %o %v %v, want 102644, nothing stored", m, st, err)
	}
	m, _, _ = UpdateMode(a, 0o102600, true)
	if m != 0o100644 {
		t.Errorf("kill sgid: %o, want 100644", m)
	}
	b := mustParseText(t, "u::rwx,u:9:r--,g::r-x,m::r-x,o::---")
	m, st, _ = UpdateMode(b, 0o040700, false)
	if m != 0o040750 || st.String() != b.String() {
		t.Errorf("not equivalent: %o %v", m, st)
	}
}

func TestChmod(t *testing.T) {
	a := mustParseText(t, "u::rw-,u:9:rwx,g::r--,m::rwx,o::r--")
	c, err := a.Chmod(0o640)
	if err != nil || c.String() != "u::rw-,u:9:rwx,g::r--,m::r--,o::---" {
		t.Errorf("with mask: %v %v", c, err)
	}
	if a.String() != "u::rw-,u:9:rwx,g::r--,m::rwx,o::r--" {
		t.Errorf("Chmod changed its receiver: %v", a)
	}
	c, _ = mustParseText(t, "u::rw-,g::r--,o::r--").Chmod(0o751)
	if c.String() != "u::rwx,g::r-x,o::--x" {
		t.Errorf("without mask: %v", c)
	}
}

func TestInherit(t *testing.T) {
	def := mustParseText(t, "u::rwx,u:9:r-x,g::r-x,m::rwx,o::---")
	// A file created 0666: the mask keeps what the mode grants the group.
	m, acc, dflt, err := Inherit(def, 0o100666)
	if err != nil || m != 0o100660 || dflt != nil || acc.String() != "u::rw-,u:9:r-x,g::r-x,m::rw-,o::---" {
		t.Errorf("file: %o %v %v %v", m, acc, dflt, err)
	}
	// A directory keeps the default ACL as its own.
	m, acc, dflt, _ = Inherit(def, 0o042777)
	if m != 0o042770 || dflt.String() != def.String() || acc.String() != "u::rwx,u:9:r-x,g::r-x,m::rwx,o::---" {
		t.Errorf("dir: %o %v %v", m, acc, dflt)
	}
	// A default ACL of mode bits only: no access ACL stored, the mode masked.
	m, acc, _, _ = Inherit(mustParseText(t, "u::rwx,g::rwx,o::rwx"), 0o100666)
	if m != 0o100666 || acc != nil {
		t.Errorf("minimal: %o %v", m, acc)
	}
	m, acc, _, _ = Inherit(mustParseText(t, "u::rwx,g::r-x,o::---"), 0o100666)
	if m != 0o100640 || acc != nil {
		t.Errorf("minimal masking: %o %v", m, acc)
	}
	// No default ACL, or a symlink: nothing changes (the umask is the caller's).
	if m, acc, dflt, _ = Inherit(nil, 0o100666); m != 0o100666 || acc != nil || dflt != nil {
		t.Errorf("none: %o", m)
	}
	if m, acc, _, _ = Inherit(def, 0o120777); m != 0o120777 || acc != nil {
		t.Errorf("symlink: %o", m)
	}
}

func TestCheckSet(t *testing.T) {
	a := mustParseText(t, "u::rw-,g::r--,o::r--")
	if _, err := CheckSet(DefaultXattr, a, 0o100644); !errors.Is(err, syscall.EACCES) {
		t.Errorf("default on a file: %v, want EACCES", err)
	}
	if ok, err := CheckSet(DefaultXattr, nil, 0o100644); ok || err != nil {
		t.Errorf("removing a default ACL of a file: %v %v, want a no-op", ok, err)
	}
	if ok, err := CheckSet(DefaultXattr, a, 0o040755); !ok || err != nil {
		t.Errorf("default on a dir: %v %v", ok, err)
	}
	if _, err := CheckSet(AccessXattr, mustParseText(t, "u::rw-,u:3:r--,g::r--,o::r--"), 0o100644); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("invalid: %v", err)
	}
}

// FuzzParse: Parse never panics; what it accepts encodes back to the same
// bytes (ids of unnamed entries aside) and the rules run on it without
// panicking.
func FuzzParse(f *testing.F) {
	b, _ := hex.DecodeString(kernelBytes)
	f.Add(b)
	f.Add(b[:4])
	f.Add(FromMode(0o754).Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := Parse(in)
		if err != nil || a == nil {
			return
		}
		again, err := Parse(a.Bytes())
		if err != nil || again.String() != a.String() {
			t.Fatalf("round trip: %v -> %v (%v)", a, again, err)
		}
		a.EquivMode(0o100644)
		if a.Valid() == nil {
			for _, mode := range []uint32{0o100000, 0o100666, 0o040777, 0o102755} {
				if _, _, _, err := Inherit(a, mode); err != nil {
					t.Fatalf("Inherit of valid %v: %v", a, err)
				}
				if _, err := a.Chmod(mode); err != nil {
					t.Fatalf("Chmod of valid %v: %v", a, err)
				}
			}
		}
	})
}
