package txn

import (
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// The writer does not account quota groups. When quotas are enabled, the
// first commit marks them inconsistent (and every commit keeps the status
// generation current), as the kernel does when it cannot account: Linux and
// btrfs check then know the numbers are stale until `btrfs quota rescan`.
// mirrors qgroup_mark_inconsistent + update_qgroup_status_item

var qgroupStatusKey = ondisk.Key{Type: ondisk.QgroupStatusKey}

// updateQgroupStatus marks the quota groups inconsistent at f.transid.
// It reports whether it changed the item.
func (f *Engine) updateQgroupStatus() (bool, error) {
	if f.noQuota {
		return false, nil
	}
	ts, err := f.tree(ondisk.QuotaTreeObjectID)
	if errors.Is(err, fsinfo.ErrNoTree) {
		f.noQuota = true
		return false, nil
	}
	if err != nil {
		return false, err
	}
	data, ok, err := ts.t.Lookup(qgroupStatusKey)
	if err != nil || !ok {
		f.noQuota = !ok && err == nil
		return false, err
	}
	st, err := item.DecodeQgroupStatus(data)
	if err != nil {
		return false, fmt.Errorf("qgroup status: %w", err)
	}
	if st.Flags&item.QgroupStatusFlagOn == 0 {
		return false, nil
	}
	want := st
	want.Flags |= item.QgroupStatusFlagInconsistent
	want.Generation = uint64(f.transid)
	if want == st {
		return false, nil
	}
	return true, ts.t.UpdateItem(allocator{f}, qgroupStatusKey, want.Bytes())
}
