package main

import "golang.org/x/sys/unix"

type rdUnixStat = unix.Stat_t
