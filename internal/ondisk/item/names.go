package item

import "fmt"

// MaxNameLen is BTRFS_NAME_LEN, the longest file name.
const MaxNameLen = 255

// cloneBytes copies b; an empty b gives nil so that decode/encode round
// trips compare equal with reflect.DeepEqual.
func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// atOffset says where in a multi-entry item a decode error happened.
func atOffset(err error, off int) error {
	if off == 0 {
		return err
	}
	return fmt.Errorf("entry at byte %d: %w", off, err)
}
