package standin

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// treeCacheFor is how long the kernel may keep a looked-up entry and its
// attributes (not the files' values, which are read afresh on every open).
var treeCacheFor = 100 * time.Millisecond

// treeMount serves a changing io/fs.FS read-only over FUSE: every request
// asks tree() for the current tree, nothing is cached by the kernel
// (entry, attribute and negative timeouts 0; files opened with direct
// I/O), so a reader sees the tree of the moment it reads, as a reader of
// /sys does. It is how a real container reads a simulated host's sysfs
// (the agent pods mount it with hostPath and subPathExpr). Mounted with
// allow_other and default_permissions (files 0444, directories 0555) so
// that a container's non-root user (the agent's uid 65534) reads it.
type treeMount struct {
	dir    string
	tree   func() iofs.FS
	server *fuse.Server
	conn   string // its FUSE connection's number (/sys/fs/fuse/connections)
}

// fuseConn is the FUSE connection number of the mount at dir: the minor
// device number of its mountinfo line (a stat of dir would wait for a
// server that does not serve yet).
func fuseConn(dir string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == filepath.Clean(dir) {
			_, minor, _ := strings.Cut(f[2], ":")
			return minor
		}
	}
	return ""
}

// mountTree mounts tree at dir (created if missing).
func mountTree(dir string, tree func() iofs.FS) (*treeMount, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("standin: open /dev/fuse: %w", err)
	}
	// As fusermount would, but with close-on-exec: no process this one
	// starts keeps the connection alive after it is gone.
	data := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions", fd)
	if err := syscall.Mount("fiomig-sysfs", dir, "fuse.fiomig-sysfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_RDONLY, data); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("standin: mount FUSE at %s: %w", dir, err)
	}
	m := &treeMount{dir: dir, tree: tree}
	m.conn = fuseConn(dir)
	zero, cacheFor := time.Duration(0), treeCacheFor
	root := &treeNode{m: m, path: "."}
	m.server, err = gofs.Mount(fmt.Sprintf("/dev/fd/%d", fd), root, &gofs.Options{
		MountOptions:    fuse.MountOptions{FsName: "fiomig-sysfs", Name: "fiomig-sysfs", AllowOther: true},
		EntryTimeout:    &cacheFor,
		AttrTimeout:     &cacheFor,
		NegativeTimeout: &zero,
	})
	if err != nil {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		return nil, fmt.Errorf("standin: serve FUSE at %s: %w", dir, err)
	}
	return m, nil
}

// unmount detaches the mount lazily and aborts its FUSE connection, so
// that no reader (a container still holding it) hangs, then waits up to
// 10 s for the server to stop.
func (m *treeMount) unmount() error {
	if m == nil || m.server == nil {
		return nil
	}
	if m.conn != "" {
		_ = os.WriteFile(filepath.Join("/sys/fs/fuse/connections", m.conn, "abort"), []byte("1"), 0o200)
	}
	err := syscall.Unmount(m.dir, syscall.MNT_DETACH)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		err = nil // not mounted (any more), or its folder is gone with it
	}
	done := make(chan struct{})
	go func() { m.server.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		err = errors.Join(err, fmt.Errorf("standin: FUSE server of %s did not stop within 10 s", m.dir))
	}
	m.server = nil
	return err
}

// treeNode is one path of the tree (looked up afresh on every request).
type treeNode struct {
	gofs.Inode
	m    *treeMount
	path string
}

var (
	_ gofs.NodeLookuper   = (*treeNode)(nil)
	_ gofs.NodeReaddirer  = (*treeNode)(nil)
	_ gofs.NodeGetattrer  = (*treeNode)(nil)
	_ gofs.NodeReadlinker = (*treeNode)(nil)
	_ gofs.NodeOpener     = (*treeNode)(nil)
	_ gofs.NodeReader     = (*treeNode)(nil)
)

// sysfsSize is the size sysfs reports for every attribute file (a page);
// reads go to the server (direct I/O) and end at the value's end.
const sysfsSize = 4096

func fuseMode(m iofs.FileMode) uint32 {
	switch {
	case m&iofs.ModeDir != 0:
		return syscall.S_IFDIR | 0o555
	case m&iofs.ModeSymlink != 0:
		return syscall.S_IFLNK | 0o777
	}
	return syscall.S_IFREG | 0o444
}

func fillAttr(a *fuse.Attr, mode uint32) {
	a.Mode = mode
	a.Nlink = 1
	if mode&syscall.S_IFMT == syscall.S_IFREG {
		a.Size = sysfsSize
	}
}

func (n *treeNode) child(name string) string {
	if n.path == "." {
		return name
	}
	return path.Join(n.path, name)
}

// Lookup implements gofs.NodeLookuper.
func (n *treeNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p := n.child(name)
	fi, err := iofs.Lstat(n.m.tree(), p)
	if err != nil {
		return nil, syscall.ENOENT
	}
	mode := fuseMode(fi.Mode())
	fillAttr(&out.Attr, mode)
	return n.NewInode(ctx, &treeNode{m: n.m, path: p}, gofs.StableAttr{Mode: mode & syscall.S_IFMT}), 0
}

// Getattr implements gofs.NodeGetattrer.
func (n *treeNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fi, err := iofs.Lstat(n.m.tree(), n.path)
	if err != nil {
		return syscall.ENOENT
	}
	fillAttr(&out.Attr, fuseMode(fi.Mode()))
	return 0
}

// Readdir implements gofs.NodeReaddirer.
func (n *treeNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	es, err := iofs.ReadDir(n.m.tree(), n.path)
	if err != nil {
		return nil, syscall.ENOENT
	}
	out := make([]fuse.DirEntry, 0, len(es))
	for _, e := range es {
		out = append(out, fuse.DirEntry{Name: e.Name(), Mode: fuseMode(e.Type()) & syscall.S_IFMT})
	}
	return gofs.NewListDirStream(out), 0
}

// Readlink implements gofs.NodeReadlinker.
func (n *treeNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, err := iofs.ReadLink(n.m.tree(), n.path)
	if err != nil {
		return nil, syscall.EINVAL
	}
	return []byte(t), 0
}

// treeFile is an open attribute: its value when it was opened.
type treeFile struct{ data []byte }

// Open implements gofs.NodeOpener: the value is read now (an open sysfs
// attribute shows the value of its first read).
func (n *treeNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, 0, syscall.EROFS
	}
	b, err := iofs.ReadFile(n.m.tree(), n.path)
	if err != nil {
		return nil, 0, syscall.ENOENT
	}
	return &treeFile{data: b}, fuse.FOPEN_DIRECT_IO, 0
}

// Read implements gofs.NodeReader.
func (n *treeNode) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f, ok := fh.(*treeFile)
	if !ok {
		return nil, syscall.EBADF
	}
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(f.data)))
	return fuse.ReadResultData(f.data[off:end]), 0
}
