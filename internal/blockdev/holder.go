package blockdev

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Holder describes the process that holds an image's lock, as far as
// /proc tells.
type Holder struct {
	PID     int    // 0 when unknown
	Command string // the holder's command line
	// MountDir is set when the holder is a gobtrfs FUSE mount of the image.
	MountDir string
	// What describes a holder that is not a process holding the lock (a
	// loop device, the kernel).
	What  string
	Write bool // an exclusive (writer's) lock
}

// Known reports whether anything is known of the holder.
func (h Holder) Known() bool { return h.PID != 0 || h.MountDir != "" || h.What != "" }

func (h Holder) String() string {
	switch {
	case h.MountDir != "" && h.PID != 0:
		return fmt.Sprintf("a gobtrfs mount on %s, pid %d", h.MountDir, h.PID)
	case h.MountDir != "":
		return "a gobtrfs mount on " + h.MountDir
	case h.What != "":
		return h.What
	case h.PID != 0 && h.Command != "":
		return fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
	case h.PID != 0:
		return fmt.Sprintf("pid %d", h.PID)
	}
	return "another process (holder unknown)"
}

// findHolder looks up who holds the flock on f's inode in /proc/locks and
// whether that is a gobtrfs mount of path (/proc/self/mountinfo).
func findHolder(f *os.File, path string) Holder {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Holder{}
	}
	h := lockHolder(unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	if h.PID != 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", h.PID)); err == nil {
			h.Command = cleanCommand(b)
		}
	}
	h.MountDir = gobtrfsMountOf(path)
	return h
}

// lockHolder finds the first FLOCK entry on (major:minor, ino) in
// /proc/locks. Lines read "1: FLOCK  ADVISORY  WRITE 1234 00:2d:5678 0 EOF";
// waiters' lines carry "->" and are skipped.
func lockHolder(major, minor uint32, ino uint64) Holder {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return Holder{}
	}
	defer f.Close()
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid, _ := strconv.Atoi(fields[4])
		if pid < 0 {
			pid = 0
		}
		return Holder{PID: pid, Write: fields[3] == "WRITE"}
	}
	return Holder{}
}

// gobtrfsMountOf returns the mount point of a FUSE gobtrfs mount whose
// source is path, or "": the same path, or another that names the same
// file (a hard link, a symlink); among several, the first that answers.
func gobtrfsMountOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs
	}
	id, idErr := Identify(abs)
	sameFile := func(src string) bool {
		if idErr != nil {
			return false
		}
		sid, err := Identify(src)
		return err == nil && sid == id
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	var dirs []string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 2 || !strings.HasPrefix(qf[0], "fuse") || !strings.Contains(qf[0], "gobtrfs") {
			continue
		}
		src := unescapeMountinfo(qf[1])
		if src == abs || src == real || (strings.HasPrefix(src, "/dev/") && loopBackingFile(src) == real) || sameFile(src) {
			dirs = append(dirs, unescapeMountinfo(pf[4]))
		}
	}
	if len(dirs) > 1 {
		// A mount whose daemon died stays listed until it is unmounted
		// (its statfs fails: ENOTCONN); the live one serves the image.
		for _, d := range dirs {
			var st unix.Statfs_t
			if unix.Statfs(d, &st) == nil {
				return d
			}
		}
	}
	if len(dirs) > 0 {
		return dirs[0]
	}
	return ""
}

// unescapeMountinfo undoes the octal escapes (\040 for space) of
// /proc/self/mountinfo fields.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cleanCommand turns a /proc/PID/cmdline into one printable line of at
// most 160 characters.
func cleanCommand(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, string(bytes.TrimRight(b, "\x00")))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
