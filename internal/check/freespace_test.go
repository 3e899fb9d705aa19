package check

import (
	"strings"
	"testing"
)

// TestMkfsLeftoverIsWarning: mkfs.btrfs 6.2 leaves FREE_SPACE_INFO entries
// for the temporary chunks it deletes, below the first block group and
// all free. The kernel never reads them and btrfs check 6.2 accepts them:
// a warning that says why, not an error (entries elsewhere without a
// block group are errors: see the free-space cases of TestCorruption).
func TestMkfsLeftoverIsWarning(t *testing.T) {
	rep := mustBeClean(t, base(t), Options{})
	for _, w := range rep.Warnings {
		if strings.Contains(w, "FREE_SPACE_INFO") && strings.Contains(w, "harmless, a leftover of the temporary chunks mkfs.btrfs") {
			t.Logf("warning: %s", w)
			return
		}
	}
	t.Errorf("no warning about the leftover FREE_SPACE_INFO of mkfs.btrfs; warnings: %q", rep.Warnings)
}
