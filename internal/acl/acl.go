package acl

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// Xattr names of the two ACLs.
const (
	AccessXattr  = "system.posix_acl_access"
	DefaultXattr = "system.posix_acl_default"
)

// Tag is an entry's kind (ACL_USER_OBJ ...).
type Tag uint16

// Entry tags, in the order a valid ACL lists them.
const (
	UserObj  Tag = 0x01
	User     Tag = 0x02
	GroupObj Tag = 0x04
	Group    Tag = 0x08
	Mask     Tag = 0x10
	Other    Tag = 0x20
)

// Permission bits of an entry.
const (
	Read    = 4
	Write   = 2
	Execute = 1
)

// Version is POSIX_ACL_XATTR_VERSION.
const Version = 2

// UndefinedID is ACL_UNDEFINED_ID, the id of entries that name no one.
const UndefinedID = 0xffffffff

const (
	headerSize = 4
	entrySize  = 8
)

// Entry is one entry of an ACL.
type Entry struct {
	Tag  Tag
	Perm uint16
	ID   uint32 // uid (User) or gid (Group); UndefinedID for the others
}

// ACL is a list of entries in the order they are stored.
type ACL []Entry

// Error is a malformed ACL; Errno is what the kernel returns for it.
type Error struct {
	Errno syscall.Errno
	Msg   string
}

func (e *Error) Error() string { return "posix acl: " + e.Msg }

// Unwrap lets errors.Is(err, syscall.EINVAL) match.
func (e *Error) Unwrap() error { return e.Errno }

func errorf(errno syscall.Errno, format string, args ...any) error {
	return &Error{Errno: errno, Msg: fmt.Sprintf(format, args...)}
}

// Parse decodes an xattr value. An ACL with no entries (a bare header) is
// nil with no error: setting it removes the ACL. A wrong version is
// EOPNOTSUPP, a size that is not a whole number of entries, an unknown tag
// or a User/Group entry with the undefined id is EINVAL (Parse does not
// check the order of entries: see Valid). mirrors posix_acl_from_xattr
func Parse(b []byte) (ACL, error) {
	if len(b) < headerSize {
		return nil, errorf(syscall.EINVAL, "%d bytes: shorter than the header", len(b))
	}
	if v := binary.LittleEndian.Uint32(b); v != Version {
		return nil, errorf(syscall.EOPNOTSUPP, "version %d, want %d", v, Version)
	}
	if (len(b)-headerSize)%entrySize != 0 {
		return nil, errorf(syscall.EINVAL, "%d bytes: not a whole number of entries", len(b))
	}
	n := (len(b) - headerSize) / entrySize
	if n == 0 {
		return nil, nil
	}
	a := make(ACL, n)
	for i := range a {
		e := b[headerSize+i*entrySize:]
		a[i] = Entry{Tag: Tag(binary.LittleEndian.Uint16(e)), Perm: binary.LittleEndian.Uint16(e[2:]),
			ID: binary.LittleEndian.Uint32(e[4:])}
		switch a[i].Tag {
		case UserObj, GroupObj, Mask, Other:
			a[i].ID = UndefinedID
		case User, Group:
			if a[i].ID == UndefinedID {
				return nil, errorf(syscall.EINVAL, "entry %d (%s): undefined id", i, a[i].Tag)
			}
		default:
			return nil, errorf(syscall.EINVAL, "entry %d: unknown tag %#x", i, uint16(a[i].Tag))
		}
	}
	return a, nil
}

// Bytes encodes a in the xattr format. mirrors posix_acl_to_xattr
func (a ACL) Bytes() []byte {
	b := make([]byte, headerSize+entrySize*len(a))
	binary.LittleEndian.PutUint32(b, Version)
	for i, e := range a {
		p := b[headerSize+i*entrySize:]
		binary.LittleEndian.PutUint16(p, uint16(e.Tag))
		binary.LittleEndian.PutUint16(p[2:], e.Perm)
		id := e.ID
		if e.Tag != User && e.Tag != Group {
			id = UndefinedID
		}
		binary.LittleEndian.PutUint32(p[4:], id)
	}
	return b
}

// Valid checks what the kernel checks before an ACL is set: only rwx
// bits, one UserObj first, then User entries, one GroupObj, Group entries,
// a Mask (required when there are User or Group entries), one Other last.
// mirrors posix_acl_valid
func (a ACL) Valid() error {
	state := UserObj
	needsMask := false
	for i, e := range a {
		if e.Perm&^(Read|Write|Execute) != 0 {
			return errorf(syscall.EINVAL, "entry %d (%s): permission bits %#o", i, e.Tag, e.Perm)
		}
		ok := false
		switch e.Tag {
		case UserObj:
			ok, state = state == UserObj, User
		case User:
			ok, needsMask = state == User, true
		case GroupObj:
			ok, state = state == User, Group
		case Group:
			ok, needsMask = state == Group, true
		case Mask:
			ok, state = state == Group, Other
		case Other:
			ok = state == Other || state == Group && !needsMask
			state = 0
		}
		if !ok {
			return errorf(syscall.EINVAL, "entry %d (%s) out of place", i, e.Tag)
		}
	}
	if state != 0 {
		return errorf(syscall.EINVAL, "incomplete: %d entries, no %s", len(a), state)
	}
	return nil
}

// EquivMode returns mode with its permission bits (0777) as a gives them
// (the Mask's bits for the group when there is one), and whether a is
// fully expressed by them (no Mask, no named User or Group entry).
// mirrors posix_acl_equiv_mode
func (a ACL) EquivMode(mode uint32) (uint32, bool, error) {
	var m uint32
	equiv := true
	for _, e := range a {
		p := uint32(e.Perm) & 7
		switch e.Tag {
		case UserObj:
			m |= p << 6
		case GroupObj:
			m |= p << 3
		case Other:
			m |= p
		case Mask:
			m = m&^0o070 | p<<3
			equiv = false
		case User, Group:
			equiv = false
		default:
			return mode, false, errorf(syscall.EINVAL, "unknown tag %#x", uint16(e.Tag))
		}
	}
	return mode&^0o777 | m, equiv, nil
}

// FromMode is the ACL the permission bits of mode stand for.
// mirrors posix_acl_from_mode
func FromMode(mode uint32) ACL {
	return ACL{
		{Tag: UserObj, Perm: uint16(mode>>6) & 7, ID: UndefinedID},
		{Tag: GroupObj, Perm: uint16(mode>>3) & 7, ID: UndefinedID},
		{Tag: Other, Perm: uint16(mode) & 7, ID: UndefinedID},
	}
}

// Clone returns a copy of a.
func (a ACL) Clone() ACL { return append(ACL(nil), a...) }

// CreateMasq applies the default ACL a of a directory to a new inode
// created with mode: it returns the new inode's access ACL (a copy of a
// whose owner, group-or-mask and other entries lose what mode does not
// grant), the mode less what the ACL does not grant, and whether that
// access ACL must be stored (false: the mode says it all).
// mirrors posix_acl_create_masq
func (a ACL) CreateMasq(mode uint32) (ACL, uint32, bool, error) {
	acl := a.Clone()
	m := mode
	notEquiv := false
	group, mask := -1, -1
	for i := range acl {
		e := &acl[i]
		switch e.Tag {
		case UserObj:
			e.Perm &= uint16(m>>6) | ^uint16(7)
			m &= uint32(e.Perm)<<6 | ^uint32(0o700)
		case User, Group:
			notEquiv = true
		case GroupObj:
			group = i
		case Other:
			e.Perm &= uint16(m) | ^uint16(7)
			m &= uint32(e.Perm) | ^uint32(0o007)
		case Mask:
			mask = i
			notEquiv = true
		default:
			return nil, mode, false, errorf(syscall.EIO, "unknown tag %#x", uint16(e.Tag))
		}
	}
	g := mask
	if g < 0 {
		g = group
	}
	if g < 0 {
		return nil, mode, false, errorf(syscall.EIO, "no group entry")
	}
	acl[g].Perm &= uint16(m>>3) | ^uint16(7)
	m &= uint32(acl[g].Perm)<<3 | ^uint32(0o070)
	return acl, mode&^0o777 | m&0o777, notEquiv, nil
}

// Chmod returns a copy of a whose owner, group-or-mask and other entries
// are the permission bits of mode. mirrors __posix_acl_chmod_masq
func (a ACL) Chmod(mode uint32) (ACL, error) {
	acl := a.Clone()
	group, mask := -1, -1
	for i := range acl {
		e := &acl[i]
		switch e.Tag {
		case UserObj:
			e.Perm = uint16(mode>>6) & 7
		case User, Group:
		case GroupObj:
			group = i
		case Mask:
			mask = i
		case Other:
			e.Perm = uint16(mode) & 7
		default:
			return nil, errorf(syscall.EIO, "unknown tag %#x", uint16(e.Tag))
		}
	}
	g := mask
	if g < 0 {
		g = group
	}
	if g < 0 {
		return nil, errorf(syscall.EIO, "no group entry")
	}
	acl[g].Perm = uint16(mode>>3) & 7
	return acl, nil
}

func (t Tag) String() string {
	switch t {
	case UserObj:
		return "user_obj"
	case User:
		return "user"
	case GroupObj:
		return "group_obj"
	case Group:
		return "group"
	case Mask:
		return "mask"
	case Other:
		return "other"
	}
	return fmt.Sprintf("tag(%#x)", uint16(t))
}

// String is the short text form ("u::rw-,u:1000:r--,g::r--,m::r--,o::---").
func (a ACL) String() string {
	var s []string
	for _, e := range a {
		var q string
		switch e.Tag {
		case UserObj:
			q = "u:"
		case User:
			q = "u:" + strconv.FormatUint(uint64(e.ID), 10)
		case GroupObj:
			q = "g:"
		case Group:
			q = "g:" + strconv.FormatUint(uint64(e.ID), 10)
		case Mask:
			q = "m:"
		case Other:
			q = "o:"
		default:
			q = e.Tag.String() + ":"
		}
		s = append(s, q+":"+permString(e.Perm))
	}
	return strings.Join(s, ",")
}

func permString(p uint16) string {
	b := []byte("---")
	if p&Read != 0 {
		b[0] = 'r'
	}
	if p&Write != 0 {
		b[1] = 'w'
	}
	if p&Execute != 0 {
		b[2] = 'x'
	}
	if p&^7 != 0 {
		return string(b) + fmt.Sprintf("+%#o", p&^7)
	}
	return string(b)
}
