package main

import (
	"fmt"
	"io"
	"os"
)

func init() {
	commands["cat"] = cmdCat
	usageText["cat"] = "print files of an image: cat [--no-verify] [-s N] [--subvol ID|PATH] [-d IMG]... IMAGE PATH..."
}

func cmdCat(args []string) error { return catMain(args, os.Stdout, os.Stderr) }

func catMain(args []string, stdout, stderr io.Writer) error {
	var img rdImageFlags
	fs := rdFlagSet("cat", "cat [--no-verify] [-s N] [--subvol ID|PATH] [-d IMG]... IMAGE PATH...")
	img.register(fs)
	pos, err := rdParse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		fs.Usage()
		return fmt.Errorf("need IMAGE and PATH")
	}
	fsys, err := img.open(pos[0], false, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	buf := make([]byte, 1<<20)
	for _, p := range pos[1:] {
		f, err := fsys.OpenFile(rdFSPath(p))
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(struct{ io.Writer }{stdout}, f, buf) // our 1 MiB reads, not ReadFrom's 32 KiB
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
