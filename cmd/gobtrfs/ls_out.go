package main

// How ls prints its rows: lines with quoted names, NUL-terminated entries
// (-0) or a JSON array (--json).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// lsOut writes the rows of one listing.
type lsOut struct {
	w  *bufio.Writer
	lf lsFlags
	n  int // rows written
}

// lsJSON is one entry of ls --json.
type lsJSON struct {
	Name string `json:"name"`
	// NameBase64 holds the name's bytes when they are not valid UTF-8
	// (Name then has U+FFFD in their place).
	NameBase64 []byte    `json:"name_base64,omitempty"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Mode       string    `json:"mode"`
	Perm       uint32    `json:"perm"`
	Ino        uint64    `json:"ino"`
	Nlink      uint32    `json:"nlink"`
	UID        uint32    `json:"uid"`
	GID        uint32    `json:"gid"`
	Size       int64     `json:"size"`
	Rdev       []uint32  `json:"rdev,omitempty"`
	Mtime      time.Time `json:"mtime"`
	Target     string    `json:"target,omitempty"`
}

func (o *lsOut) row(r lsRow) {
	switch {
	case o.lf.json:
		if o.n == 0 {
			o.w.WriteString("[\n")
		} else {
			o.w.WriteString(",\n")
		}
		b, _ := json.Marshal(r.json())
		o.w.Write(b)
	case o.lf.null:
		o.w.WriteString(r.format(o.lf))
		o.w.WriteByte(0)
	default:
		o.w.WriteString(r.format(o.lf))
		o.w.WriteByte('\n')
	}
	o.n++
}

// end finishes the listing (the JSON array's closing bracket).
func (o *lsOut) end() error {
	if o.lf.json {
		if o.n == 0 {
			o.w.WriteString("[")
		}
		o.w.WriteString("\n]\n")
	}
	return o.w.Flush()
}

func (r lsRow) json() lsJSON {
	j := lsJSON{Name: baseName(r.name), Path: r.name, Mode: rdModeString(r.mode), Perm: r.mode & 0o7777,
		Ino: r.ino, Nlink: r.nlink, UID: r.uid, GID: r.gid, Size: r.size, Mtime: r.mtime.UTC(), Target: r.target}
	if !utf8.ValidString(j.Name) {
		j.NameBase64 = []byte(j.Name)
	}
	switch r.mode & 0o170000 {
	case 0o040000:
		j.Type = "dir"
	case 0o120000:
		j.Type = "symlink"
	case 0o010000:
		j.Type = "fifo"
	case 0o140000:
		j.Type = "socket"
	case 0o020000:
		j.Type, j.Rdev = "char", []uint32{r.major, r.minor}
	case 0o060000:
		j.Type, j.Rdev = "block", []uint32{r.major, r.minor}
	default:
		j.Type = "file"
	}
	return j
}

// baseName is the last component of a row's name (a path with -R).
func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// quoteName returns s as it is when it prints safely on a terminal, else
// quoted as bash's $'...' does: a newline, control byte or invalid UTF-8 in
// a name can neither fake another line nor reach the terminal raw.
func quoteName(s string) string {
	safe := true
	for _, c := range s {
		if c == utf8.RuneError || !unicode.IsPrint(c) && c != ' ' {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x80 && !unicode.IsPrint(c) && c != ' ':
			fmt.Fprintf(&b, "\\x%02x", c)
		case !unicode.IsPrint(c) && c <= 0xffff:
			fmt.Fprintf(&b, "\\u%04x", c)
		case !unicode.IsPrint(c):
			fmt.Fprintf(&b, "\\U%08x", c)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
