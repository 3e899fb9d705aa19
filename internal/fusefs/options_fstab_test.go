package fusefs

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// kernelFstabOptions is an fstab option field written for a kernel btrfs mount.
const kernelFstabOptions = "defaults,ssd,space_cache=v2,discard=async,compress=zstd:3,noatime,subvol=/,commit=120,autodefrag,nodiratime"

// TestKernelFstabOptions: options from an fstab line for kernel btrfs are
// accepted; those that mean nothing here are listed once in the log.
func TestKernelFstabOptions(t *testing.T) {
	var o Options
	if err := ParseMountOptions(kernelFstabOptions, &o); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ssd", "space_cache=v2", "discard=async", "autodefrag"}; !reflect.DeepEqual(o.Ignored, want) {
		t.Errorf("ignored %q, want %q", o.Ignored, want)
	}
	if o.Compress != "zstd:3" || o.Atime != AtimeNever || !o.NoDiratime || o.Subvol != "/" || o.CommitInterval != 120*time.Second {
		t.Errorf("parsed %+v", o)
	}
	var d Options
	if err := ParseMountOptions("debug", &d); err != nil || !d.Debug {
		t.Errorf("-o debug: %v, Debug=%v (want FUSE debug output, as libfuse and sshfs)", err, d.Debug)
	}
	if err := ParseMountOptions("ssd,nosuchoption", &Options{}); err == nil || !strings.Contains(err.Error(), "nosuchoption") {
		t.Errorf("an unknown option: %v", err)
	}
	tm := mountImage(t, newImage(t, 256<<20), o)
	tm.unmount()
	if n := strings.Count(tm.logBuf.String(), "ignoring mount options"); n != 1 {
		t.Errorf("%d log lines about ignored options:\n%s", n, tm.logBuf.String())
	}
}

// TestMountPointMissing: the error names the missing mount point.
func TestMountPointMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nowhere")
	_, err := New(newImage(t, 256<<20), dir, Options{})
	if err == nil || err.Error() != "mount point "+dir+" does not exist" {
		t.Errorf("mount on a missing directory: %v", err)
	}
}
