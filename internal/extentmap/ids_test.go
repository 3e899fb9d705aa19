package extentmap

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

func uint64ToID(i int) ondisk.ObjectID { return ondisk.ObjectID(i) }
