package workload

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MountInfoFile is the calling process's mount table (proc(5)
// /proc/[pid]/mountinfo).
const MountInfoFile = "/proc/self/mountinfo"

// MountEntry is one line of a mountinfo file (proc(5)): "36 35 98:0 /mnt1
// /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
type MountEntry struct {
	// MountID is field 1, the mount's unique id.
	MountID int
	// Major and Minor are field 3, st_dev of files on the mount; a FUSE
	// mount's connection is /sys/fs/fuse/connections/<Minor>.
	Major, Minor int
	// MountPoint is field 5, with the kernel's octal escapes (\040) undone.
	MountPoint string
	// FSType is the first field after the " - " separator ("fuse.fiomig").
	FSType string
	// Source is the field after it (the fs name, "fiomig").
	Source string
}

// ParseMountInfo reads a mountinfo file; name is used in errors, which
// name the 1-based line.
func ParseMountInfo(r io.Reader, name string) ([]MountEntry, error) {
	var out []MountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		f := strings.Fields(text)
		sep := -1
		for i, x := range f {
			if x == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("%s:%d: malformed mountinfo line %q", name, line, text)
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: mount id %q: %w", name, line, f[0], err)
		}
		maj, min, ok := strings.Cut(f[2], ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: device %q: want major:minor", name, line, f[2])
		}
		e := MountEntry{MountID: id, MountPoint: unescapeMount(f[4])}
		if e.Major, err = strconv.Atoi(maj); err == nil {
			e.Minor, err = strconv.Atoi(min)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: device %q: %w", name, line, f[2], err)
		}
		e.FSType = f[sep+1]
		if sep+2 < len(f) {
			e.Source = unescapeMount(f[sep+2])
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return out, nil
}

// unescapeMount undoes the kernel's octal escapes of space, tab, newline
// and backslash in mountinfo paths (fs/proc_namespace.c mangle).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsAt returns the entries of MountInfoFile whose mount point is dir
// (made absolute and cleaned).
func mountsAt(dir string) ([]MountEntry, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(MountInfoFile)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer fh.Close()
	all, err := ParseMountInfo(fh, MountInfoFile)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	var out []MountEntry
	for _, e := range all {
		if e.MountPoint == abs {
			out = append(out, e)
		}
	}
	return out, nil
}

// Mounted reports whether anything is mounted at dir, from
// /proc/self/mountinfo.
func Mounted(dir string) (bool, error) {
	es, err := mountsAt(dir)
	return len(es) > 0, err
}

// fuseConnection returns the FUSE connection id (the device minor) of the
// FUSE mount at dir.
func fuseConnection(dir string) (string, error) {
	es, err := mountsAt(dir)
	if err != nil {
		return "", err
	}
	for i := len(es) - 1; i >= 0; i-- {
		if strings.HasPrefix(es[i].FSType, "fuse") {
			return strconv.Itoa(es[i].Minor), nil
		}
	}
	return "", fmt.Errorf("workload: no FUSE mount at %s", dir)
}
