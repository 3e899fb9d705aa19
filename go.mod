module github.com/gobtrfs/gobtrfs

go 1.26.8

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
)
