package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// IOState is what a volume's multipath head does with an I/O right now.
type IOState int

const (
	// Serve: a usable path exists; the I/O goes to the backing file.
	Serve IOState = iota
	// Wait: no usable path, but a controller may still recover; the I/O is
	// held (the kernel requeues it) until the state changes.
	Wait
	// Fail: no path can come back; the I/O fails with EIO (the head's
	// "no available path - failing I/O", BLK_STS_IOERR).
	Fail
)

// String names the state: "serve", "wait" or "fail".
func (s IOState) String() string {
	switch s {
	case Serve:
		return "serve"
	case Wait:
		return "wait"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("IOState(%d)", int(s))
}

// Paths tells the FUSE volumes what each volume's multipath head does. It is
// called from FUSE request goroutines, concurrently.
type Paths interface {
	// State returns what an I/O to volume would do now, and a channel that
	// is closed once the state may have changed (a held I/O waits on it).
	State(volume string) (IOState, <-chan struct{})
}

// Volume is one volume exposed as a file.
type Volume struct {
	// Name is the file name on the mount (and the fio job name).
	Name string
	// Size is the file's size in bytes; the backing file is sparse.
	Size int64
}

// Counters are a volume's I/O as the FUSE layer saw it, cumulative since
// the mount (Waiting is the current count).
type Counters struct {
	// Completed reads and writes (served by the backing file).
	Completed int64 `json:"completed"`
	// Errors: I/Os failed with EIO because the head said no path can come back.
	Errors int64 `json:"errors"`
	// DrainErrors: I/Os failed with DrainErrno because the mount was being
	// drained to let fio stop (after the run, never during it).
	DrainErrors int64 `json:"drain_errors"`
	// Held is how many I/Os had to wait for a path; Waiting is how many
	// wait now.
	Held    int64 `json:"held"`
	Waiting int64 `json:"waiting"`
	// Corrupted is how many writes were stored corrupted (CorruptWrite).
	Corrupted int64 `json:"corrupted"`
}

// Corruption is one block stored corrupted underneath fio.
type Corruption struct {
	Volume string `json:"volume"`
	// Offset and Length are the write's bytes in the file; the last
	// CorruptBytes of it were inverted.
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// CorruptBytes is how many bytes at the end of a corrupted write are
// inverted: inside the data, past fio's verify header, so fio's checksum
// (not its header check) catches it.
const CorruptBytes = 16

// DrainErrno is what held and new I/O fail with once the mount drains:
// ENOTCONN, what a FUSE file answers when its daemon goes away.
const DrainErrno = syscall.ENOTCONN

// MountOptions configure Mount.
type MountOptions struct {
	// Dir is the mount point; it is created if missing.
	Dir string
	// BackingDir holds the backing files (<name>.img); created if missing.
	BackingDir string
	// Paths decides every I/O; nil serves everything.
	Paths Paths
	// Debug logs every FUSE request (go-fuse's debug output) to stderr.
	Debug bool
}

// FS is a mounted set of volumes.
type FS struct {
	dir    string
	server *fuse.Server
	paths  Paths
	vols   map[string]*volFile
	names  []string

	drain     chan struct{}
	drainOnce sync.Once

	mu          sync.Mutex
	corruptions []Corruption
	unmounted   bool
}

// volFile is one volume's file node.
type volFile struct {
	fs.Inode
	owner   *FS
	name    string
	size    int64
	backing *os.File
	c       counters
	// corruptIn counts writes down to the one to corrupt (0 = disarmed).
	corruptIn atomic.Int64
}

type counters struct {
	completed, errors, drainErrors, held, waiting, corrupted atomic.Int64
}

var (
	_ fs.NodeOpener    = (*volFile)(nil)
	_ fs.NodeReader    = (*volFile)(nil)
	_ fs.NodeWriter    = (*volFile)(nil)
	_ fs.NodeGetattrer = (*volFile)(nil)
	_ fs.NodeSetattrer = (*volFile)(nil)
	_ fs.NodeFsyncer   = (*volFile)(nil)
	_ fs.NodeFlusher   = (*volFile)(nil)
)

// Mount creates the backing files (sparse, each its volume's size) and
// mounts the volumes at opts.Dir with mount(2) directly (root and /dev/fuse
// are needed, fusermount is not), /dev/fuse opened close-on-exec so that
// no child process (fio) inherits the FUSE connection (see mountFUSE);
// go-fuse serves it.
// Every file is opened with FOPEN_DIRECT_IO, so each read and write reaches
// this process. Errors name the path; on error nothing stays mounted.
func Mount(opts MountOptions, vols []Volume) (*FS, error) {
	if len(vols) == 0 {
		return nil, errors.New("workload: mount: no volume")
	}
	for _, d := range []string{opts.Dir, opts.BackingDir} {
		if d == "" {
			return nil, errors.New("workload: mount: Dir and BackingDir are required")
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("workload: mount: %w", err)
		}
	}
	f := &FS{dir: opts.Dir, paths: opts.Paths, vols: map[string]*volFile{}, drain: make(chan struct{})}
	closeBacking := func() {
		for _, v := range f.vols {
			v.backing.Close()
		}
	}
	for _, v := range vols {
		if v.Name == "" || filepath.Base(v.Name) != v.Name || v.Size <= 0 {
			closeBacking()
			return nil, fmt.Errorf("workload: mount: bad volume %+v (a plain file name and a size > 0)", v)
		}
		if _, dup := f.vols[v.Name]; dup {
			closeBacking()
			return nil, fmt.Errorf("workload: mount: volume %s given twice", v.Name)
		}
		p := filepath.Join(opts.BackingDir, v.Name+".img")
		b, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = b.Truncate(v.Size)
		}
		if err != nil {
			closeBacking()
			return nil, fmt.Errorf("workload: backing file %s: %w", p, err)
		}
		f.vols[v.Name] = &volFile{owner: f, name: v.Name, size: v.Size, backing: b}
		f.names = append(f.names, v.Name)
	}
	sort.Strings(f.names)

	fd, err := mountFUSE(opts.Dir, fuseMaxWrite)
	if err != nil {
		closeBacking()
		return nil, fmt.Errorf("workload: mount FUSE at %s: %w", opts.Dir, err)
	}
	root := &fs.Inode{}
	sec := time.Second
	// go-fuse serves the descriptor we opened and mounted: the "/dev/fd/N"
	// mount point hands it over (fuse.NewServer), and go-fuse now owns it.
	server, err := fs.Mount(fmt.Sprintf("/dev/fd/%d", fd), root, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:   "fiomig",
			Name:     "fiomig",
			Debug:    opts.Debug,
			MaxWrite: fuseMaxWrite,
			// fio's O_DIRECT I/O of one job is synchronous per request;
			// a generous background limit keeps held requests from
			// starving others.
			MaxBackground: 64,
		},
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		OnAdd: func(ctx context.Context) {
			for _, name := range f.names {
				v := f.vols[name]
				ch := root.NewPersistentInode(ctx, v, fs.StableAttr{Mode: syscall.S_IFREG})
				root.AddChild(name, ch, true)
			}
		},
	})
	if err != nil {
		syscall.Unmount(opts.Dir, syscall.MNT_DETACH)
		closeBacking()
		return nil, fmt.Errorf("workload: serve FUSE at %s: %w", opts.Dir, err)
	}
	f.server = server
	return f, nil
}

// fuseMaxWrite is the largest write (and read, max_read) request of the
// mount: go-fuse's default, 128 KiB.
const fuseMaxWrite = 128 * 1024

// FSType is the file system type of the volumes' mounts in
// /proc/self/mountinfo ("fuse." + the mount's name).
const FSType = "fuse.fiomig"

// mountFUSE opens /dev/fuse close-on-exec and mounts it at dir with
// mount(2) (root needed), as fusermount would: fsname fiomig, type
// fuse.fiomig, nosuid, nodev. It returns the descriptor, which the caller
// must serve (or close). Close-on-exec matters: a child that inherited the
// descriptor (fio) would keep the FUSE connection alive after fiomig dies,
// and hang on it instead of getting ENOTCONN; go-fuse's own direct mount
// opens /dev/fuse without O_CLOEXEC (fuse/mount_linux.go mountDirect).
func mountFUSE(dir string, maxWrite int) (int, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return -1, fmt.Errorf("stat mount point: %w", err)
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/fuse: %w", err)
	}
	data := fmt.Sprintf("fd=%d,rootmode=%o,user_id=%d,group_id=%d,max_read=%d",
		fd, st.Mode&syscall.S_IFMT, os.Geteuid(), os.Getegid(), maxWrite)
	if err := syscall.Mount("fiomig", dir, FSType, syscall.MS_NOSUID|syscall.MS_NODEV, data); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("mount(2): %w", err)
	}
	return fd, nil
}

// Dir is the mount point.
func (f *FS) Dir() string { return f.dir }

// Path is the file of volume name on the mount.
func (f *FS) Path(name string) string { return filepath.Join(f.dir, name) }

// Volumes are the volume names, sorted.
func (f *FS) Volumes() []string { return append([]string(nil), f.names...) }

// Counters returns volume name's counters (zero for an unknown volume).
func (f *FS) Counters(name string) Counters {
	v, ok := f.vols[name]
	if !ok {
		return Counters{}
	}
	return Counters{
		Completed: v.c.completed.Load(), Errors: v.c.errors.Load(), DrainErrors: v.c.drainErrors.Load(),
		Held: v.c.held.Load(), Waiting: v.c.waiting.Load(), Corrupted: v.c.corrupted.Load(),
	}
}

// CorruptWrite arms volume name so that its n-th write from now (n >= 1) is
// stored with its last CorruptBytes bytes inverted, underneath fio: fio's
// verify must then report that block. Corruptions lists what was done.
func (f *FS) CorruptWrite(name string, n int64) error {
	v, ok := f.vols[name]
	if !ok {
		return fmt.Errorf("workload: corrupt: no volume %s", name)
	}
	if n < 1 {
		return fmt.Errorf("workload: corrupt %s: n must be >= 1, got %d", name, n)
	}
	v.corruptIn.Store(n)
	return nil
}

// Corruptions are the writes stored corrupted so far, in order.
func (f *FS) Corruptions() []Corruption {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Corruption(nil), f.corruptions...)
}

// Drain releases every held I/O and fails it, and every later one, with
// DrainErrno, so that a process stuck on a volume can exit. Idempotent.
func (f *FS) Drain() { f.drainOnce.Do(func() { close(f.drain) }) }

func (f *FS) draining() bool {
	select {
	case <-f.drain:
		return true
	default:
		return false
	}
}

// UnmountTimeout is how long Unmount retries a busy unmount (a process
// that just exited may still hold a file of the mount for a moment, longer
// on a loaded machine) and then waits for the FUSE server to stop, before
// it detaches the mount lazily with its connection aborted; scaled by
// LoadFactor.
const UnmountTimeout = 20 * time.Second

// Unmount drains (see Drain), unmounts and closes the backing files. A busy
// mount is retried for UnmountTimeout (scaled by LoadFactor), then
// detached lazily (MNT_DETACH) with its FUSE connection aborted so no
// caller hangs. It returns an error if the mount point is still mounted
// afterwards, or if it needed the lazy detach. Idempotent.
func (f *FS) Unmount() error {
	f.mu.Lock()
	if f.unmounted {
		f.mu.Unlock()
		return nil
	}
	f.unmounted = true
	f.mu.Unlock()
	f.Drain()

	var errs []error
	timeout := scaled(UnmountTimeout)
	deadline := time.Now().Add(timeout)
	uerr := unmountBusy(f.dir, deadline)
	if uerr == nil {
		served := make(chan struct{})
		go func() { f.server.Wait(); close(served) }()
		select {
		case <-served:
		case <-time.After(time.Until(deadline)):
			uerr = fmt.Errorf("the FUSE server did not stop within %v of the unmount", timeout)
		}
	}
	if uerr != nil {
		errs = append(errs, fmt.Errorf("unmount %s: %w", f.dir, uerr))
		if err := abortAndDetach(f.dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, v := range f.vols {
		if err := v.backing.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if m, err := Mounted(f.dir); err != nil {
		errs = append(errs, err)
	} else if m {
		errs = append(errs, fmt.Errorf("workload: %s is still mounted", f.dir))
	} else if uerr != nil {
		// Detached cleanly after all: report what happened, but nothing
		// is left behind.
		return fmt.Errorf("workload: unmount needed a lazy detach: %w", errors.Join(errs...))
	}
	return errors.Join(errs...)
}

// unmountBusy unmounts dir, retrying while it is busy until deadline. Not
// mounted (EINVAL) counts as done.
func unmountBusy(dir string, deadline time.Time) error {
	delay := 5 * time.Millisecond
	for {
		err := syscall.Unmount(dir, 0)
		if err == nil || errors.Is(err, syscall.EINVAL) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// abortAndDetach aborts the FUSE connection of the mount at dir (so that
// nothing waiting on it hangs: a detached mount would otherwise wait for
// its last user forever) and detaches it lazily.
func abortAndDetach(dir string) error {
	if conn, err := fuseConnection(dir); err == nil {
		_ = os.WriteFile(filepath.Join("/sys/fs/fuse/connections", conn, "abort"), []byte("1"), 0o200)
	}
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("lazy unmount %s: %w", dir, err)
	}
	return nil
}

// admit decides one I/O: 0 to serve it, or the errno to fail it with. It
// holds the I/O while the head says Wait, until the state changes, the
// mount drains or the request is interrupted.
func (v *volFile) admit(ctx context.Context) syscall.Errno {
	f := v.owner
	held := false
	defer func() {
		if held {
			v.c.waiting.Add(-1)
		}
	}()
	for {
		if f.draining() {
			v.c.drainErrors.Add(1)
			return DrainErrno
		}
		st, changed := Serve, (<-chan struct{})(nil)
		if f.paths != nil {
			st, changed = f.paths.State(v.name)
		}
		switch st {
		case Serve:
			return 0
		case Fail:
			v.c.errors.Add(1)
			return syscall.EIO
		}
		if !held {
			held = true
			v.c.held.Add(1)
			v.c.waiting.Add(1)
		}
		select {
		case <-changed:
		case <-f.drain:
		case <-ctx.Done():
			return syscall.EINTR
		}
	}
}

// Open implements fs.NodeOpener: no file handle, direct I/O (no page cache:
// every read and write comes here, as O_DIRECT I/O reaches a block device).
func (v *volFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

// Getattr implements fs.NodeGetattrer.
func (v *volFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = uint64(v.size)
	out.Blksize = 4096
	out.Blocks = uint64((v.size + 511) / 512)
	out.Nlink = 1
	return 0
}

// Setattr implements fs.NodeSetattrer: a volume's size is fixed; other
// attribute changes are accepted and ignored.
func (v *volFile) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && int64(sz) != v.size {
		return syscall.EPERM
	}
	return v.Getattr(ctx, fh, out)
}

// Read implements fs.NodeReader through the head's rule.
func (v *volFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := v.admit(ctx); errno != 0 {
		return nil, errno
	}
	if off >= v.size {
		return fuse.ReadResultData(nil), 0
	}
	if rest := v.size - off; int64(len(dest)) > rest {
		dest = dest[:rest]
	}
	n, err := v.backing.ReadAt(dest, off)
	if err != nil && n < len(dest) {
		return nil, syscall.EIO
	}
	v.c.completed.Add(1)
	return fuse.ReadResultData(dest[:n]), 0
}

// Write implements fs.NodeWriter through the head's rule.
func (v *volFile) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := v.admit(ctx); errno != 0 {
		return 0, errno
	}
	if off+int64(len(data)) > v.size {
		return 0, syscall.ENOSPC
	}
	buf := data
	if v.corruptIn.Load() > 0 && v.corruptIn.Add(-1) == 0 {
		buf = append([]byte(nil), data...)
		for i := max(0, len(buf)-CorruptBytes); i < len(buf); i++ {
			buf[i] = ^buf[i]
		}
		v.c.corrupted.Add(1)
		f := v.owner
		f.mu.Lock()
		f.corruptions = append(f.corruptions, Corruption{Volume: v.name, Offset: off, Length: int64(len(data))})
		f.mu.Unlock()
	}
	if _, err := v.backing.WriteAt(buf, off); err != nil {
		return 0, syscall.EIO
	}
	v.c.completed.Add(1)
	return uint32(len(data)), 0
}

// Fsync implements fs.NodeFsyncer: a flush goes through the head too.
func (v *volFile) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	return v.admit(ctx)
}

// Flush implements fs.NodeFlusher (close(2)); nothing is buffered here.
func (v *volFile) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno { return 0 }
