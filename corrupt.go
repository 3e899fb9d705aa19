package gobtrfs

import "github.com/gobtrfs/gobtrfs/internal/diskio"

func corruptf(format string, args ...any) error { return diskio.Corruptf(format, args...) }
