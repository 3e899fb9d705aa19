package main

// Plain words for the common mistakes of naming an image: a directory, a
// file that holds no btrfs.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// checkImagePath refuses a directory given as an image before anything
// tries to read it as one.
func checkImagePath(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory, not a btrfs image (an image file or a block device)", path)
	}
	return nil
}

// rdPathErr says in plain words that the image path p (as the user gave
// it) does not exist or is a directory; other errors (a damaged image)
// keep their details.
func rdPathErr(img, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file or directory in %s", p, img)
	case errors.Is(err, syscall.EISDIR) || strings.HasSuffix(err.Error(), "is a directory"):
		return fmt.Errorf("%s: is a directory", p)
	}
	return err
}

// imageErr says an open error of the image at path in plain words:
// "IMAGE: not a btrfs filesystem (no valid superblock): details" when no
// superblock copy carries the btrfs magic (diskio.ErrNotBtrfs, which the
// result still matches).
func imageErr(path string, err error) error {
	if err == nil || !errors.Is(err, diskio.ErrNotBtrfs) {
		return err
	}
	msg := err.Error()
	if i := strings.Index(msg, diskio.ErrNotBtrfs.Error()); i >= 0 {
		msg = msg[i:]
	}
	return &plainError{msg: path + ": " + msg, err: err}
}

// plainError is err said another way.
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }
func (e *plainError) Unwrap() error { return e.err }
