package fusefs

import "testing"

// TestNoLogReplayOption: -o nologreplay (or rescue=nologreplay) asks a
// read-only mount for the committed state; a read-write mount refuses it.
func TestNoLogReplayOption(t *testing.T) {
	for _, s := range []string{"ro,nologreplay", "rescue=nologreplay,ro"} {
		var o Options
		if err := ParseMountOptions(s, &o); err != nil || !o.NoLogReplay || !o.ReadOnly {
			t.Errorf("%s: %+v, %v", s, o, err)
		}
	}
	o := Options{NoLogReplay: true}
	if _, err := openRW("/nonexistent", &o, nil); err == nil {
		t.Error("a read-write open accepted nologreplay")
	}
}

// TestRescueIgnoreDataCsums: rescue=ignoredatacsums (the kernel's spelling)
// turns data checksum verification off like nodatasum.
func TestRescueIgnoreDataCsums(t *testing.T) {
	for _, s := range []string{"ro,rescue=ignoredatacsums", "nodatasum,ro"} {
		var o Options
		if err := ParseMountOptions(s, &o); err != nil || !o.NoDataCsum {
			t.Errorf("%s: %+v, %v", s, o, err)
		}
	}
}
