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
)

// errNotBtrfs is what the image errors below wrap when no superblock is
// valid: the file or device holds no btrfs.
var errNotBtrfs = errors.New("not a btrfs filesystem")

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

// imageErr says an open error of the image at path in plain words: "not a
// btrfs filesystem (no valid superblock)" when no superblock copy is
// valid, the details after it.
func imageErr(path string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(msg, "no valid superblock"); i >= 0 {
		detail := strings.TrimPrefix(strings.TrimPrefix(msg[i:], "no valid superblock"), ": ")
		if detail != "" {
			detail = "; " + detail
		}
		return fmt.Errorf("%s: %w (no valid superblock%s)", path, errNotBtrfs, detail)
	}
	return err
}
