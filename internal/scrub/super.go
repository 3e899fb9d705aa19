package scrub

import (
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// supers checks every superblock copy of every present device. With
// Repair, a bad copy is rewritten from the device's good one (its bytenr
// field set to the copy's offset, its checksum recomputed).
// mirrors scrub_supers
func (s *scrubber) supers() {
	for _, m := range s.fi.Devices.Members() {
		if m.Dev == nil {
			continue
		}
		var good []byte
		var bad []ondisk.PhysicalAddr
		var mirrors []int
		var errs []error
		for mi, off := range ondisk.SuperMirrorOffsets {
			if int64(off)+ondisk.SuperInfoSize > m.Dev.Size() {
				break
			}
			s.rep.superCopies++
			if _, err := diskio.ReadSuperAt(m.Dev, off); err != nil {
				bad, mirrors, errs = append(bad, off), append(mirrors, mi), append(errs, err)
				continue
			}
			s.rep.superCopiesValid++
			if good == nil {
				good = make([]byte, ondisk.SuperInfoSize)
				if _, err := m.Dev.ReadAt(good, int64(off)); err != nil {
					good = nil
				}
			}
		}
		for i, off := range bad {
			e := Error{Kind: SuperError, Metadata: true, DevID: m.DevID, Physical: off, Mirror: mirrors[i] + 1, Length: ondisk.SuperInfoSize, Err: errs[i]}
			switch {
			case good == nil:
				e.Uncorrectable = true
			case s.o.Repair:
				b := append([]byte(nil), good...)
				binary.LittleEndian.PutUint64(b[0x30:], uint64(off))
				s.fi.Csum.SetBlock(b)
				_, err := m.Dev.WriteAt(b, int64(off))
				e.Corrected = err == nil
				if e.Corrected {
					_, err = diskio.ReadSuperAt(m.Dev, off)
					e.Corrected = err == nil
				}
				e.Uncorrectable = !e.Corrected
			}
			s.report(e)
		}
	}
}
