package nvmeof

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// LoadCapture reads a sysfs capture and returns it as an fs.FS rooted at the
// "sys" directory, ready for ReadSysfs.
//
// The capture format (simplyblock-operator atlas-lib/nvmeof/testdata/sysfs,
// see testdata/sysfs-captures/README.md) is one line per sysfs attribute:
// "<absolute path>\t<value>", the value being the file's content with the
// trailing newline removed; directories appear only through the paths below
// them. Every path must lie under /sys/. Each file of the returned FS holds
// its value plus "\n", as the kernel's attribute would. A trailing "\r" is
// dropped from each line and empty lines are skipped.
//
// Secret attributes (SecretAttrs) keep their place in the tree but not their
// value: their files are empty, and no error message quotes a line that
// names one past the attribute's name.
//
// name is used in errors, which read "name:line: ..." and say what is wrong:
// a line without a tab, a path outside /sys or not clean (".." or empty
// elements), a path given twice, a path that is both a file and a directory.
// Read errors of r are returned wrapped. ReadSysfs, reading the returned FS,
// also names the capture line of a malformed value.
func LoadCapture(r io.Reader, name string) (fs.FS, error) {
	b := newTreeBuilder()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if text == "" {
			continue
		}
		p, value, ok := strings.Cut(text, "\t")
		if !ok {
			return nil, fmt.Errorf("%s:%d: no tab between path and value in %q", name, line, clip(withholdSecret(text)))
		}
		if IsSecretAttr(p) {
			value = ""
		}
		rel, ok := strings.CutPrefix(p, "/sys/")
		if !ok || !fs.ValidPath(rel) || rel == "." {
			return nil, fmt.Errorf("%s:%d: path %q is not a clean absolute path under /sys/", name, line, clip(withholdSecret(p)))
		}
		if err := b.add(rel, value+"\n", fmt.Sprintf("%s:%d", name, line)); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: reading capture: %w", name, line+1, err)
	}
	return b.fs(), nil
}

// FSFromFiles builds an in-memory, read-only fs.FS from a map of slash-separated
// paths relative to the sys root ("class/nvme/nvme0/state") to file contents
// (given verbatim: add the "\n" a kernel attribute ends with yourself).
// Directories are implied by the paths. It is what LoadCapture builds, offered
// for tests and simulators that render a tree. Errors name the offending path:
// not a valid fs path, or both a file and a directory.
func FSFromFiles(files map[string]string) (fs.FS, error) {
	b := newTreeBuilder()
	for _, k := range slices.Sorted(maps.Keys(files)) {
		if !fs.ValidPath(k) || k == "." {
			return nil, fmt.Errorf("path %q is not a valid fs path", k)
		}
		if err := b.add(k, files[k], k); err != nil {
			return nil, err
		}
	}
	return b.fs(), nil
}

// SecretAttrs are the sysfs attributes of a controller that hold key
// material (kernel drivers/nvme/host/sysfs.c: the DH-HMAC-CHAP host and
// controller secrets, the TLS PSK): nothing in fiomig reads, keeps or
// prints their values.
var SecretAttrs = []string{"dhchap_secret", "dhchap_ctrl_secret", "tls_key"}

// IsSecretAttr reports whether the last element of the slash-separated path
// p is one of SecretAttrs.
func IsSecretAttr(p string) bool {
	return slices.Contains(SecretAttrs, path.Base(p))
}

// withholdSecret cuts s after the first secret attribute name it contains,
// so that an error quoting a malformed capture line cannot quote the key.
func withholdSecret(s string) string {
	for _, a := range SecretAttrs {
		if i := strings.Index(s, a); i >= 0 {
			return s[:i+len(a)] + " [value withheld]"
		}
	}
	return s
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// memNode is one file or directory of a memFS.
type memNode struct {
	name     string
	dir      bool
	data     string
	origin   string // where it came from ("capture.tsv:12"), for error messages
	children map[string]*memNode
	sorted   []*memNode // children by name, filled by treeBuilder.fs
}

type treeBuilder struct{ root *memNode }

func newTreeBuilder() *treeBuilder {
	return &treeBuilder{root: &memNode{name: ".", dir: true, children: map[string]*memNode{}}}
}

func (b *treeBuilder) add(rel, data, origin string) error {
	n := b.root
	elems := strings.Split(rel, "/")
	for i, e := range elems {
		last := i == len(elems)-1
		c, ok := n.children[e]
		switch {
		case !ok && last:
			n.children[e] = &memNode{name: e, data: data, origin: origin}
			return nil
		case !ok:
			c = &memNode{name: e, dir: true, origin: origin, children: map[string]*memNode{}}
			n.children[e] = c
		case last && c.dir:
			return fmt.Errorf("%q is a file here but a directory at %s", rel, c.origin)
		case last:
			return fmt.Errorf("%q given again (first at %s)", rel, c.origin)
		case !c.dir:
			return fmt.Errorf("%q needs %q to be a directory, but it is a file at %s",
				rel, strings.Join(elems[:i+1], "/"), c.origin)
		}
		n = c
	}
	return nil
}

func (b *treeBuilder) fs() *memFS {
	var sortTree func(n *memNode)
	sortTree = func(n *memNode) {
		n.sorted = make([]*memNode, 0, len(n.children))
		for _, c := range n.children {
			n.sorted = append(n.sorted, c)
			if c.dir {
				sortTree(c)
			}
		}
		sort.Slice(n.sorted, func(i, j int) bool { return n.sorted[i].name < n.sorted[j].name })
	}
	sortTree(b.root)
	return &memFS{root: b.root}
}

// memFS is an immutable in-memory tree; safe for concurrent use.
type memFS struct{ root *memNode }

var (
	_ fs.ReadDirFS  = (*memFS)(nil)
	_ fs.ReadFileFS = (*memFS)(nil)
	_ fs.StatFS     = (*memFS)(nil)
)

func (m *memFS) lookup(op, name string) (*memNode, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n := m.root
	if name == "." {
		return n, nil
	}
	for _, e := range strings.Split(name, "/") {
		if !n.dir {
			return nil, &fs.PathError{Op: op, Path: name, Err: errNotDir}
		}
		c, ok := n.children[e]
		if !ok {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		n = c
	}
	return n, nil
}

var errNotDir = errors.New("not a directory")

// Origin returns where name came from (for a capture "file.tsv:line"), or ""
// when name is not in the tree. ReadSysfs uses it in error messages.
func (m *memFS) Origin(name string) string {
	n, err := m.lookup("origin", name)
	if err != nil {
		return ""
	}
	return n.origin
}

func (m *memFS) Open(name string) (fs.File, error) {
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return &memDir{node: n}, nil
	}
	return &memFile{node: n, r: strings.NewReader(n.data)}, nil
}

func (m *memFS) ReadFile(name string) ([]byte, error) {
	n, err := m.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	return []byte(n.data), nil
}

var errIsDir = errors.New("is a directory")

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := m.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	out := make([]fs.DirEntry, len(n.sorted))
	for i, c := range n.sorted {
		out[i] = memInfo{c}
	}
	return out, nil
}

func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return memInfo{n}, nil
}

// memInfo is both the fs.FileInfo and the fs.DirEntry of a node.
type memInfo struct{ n *memNode }

func (i memInfo) Name() string { return path.Base(i.n.name) }
func (i memInfo) Size() int64  { return int64(len(i.n.data)) }
func (i memInfo) Mode() fs.FileMode {
	if i.n.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i memInfo) ModTime() time.Time         { return time.Time{} }
func (i memInfo) IsDir() bool                { return i.n.dir }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }

type memFile struct {
	node *memNode
	r    *strings.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f.node}, nil }
func (f *memFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	node *memNode
	off  int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return memInfo{d.node}, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.node.name, Err: errIsDir}
}
func (d *memDir) Close() error { return nil }

func (d *memDir) ReadDir(count int) ([]fs.DirEntry, error) {
	rest := d.node.sorted[d.off:]
	if count > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if count > 0 && count < len(rest) {
		rest = rest[:count]
	}
	d.off += len(rest)
	out := make([]fs.DirEntry, len(rest))
	for i, c := range rest {
		out[i] = memInfo{c}
	}
	return out, nil
}
