//go:build invariants

package txn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// TestInvariantsCatchBadCommit: in an invariants build a commit that
// writes an inconsistent filesystem (an xattr of an inode that does not
// exist) panics with the checker's report.
func TestInvariantsCatchBadCommit(t *testing.T) {
	img := mkfs(t, 128<<20)
	im := openImage(t, img)
	h := im.begin(t)
	tree, err := h.Tree(5)
	if err != nil {
		t.Fatal(err)
	}
	setXattr(t, h, tree, 4242, "user.orphan", []byte("x"))
	h.End()
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		im.fs.Commit()
	}()
	if !strings.Contains(msg, "txn: invariants: commit") || !strings.Contains(msg, "4242") {
		t.Fatalf("commit of a bad tree: recovered %q, want the checker's report", msg)
	}
	t.Logf("%s", msg)
	im.dev.Close()
	checktest.Damaged(img) // the bad generation is on disk
}
