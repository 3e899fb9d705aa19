package testutil

// IsMounted reports whether dir is a mount point in this mount namespace.
func IsMounted(dir string) bool { return isMounted(dir) }
