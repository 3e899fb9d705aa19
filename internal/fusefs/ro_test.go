package fusefs

import (
	"bytes"
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"os"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

// TestReadOnlyMountNonUTF8Names: the read-only mount looks names up by
// their bytes (btrfs names are not UTF-8), lists a directory from its
// DIR_INDEX and reads through the engine.
func TestReadOnlyMountNonUTF8Names(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"caf\xe9", "\xff\xfe", "plain"}
	dir, err := f.Mkdir(fsops.TopLevel, "d\x80ir", syscall.S_IFDIR|0o755, 0, 0)
	must(t, err)
	for i, name := range names {
		id, err := f.Create(dir, name, syscall.S_IFREG|0o644, 0, 0, 0)
		must(t, err)
		_, err = f.WriteAt(id, 0, bytes.Repeat([]byte(fmt.Sprint(i)), 5000+i))
		must(t, err)
	}
	must(t, f.Close())

	ro := mountImage(t, img, Options{ReadOnly: true})
	defer ro.unmount()
	ents, err := os.ReadDir(ro.path("d\x80ir"))
	must(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", []string{"caf\xe9", "plain", "\xff\xfe"}) { // os.ReadDir sorts
		t.Errorf("listing %q", got)
	}
	for i, name := range names {
		data, err := os.ReadFile(ro.path("d\x80ir", name))
		if err != nil || !bytes.Equal(data, bytes.Repeat([]byte(fmt.Sprint(i)), 5000+i)) {
			t.Errorf("read %q: %d bytes, %v", name, len(data), err)
		}
	}
	checktest.Image(t, img)
}
