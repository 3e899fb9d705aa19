// Command gobtrfs reads, writes, checks and mounts btrfs images in pure Go.
// Subcommands mirror btrfs-progs where they have a counterpart; each lives in
// its own file and registers itself in commands from an init function.
package main

import (
	"fmt"
	"os"
	"sort"
)

// commands maps a subcommand name to its entry point (args exclude the name).
var commands = map[string]func(args []string) error{}

// usageText is a one-line summary per command, shown by `gobtrfs help`.
var usageText = map[string]string{}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gobtrfs COMMAND [ARGS...]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, usageText[n])
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "gobtrfs: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := cmd(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "gobtrfs %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
