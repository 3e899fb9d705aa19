package acl

import "syscall"

// What the kernel does to an inode's mode and ACLs when an ACL is set, on
// chmod and on create (fs/posix_acl.c). Callers read and write the xattrs;
// these functions only decide.

const (
	modeSetGID = 0o2000
	modeIFMT   = 0o170000
	modeIFDIR  = 0o040000
	modeIFLNK  = 0o120000
)

// UpdateMode is setting the access ACL a on an inode of mode: it returns
// the new mode (permission bits from a, S_ISGID cleared when killSGID: the
// caller is neither in the inode's group nor has CAP_FSETID) and the ACL
// to store, nil when the mode expresses a fully (the xattr is then
// removed). mirrors posix_acl_update_mode
func UpdateMode(a ACL, mode uint32, killSGID bool) (uint32, ACL, error) {
	m, equiv, err := a.EquivMode(mode)
	if err != nil {
		return mode, nil, err
	}
	if equiv {
		a = nil
	}
	if killSGID {
		m &^= modeSetGID
	}
	return m, a, nil
}

// Inherit is creating an inode of mode (type bits included) in a directory
// whose default ACL is def (nil: none). It returns the new inode's mode,
// its access ACL (nil: none to store) and its default ACL (directories
// take def; nil for other types). With no default ACL the caller applies
// the umask (the kernel's posix_acl_create does: mode &^ umask); with one,
// the umask is not applied. Symlinks take nothing. mirrors posix_acl_create
func Inherit(def ACL, mode uint32) (uint32, ACL, ACL, error) {
	if mode&modeIFMT == modeIFLNK || def == nil {
		return mode, nil, nil, nil
	}
	access, m, notEquiv, err := def.CreateMasq(mode)
	if err != nil {
		return mode, nil, nil, err
	}
	if !notEquiv {
		access = nil
	}
	var dflt ACL
	if mode&modeIFMT == modeIFDIR {
		dflt = def.Clone()
	}
	return m, access, dflt, nil
}

// CheckSet checks an ACL about to be set as the xattr name on an inode of
// mode, as set_posix_acl does: a default ACL only on a directory (EACCES;
// removing one elsewhere is a no-op, reported by ok == false), then Valid.
// a == nil is a removal.
func CheckSet(name string, a ACL, mode uint32) (ok bool, err error) {
	if name == DefaultXattr && mode&modeIFMT != modeIFDIR {
		if a != nil {
			return false, errorf(syscall.EACCES, "default ACL on a non-directory")
		}
		return false, nil
	}
	if a != nil {
		if err := a.Valid(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// IsACL reports whether name is one of the two ACL xattrs.
func IsACL(name string) bool { return name == AccessXattr || name == DefaultXattr }
