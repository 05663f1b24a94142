package sim

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// treeFS is an immutable in-memory file tree with directories, regular files
// and symbolic links: the rendered sysfs of one host at one instant. It
// implements fs.FS, fs.ReadDirFS, fs.ReadFileFS, fs.StatFS and
// fs.ReadLinkFS. Open, Stat, ReadFile and ReadDir follow symbolic links (as
// os.DirFS on a real /sys does); Lstat and ReadLink do not, and ReadDir
// reports a link entry with fs.ModeSymlink, not as a directory, as the
// kernel's class/ entries are reported on a real /sys.
//
// Lookups are a map lookup of the directory and a binary search in it, so
// reading a file costs O(log(width)) and nothing is copied on Open; a tree
// costs a node per entry and a map entry per directory to build.
type treeFS struct {
	root *tnode
	// dirs maps every physical directory path (no symlink on the way) to
	// its node; the other nodes are found in their directory (node).
	dirs map[string]*tnode
	// links memoises the targets of the symlinks followed; resolved the
	// directories reached through symlinks (logical path -> node, nil for
	// a path that is no directory), so that reading the files of
	// class/nvme/nvmeN walks the link once, not once a file.
	mu       sync.Mutex
	links    map[string]string
	resolved map[string]*tnode
}

// tnode is one entry of a treeFS.
type tnode struct {
	name     string
	mode     fs.FileMode // fs.ModeDir, fs.ModeSymlink or regular permission bits
	data     string      // regular file content
	link     string      // symlink target, relative to the link's directory
	children []*tnode    // sorted by name (directories)
}

// treeBuilder accumulates entries of a treeFS; children are sorted once in
// build.
type treeBuilder struct {
	root *tnode
	dirs map[string]*tnode
	slab []tnode // nodes are carved from here, a chunk at a time
	// text holds the attribute files' contents, made one string by build
	// (pending: each node's span of it).
	text    []byte
	pending []textSpan
}

type textSpan struct {
	n        *tnode
	from, to int
}

// node returns a new node (from the builder's current chunk).
func (b *treeBuilder) node(n tnode) *tnode {
	if len(b.slab) == 0 {
		b.slab = make([]tnode, 256)
	}
	p := &b.slab[0]
	*p = n
	b.slab = b.slab[1:]
	return p
}

func newTreeBuilder() *treeBuilder {
	root := &tnode{name: ".", mode: fs.ModeDir | 0o755}
	return &treeBuilder{root: root, dirs: map[string]*tnode{".": root}}
}

// dir returns the directory p, creating it and its parents.
func (b *treeBuilder) dir(p string) *tnode {
	if d, ok := b.dirs[p]; ok {
		return d
	}
	parent := b.dir(path.Dir(p))
	d := b.node(tnode{name: path.Base(p), mode: fs.ModeDir | 0o755})
	parent.children = append(parent.children, d)
	b.dirs[p] = d
	return d
}

// file adds a regular file at p (mode 0444 as most sysfs attributes).
func (b *treeBuilder) file(p, content string) {
	b.fileMode(p, content, 0o444)
}

func (b *treeBuilder) fileMode(p, content string, perm fs.FileMode) {
	d := b.dir(path.Dir(p))
	d.children = append(d.children, b.node(tnode{name: path.Base(p), mode: perm, data: content}))
}

// attrs returns a function adding sysfs attribute files to directory p
// (created with its parents): f's content is v plus the newline sysfs
// values end in; an f with a '/' goes in a subdirectory of p.
func (b *treeBuilder) attrs(p string) func(f, v string) {
	d := b.dir(p)
	return func(f, v string) {
		if strings.IndexByte(f, '/') >= 0 {
			b.file(p+"/"+f, v+"\n")
			return
		}
		n := b.node(tnode{name: f, mode: 0o444})
		from := len(b.text)
		b.text = append(append(b.text, v...), '\n')
		b.pending = append(b.pending, textSpan{n, from, len(b.text)})
		d.children = append(d.children, n)
	}
}

// symlink adds a symbolic link at p pointing at target (relative to p's
// directory, as sysfs links are).
func (b *treeBuilder) symlink(p, target string) {
	d := b.dir(path.Dir(p))
	d.children = append(d.children, b.node(tnode{name: path.Base(p), mode: fs.ModeSymlink | 0o777, link: target}))
}

// shared adds nodes of an earlier build to directory p (created with its
// parents): the nodes and their subdirectories are shared, never copied,
// so they must never be modified (build sorts no directory that is
// already sorted).
func (b *treeBuilder) shared(p string, nodes []*tnode) {
	d := b.dir(p)
	d.children = append(d.children, nodes...)
	for _, n := range nodes {
		b.sharedDir(p, n)
	}
}

// sharedEntry adds n, a node of an earlier build, as an entry of
// directory p (created with its parents), shared as in shared.
func (b *treeBuilder) sharedEntry(p string, n *tnode) {
	d := b.dir(p)
	d.children = append(d.children, n)
	b.sharedDir(p, n)
}

// sharedDir registers the shared directory n (an entry of p) and its
// subdirectories in b.dirs.
func (b *treeBuilder) sharedDir(p string, n *tnode) {
	if n.mode&fs.ModeDir == 0 {
		return
	}
	np := p + "/" + n.name
	b.dirs[np] = n
	for _, c := range n.children {
		b.sharedDir(np, c)
	}
}

func (b *treeBuilder) build() *treeFS {
	text := string(b.text)
	for _, p := range b.pending {
		p.n.data = text[p.from:p.to]
	}
	byName := func(x, y *tnode) int { return strings.Compare(x.name, y.name) }
	for _, d := range b.dirs {
		if !slices.IsSortedFunc(d.children, byName) {
			slices.SortFunc(d.children, byName)
		}
	}
	return &treeFS{root: b.root, dirs: b.dirs}
}

// node returns the node at physical path p (no symlink on the way): a
// directory by one map lookup, anything else by a binary search of its
// directory.
func (t *treeFS) node(p string) (*tnode, bool) {
	if d, ok := t.dirs[p]; ok {
		return d, true
	}
	dir, name := ".", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, name = p[:i], p[i+1:]
	}
	d, ok := t.dirs[dir]
	if !ok {
		return nil, false
	}
	n := d.child(name)
	return n, n != nil
}

func (n *tnode) child(name string) *tnode {
	i := sort.Search(len(n.children), func(i int) bool { return n.children[i].name >= name })
	if i < len(n.children) && n.children[i].name == name {
		return n.children[i]
	}
	return nil
}

const maxLinkHops = 16

// lookup resolves name (a valid fs path) to a node; follow says whether a
// symlink in the last element is followed. Symlinks in inner elements are
// always followed. Physical paths (no symlink on the way) are one map
// lookup; a path through symlinks restarts at each link's memoised target.
func (t *treeFS) lookup(op, name string, follow bool) (*tnode, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if n, ok := t.node(name); ok && (n.mode&fs.ModeSymlink == 0 || !follow) {
		return n, nil
	}
	// An entry of a directory resolved before: what walk would find there.
	dir, base := ".", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir, base = name[:i], name[i+1:]
	}
	if d := t.dirNode(dir); d != nil {
		n := d.child(base)
		if n == nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if n.mode&fs.ModeSymlink == 0 || !follow {
			return n, nil
		}
	}
	return t.resolve(op, name, follow)
}

// dirNode is the directory at p, symlinks followed (nil when p is no
// directory): its parent's entry, a symlink among them resolved once and
// memoised in resolved.
func (t *treeFS) dirNode(p string) *tnode {
	if d, ok := t.dirs[p]; ok {
		return d
	}
	if p == "." {
		return nil
	}
	t.mu.Lock()
	d, ok := t.resolved[p]
	t.mu.Unlock()
	if ok {
		return d
	}
	parent, base := ".", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		parent, base = p[:i], p[i+1:]
	}
	pd := t.dirNode(parent)
	if pd == nil {
		return nil
	}
	n := pd.child(base)
	switch {
	case n == nil:
		return nil
	case n.mode&fs.ModeDir != 0:
		return n
	case n.mode&fs.ModeSymlink == 0:
		return nil
	}
	d = nil
	if n, err := t.resolve("stat", p, true); err == nil && n.mode&fs.ModeDir != 0 {
		d = n
	}
	t.mu.Lock()
	if t.resolved == nil {
		t.resolved = map[string]*tnode{}
	}
	t.resolved[p] = d
	t.mu.Unlock()
	return d
}

// resolve is lookup by walking p element by element, restarting at each
// symlink's target.
func (t *treeFS) resolve(op, name string, follow bool) (*tnode, error) {
	p := name
	for hops := 0; ; {
		n, restart, err := t.walk(p, follow)
		if err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		if restart == "" {
			return n, nil
		}
		hops++
		if hops > maxLinkHops {
			return nil, &fs.PathError{Op: op, Path: name, Err: errors.New("too many levels of symbolic links")}
		}
		p = restart
	}
}

// walk resolves p element by element over physical paths. At the first
// symlink that must be followed it returns the path to restart with (the
// link's target joined with the rest of p).
func (t *treeFS) walk(p string, follow bool) (*tnode, string, error) {
	if p == "." {
		return t.root, "", nil
	}
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		prefix := p[:i]
		n, ok := t.node(prefix)
		if !ok {
			return nil, "", fs.ErrNotExist
		}
		last := i == len(p)
		if n.mode&fs.ModeSymlink != 0 && (!last || follow) {
			target := t.linkTarget(prefix, n)
			if target == ".." || strings.HasPrefix(target, "../") {
				return nil, "", fs.ErrNotExist
			}
			if !last && target != "." {
				// p is a valid path: its rest has no "." or ".." element.
				target += "/" + p[i+1:]
			} else if !last {
				target = p[i+1:]
			}
			return nil, target, nil
		}
		if last {
			return n, "", nil
		}
		if n.mode&fs.ModeDir == 0 {
			return nil, "", fs.ErrNotExist
		}
	}
	return nil, "", fs.ErrNotExist
}

// linkTarget is the clean path the symlink n at physical path p points
// at, memoised per link.
func (t *treeFS) linkTarget(p string, n *tnode) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if target, ok := t.links[p]; ok {
		return target
	}
	target := path.Join(path.Dir(p), n.link)
	if t.links == nil {
		t.links = map[string]string{}
	}
	t.links[p] = target
	return target
}

// Open implements fs.FS.
func (t *treeFS) Open(name string) (fs.File, error) {
	n, err := t.lookup("open", name, true)
	if err != nil {
		return nil, err
	}
	if n.mode&fs.ModeDir != 0 {
		return &treeDir{n: n, name: name}, nil
	}
	if n.mode&0o444 == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return &treeFile{n: n, name: name}, nil
}

// ReadFile implements fs.ReadFileFS.
func (t *treeFS) ReadFile(name string) ([]byte, error) {
	n, err := t.lookup("readfile", name, true)
	if err != nil {
		return nil, err
	}
	if n.mode&fs.ModeDir != 0 {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: errors.New("is a directory")}
	}
	if n.mode&0o444 == 0 {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrPermission}
	}
	return []byte(n.data), nil
}

// ReadDir implements fs.ReadDirFS.
func (t *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := t.lookup("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if n.mode&fs.ModeDir == 0 {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	out := make([]fs.DirEntry, len(n.children))
	for i, c := range n.children {
		out[i] = treeEntry{c}
	}
	return out, nil
}

// Stat implements fs.StatFS.
func (t *treeFS) Stat(name string) (fs.FileInfo, error) {
	n, err := t.lookup("stat", name, true)
	if err != nil {
		return nil, err
	}
	return treeInfo{n, path.Base(name)}, nil
}

// Lstat implements fs.ReadLinkFS.
func (t *treeFS) Lstat(name string) (fs.FileInfo, error) {
	n, err := t.lookup("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return treeInfo{n, path.Base(name)}, nil
}

// ReadLink implements fs.ReadLinkFS.
func (t *treeFS) ReadLink(name string) (string, error) {
	n, err := t.lookup("readlink", name, false)
	if err != nil {
		return "", err
	}
	if n.mode&fs.ModeSymlink == 0 {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return n.link, nil
}

type treeInfo struct {
	n    *tnode
	name string
}

func (i treeInfo) Name() string {
	if i.name == "." || i.name == "" {
		return i.n.name
	}
	return i.name
}
func (i treeInfo) Size() int64        { return int64(len(i.n.data)) }
func (i treeInfo) Mode() fs.FileMode  { return i.n.mode }
func (i treeInfo) ModTime() time.Time { return time.Time{} }
func (i treeInfo) IsDir() bool        { return i.n.mode&fs.ModeDir != 0 }
func (i treeInfo) Sys() any           { return nil }

type treeEntry struct{ n *tnode }

func (e treeEntry) Name() string               { return e.n.name }
func (e treeEntry) IsDir() bool                { return e.n.mode&fs.ModeDir != 0 }
func (e treeEntry) Type() fs.FileMode          { return e.n.mode.Type() }
func (e treeEntry) Info() (fs.FileInfo, error) { return treeInfo{e.n, e.n.name}, nil }

type treeFile struct {
	n    *tnode
	name string
	off  int
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return treeInfo{f.n, path.Base(f.name)}, nil }
func (f *treeFile) Close() error               { return nil }
func (f *treeFile) Read(p []byte) (int, error) {
	if f.off >= len(f.n.data) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.off:])
	f.off += k
	return k, nil
}

type treeDir struct {
	n    *tnode
	name string
	off  int
}

func (d *treeDir) Stat() (fs.FileInfo, error) { return treeInfo{d.n, path.Base(d.name)}, nil }
func (d *treeDir) Close() error               { return nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}

// ReadDir implements fs.ReadDirFile.
func (d *treeDir) ReadDir(count int) ([]fs.DirEntry, error) {
	rest := d.n.children[d.off:]
	if count > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if count > 0 && count < len(rest) {
		rest = rest[:count]
	}
	out := make([]fs.DirEntry, len(rest))
	for i, c := range rest {
		out[i] = treeEntry{c}
	}
	d.off += len(rest)
	return out, nil
}
