// Package acl encodes, decodes and applies POSIX access control lists as
// Linux keeps them: the posix_acl_xattr format btrfs stores in the
// system.posix_acl_access and system.posix_acl_default xattrs, and the
// kernel's rules for what an ACL does to a mode (fs/posix_acl.c).
//
// # On-disk format
//
// The xattr value is the kernel's uapi struct posix_acl_xattr_header
// followed by entries, all little endian:
//
//	offset 0  le32 a_version  (2)
//	offset 4  entries, 8 bytes each:
//	          le16 e_tag   (ACL_USER_OBJ 0x01, ACL_USER 0x02, ACL_GROUP_OBJ 0x04,
//	                        ACL_GROUP 0x08, ACL_MASK 0x10, ACL_OTHER 0x20)
//	          le16 e_perm  (r 4, w 2, x 1)
//	          le32 e_id    (uid or gid of ACL_USER / ACL_GROUP, else 0xffffffff)
//
// btrfs stores exactly what posix_acl_to_xattr writes (Bytes).
package acl
