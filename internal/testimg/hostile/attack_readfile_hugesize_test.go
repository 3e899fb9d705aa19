package hostile_test

// Attack: gobtrfs.FS.ReadFile / RW.ReadFile of a file whose inode claims a
// huge i_size (hostile.HugeSize: 2^62; and 1 TiB) allocate i_size bytes up
// front (fsapi.go ReadFile: make([]byte, file.inode.Size); rw.go ReadFile:
// w.f.ReadAt(id, 0, int(x.Size))): a panic (makeslice: len out of range)
// or a fatal out-of-memory that no recover catches.
//
// Run:
//   go test -overlay /work/notes/attack/overlay.json -count=1 -v -run TestAttackReadFileHugeSize ./internal/testimg/hostile
import (
	"encoding/binary"
	"os"
	"os/exec"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

func TestAttackReadFileHugeSize(t *testing.T) {
	if img := os.Getenv("ATK_RIMG"); img != "" {
		switch os.Getenv("ATK_OP") {
		case "ro":
			fsys, err := gobtrfs.Open(img, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := fsys.ReadFile("sparse")
			t.Logf("FS.ReadFile: %d bytes, %v", len(b), err)
		case "rw":
			w, err := gobtrfs.OpenRW(img, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := w.ReadFile("/sparse")
			t.Logf("RW.ReadFile: %d bytes, %v", len(b), err)
			w.Close()
		}
		return
	}
	b := hostile.Build(t)
	img62 := hostile.HugeSize(t, b)
	img40 := b.Copy(t, "huge40.img")
	p := hostile.Open(t, img40)
	p.EditItem(ondisk.FSTreeObjectID, ondisk.Key{ObjectID: ondisk.ObjectID(b.Ino["sparse"]), Type: ondisk.InodeItemKey}, func(d []byte) {
		binary.LittleEndian.PutUint64(d[16:], 1<<40)
	})
	p.Close()
	for _, c := range []struct{ name, img, op string }{
		{"ro-2^62", img62, "ro"}, {"ro-2^40", img40, "ro"}, {"rw-2^62", img62, "rw"}, {"rw-2^40", img40, "rw"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("prlimit", "--as=3000000000", os.Args[0], "-test.run=^TestAttackReadFileHugeSize$", "-test.v")
			cmd.Env = append(os.Environ(), "ATK_RIMG="+c.img, "ATK_OP="+c.op)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%v\n%.900s", err, out)
			} else {
				t.Logf("%s", out)
			}
		})
	}
}
