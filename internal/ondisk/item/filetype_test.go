package item

import "testing"

func TestFileTypeModes(t *testing.T) {
	for ft := uint8(FTRegFile); ft <= FTSymlink; ft++ {
		m := ModeFromFT(ft)
		if m == 0 || m&^SIFMT != 0 {
			t.Errorf("ModeFromFT(%d) = %o", ft, m)
		}
		if got := FTFromMode(m | 0o7777); got != ft {
			t.Errorf("FTFromMode(%o) = %d, want %d", m|0o7777, got, ft)
		}
	}
	for _, ft := range []uint8{FTUnknown, FTXattr, 9, 0xff} {
		if m := ModeFromFT(ft); m != 0 {
			t.Errorf("ModeFromFT(%d) = %o, want 0", ft, m)
		}
	}
	for _, m := range []uint32{0, 0o755, 0o030000, 0o170000} {
		if ft := FTFromMode(m); ft != FTUnknown {
			t.Errorf("FTFromMode(%o) = %d, want FTUnknown", m, ft)
		}
	}
	if FTType(FTEncrypted|FTDir) != FTDir {
		t.Error("FTType does not strip FTEncrypted")
	}
}
