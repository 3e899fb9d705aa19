package fsinfo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

func mkfsMemory(t *testing.T) *blockdev.Memory {
	t.Helper()
	mem := blockdev.NewMemory(128 << 20)
	if err := mkfs.Make(mem, mkfs.Config{}); err != nil {
		t.Fatal(err)
	}
	return mem
}

// TestOpenDevicesRefuses the device lists that cannot be one filesystem,
// and skips a device without a superblock among good ones.
func TestOpenDevicesRefuses(t *testing.T) {
	a, b := mkfsMemory(t), mkfsMemory(t)
	names := []string{"a.img", "b.img", "blank.img"}
	_, err := fsinfo.OpenDevices([]blockdev.Device{a, b}, fsinfo.Options{ReadOnly: true, DeviceNames: names})
	if err == nil || !strings.Contains(err.Error(), "give the devices of one filesystem") {
		t.Errorf("two filesystems: %v", err)
	}
	_, err = fsinfo.OpenDevices([]blockdev.Device{a, a}, fsinfo.Options{ReadOnly: true, DeviceNames: []string{"a.img", "a.img"}})
	if err == nil || !strings.Contains(err.Error(), "both devid 1") {
		t.Errorf("one device twice: %v", err)
	}
	var warns []string
	f, err := fsinfo.OpenDevices([]blockdev.Device{blockdev.NewMemory(1 << 20), a}, fsinfo.Options{ReadOnly: true,
		DeviceNames: []string{"blank.img", "a.img"}, Warn: func(s string) { warns = append(warns, s) }})
	if err != nil || len(warns) == 0 || !strings.Contains(warns[0], "blank.img: ") || !strings.Contains(warns[0], "not used") {
		t.Errorf("a blank device beside a good one: %v, warnings %q", err, warns)
	}
	if f != nil && (f.Degraded() || len(f.Devices.Members()) != 1) {
		t.Errorf("a blank device beside a good one: degraded %v, %d members", f.Degraded(), len(f.Devices.Members()))
	}
	if _, err := fsinfo.OpenDevices([]blockdev.Device{a}, fsinfo.Options{}); err != nil {
		t.Errorf("read-write open of a single device: %v", err)
	}
	if _, err := fsinfo.OpenDevices(nil, fsinfo.Options{}); err == nil {
		t.Error("no device: no error")
	}
	var me *volume.MissingDeviceError
	if errors.As(err, &me) {
		t.Errorf("no device is no missing device: %v", err)
	}
}
