// Package checktest checks the images tests write: our checker
// (internal/check) always, and btrfs check --readonly when btrfs-progs is
// installed, with one set of rules for reading btrfs check's output
// (testutil.ProgsCheck). Helpers that make or open an image register
// AtEnd, so every test that used one ends with both checks.
package checktest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Image fails t unless both checkers find the image at path clean,
// data checksums included. progsArgs are added to btrfs check's
// arguments (e.g. "--super", "1", or "--mode", "lowmem"). Without
// btrfs-progs our checker still runs and the btrfs part logs
// testutil.ProgsMissing.
func Image(t testing.TB, path string, progsArgs ...string) {
	t.Helper()
	if msg := Problems(path, progsArgs...); msg != "" {
		t.Fatal(msg)
	}
	checked.Store(path, superOf(path))
	if !testutil.HaveProgs() {
		t.Logf("%s (%s)", testutil.ProgsMissing, path)
	}
}

// Metadata is Image without the data checksums: for a test that damaged
// file data on purpose and wants the rest checked.
func Metadata(t testing.TB, path string) {
	t.Helper()
	if msg := problems(path, false); msg != "" {
		t.Fatal(msg)
	}
	if !testutil.HaveProgs() {
		t.Logf("%s (%s)", testutil.ProgsMissing, path)
	}
}

// Problems runs both checkers on path (as Image does) and returns "" when
// both find it clean, else their reports. For tests that check many
// states of one image (crash states) and report them their own way.
func Problems(path string, progsArgs ...string) string {
	return problems(path, true, progsArgs...)
}

func problems(path string, dataCsums bool, progsArgs ...string) string {
	var msgs []string
	rep, err := check.ImageWith(path, check.Options{CheckDataCsum: dataCsums})
	switch {
	case err != nil:
		msgs = append(msgs, "our check: "+err.Error())
	case !rep.OK():
		msgs = append(msgs, "our check of "+path+":\n"+rep.String())
	}
	if dataCsums {
		progsArgs = append([]string{"--check-data-csum"}, progsArgs...)
	}
	if r, ran := testutil.ProgsCheck(path, progsArgs...); ran && !r.Clean() {
		msgs = append(msgs, r.String())
	}
	return strings.Join(msgs, "\n")
}

// FS fails t unless our checker finds fi's device clean (as written on
// the device, not as cached in fi).
func FS(t testing.TB, fi *fsinfo.FSInfo) {
	t.Helper()
	rep, err := check.FS(fi)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("check:\n%s", rep)
	}
}

var (
	// damaged holds the paths whose end-of-test check was cancelled.
	damaged sync.Map
	// checked maps a path to its primary superblock when Image last found
	// it clean: AtEnd does not check again what no commit changed since.
	checked sync.Map
)

// superOf returns the primary superblock of the image at path ("" when
// it cannot be read). Every commit and log sync rewrites it.
func superOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	if _, err := f.ReadAt(b, 64<<10); err != nil {
		return ""
	}
	return string(b)
}

// AtEnd registers Image(path) as a cleanup of t: it runs after the
// cleanups registered later (so register it as soon as the image exists,
// before whatever closes a writer of it). It does nothing when the test
// failed or was skipped already, when Damaged(path) was called, or when
// Image found the image clean and its superblock is unchanged since. Every
// writer of the image must be closed by then (a defer in the test, or a
// cleanup registered after AtEnd).
func AtEnd(t testing.TB, path string) {
	t.Helper()
	t.Cleanup(func() {
		t.Helper()
		record(t, path)
		last, _ := checked.LoadAndDelete(path)
		if _, ok := damaged.LoadAndDelete(path); ok || t.Failed() || t.Skipped() {
			return
		}
		if _, err := os.Stat(path); err != nil {
			t.Logf("end-of-test check of %s: %v", path, err)
			return
		}
		if sb := superOf(path); sb != "" && last == sb {
			t.Logf("end-of-test check of %s: clean when last checked, not committed to since", path)
			return
		}
		if msg := Problems(path); msg != "" {
			t.Errorf("end-of-test check: %s", msg)
			return
		}
		if !testutil.HaveProgs() {
			t.Logf("end-of-test check of %s: ours clean; %s", path, testutil.ProgsMissing)
			return
		}
		t.Logf("end-of-test check of %s: clean (ours and btrfs check)", path)
	})
}

// record appends "test path" to the file $CHECKTEST_LOG, when set: a way
// to count the tests that end with a check.
func record(t testing.TB, path string) {
	p := os.Getenv("CHECKTEST_LOG")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s failed=%v skipped=%v\n", t.Name(), path, t.Failed(), t.Skipped())
}

// Damaged cancels the end-of-test check of path: the test damages the
// image on purpose.
func Damaged(path string) { damaged.Store(path, true) }

// Mkfs makes path a btrfs image of size bytes with mkfs.btrfs (see
// testutil.Mkfs) and registers its end-of-test check.
func Mkfs(t testing.TB, path string, size int64, args ...string) {
	t.Helper()
	testutil.Mkfs(t, path, size, args...)
	AtEnd(t, path)
}
