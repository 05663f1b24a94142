package nvmeof

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// sysDir is a directory tree of the live host (a sysfs mount) as an fs.FS:
// os.DirFS, except that ReadFile is one open, one read (more only for a
// value over 512 bytes) and one close, and ReadDir opens the directory
// without offering it to the runtime's poller. os.ReadFile costs about eleven system calls a file (the
// file is offered to the poller, which refuses it, and its size is asked
// first) and os.ReadDir about eight, and a host read opens ~20 attributes
// and ~2 directories a controller: on a 100-controller host that was most
// of a host tool's run time. Attribute values are short (a 512-byte buffer
// holds every one the reader asks for); longer files are read to the end.
type sysDir struct {
	fs.FS // os.DirFS(root): Open, ReadDir, Stat
	root  string
}

func newSysDir(root string) sysDir { return sysDir{os.DirFS(root), root} }

var (
	_ fs.ReadFileFS = sysDir{}
	_ fs.ReadDirFS  = sysDir{}
)

// ReadDir lists directory name sorted by file name, as fs.ReadDir does.
func (d sysDir) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	p := d.root + "/" + name
	fd, err := retry(func() (int, error) {
		return syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name) // a blocking descriptor: not offered to the poller
	defer f.Close()
	es, err := f.ReadDir(-1)
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}

// ReadFile reads name (slash-separated, relative to the root). Errors are
// *fs.PathError wrapping the errno (ENOENT matches fs.ErrNotExist).
func (d sysDir) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	p := d.root + "/" + name
	fd, err := retry(func() (int, error) { return syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		room := cap(buf) - len(buf)
		n, err := retry(func() (int, error) { return syscall.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		buf = buf[:len(buf)+n]
		// A read that leaves room is the end of the file: a sysfs
		// attribute is rendered whole by one show() call and handed out
		// by seq_file as far as the buffer takes it (fs/kernfs/file.c
		// kernfs_fop_read_iter, fs/seq_file.c seq_read_iter); a regular
		// file (tmpfs, a capture on disk, FUSE through the page cache)
		// reads short only at its end, and a FUSE direct_io read is the
		// server's reply, which fiomig's FUSE trees give whole
		// (internal/standin/fusetree.go). So one read suffices
		// for every attribute the reader asks for, instead of a second
		// one returning 0: about 1,500 system calls on a 100-controller
		// host.
		if n == 0 || n < room {
			return buf, nil
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// retry calls f again while it fails with EINTR.
func retry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}
