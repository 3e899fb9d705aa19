package bench

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// nullFUSE is the FUSE round trip alone: a go-fuse server with one file,
// "r", whose READs are answered with zeros straight away (no lookup, no
// disk, no checksum). What a read through our mount costs above it is
// ours; what it costs itself no daemon can save.
type nullFUSE struct {
	gofs.Inode
	size uint64
}

type nullFile struct {
	gofs.Inode
	size uint64
}

var (
	_ = (gofs.NodeOnAdder)((*nullFUSE)(nil))
	_ = (gofs.NodeGetattrer)((*nullFile)(nil))
	_ = (gofs.NodeOpener)((*nullFile)(nil))
	_ = (gofs.NodeReader)((*nullFile)(nil))
)

// nullZeros backs every reply (READs are at most MaxWrite long).
var nullZeros = make([]byte, 1<<20)

func (r *nullFUSE) OnAdd(ctx context.Context) {
	ch := r.NewPersistentInode(ctx, &nullFile{size: r.size}, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: 2})
	r.AddChild("r", ch, false)
}

func (f *nullFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = f.size
	out.Blocks = f.size / 512
	out.Nlink = 1
	return 0
}

func (f *nullFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

func (f *nullFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := int64(len(dest))
	if off >= int64(f.size) {
		n = 0
	} else {
		n = min(n, int64(f.size)-off, int64(len(nullZeros)))
	}
	return fuse.ReadResultVector([][]byte{nullZeros[:n]}), 0
}

// nullMount mounts a nullFUSE with a file of size bytes.
func (e *benchEnv) nullMount(name string, size uint64) (string, error) {
	mnt := e.mkdir(name)
	timeout := time.Second
	server, err := gofs.Mount(mnt, &nullFUSE{size: size}, &gofs.Options{
		MountOptions: fuse.MountOptions{DirectMount: os.Geteuid() == 0, MaxWrite: 1 << 20, FsName: "null", Name: "null"},
		EntryTimeout: &timeout, AttrTimeout: &timeout})
	if err != nil {
		return "", fmt.Errorf("null FUSE server: %w", err)
	}
	e.cleanups = append(e.cleanups, func() {
		if err := server.Unmount(); err != nil {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
			return
		}
		server.Wait()
	})
	return mnt, nil
}
