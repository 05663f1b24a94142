package images

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Deb is one Debian package file in the cache.
type Deb struct {
	Package, Version string
	// File is the .deb's path.
	File string
}

// Debian fetches Debian packages into Cache with apt-get and unpacks them
// with dpkg-deb.
type Debian struct {
	// Cache is the folder the .deb files are kept in (created if missing).
	Cache string
	// Logf receives one line per download batch (nil: discarded).
	Logf func(format string, args ...any)
}

func (d Debian) logf(format string, args ...any) {
	if d.Logf != nil {
		d.Logf(format, args...)
	}
}

// Closure is pkgs and every package they depend on or pre-depend on,
// recursively (apt-cache depends --recurse, without recommends or
// suggests; virtual packages are left out: a real package providing one
// is listed beside it), sorted by name.
func (d Debian) Closure(ctx context.Context, pkgs ...string) ([]string, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances"}, pkgs...)
	out, err := run(ctx, "", "apt-cache", args...)
	if err != nil {
		return nil, err
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "<") {
			continue
		}
		if !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Fetch makes sure the candidate version of every package of pkgs is in
// Cache and returns them in pkgs' order. Files already there are not
// fetched again; apt-get checks each download's hash.
func (d Debian) Fetch(ctx context.Context, pkgs []string) ([]Deb, error) {
	if err := os.MkdirAll(d.Cache, 0o755); err != nil {
		return nil, err
	}
	// apt-get download leaves out a file already in its folder, even with
	// --print-uris: ask in an empty one.
	empty, err := os.MkdirTemp("", "fiomig-apt-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(empty)
	args := append([]string{"download", "--print-uris"}, pkgs...)
	out, err := run(ctx, empty, "apt-get", args...)
	if err != nil && os.Geteuid() == 0 {
		// A fresh machine may have no package lists yet.
		d.logf("images: %v; running apt-get update once", err)
		if _, uerr := run(ctx, "", "apt-get", "update", "-qq"); uerr == nil {
			out, err = run(ctx, empty, "apt-get", args...)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w (apt-get update may help)", err)
	}
	// Each line: 'URI' FILE SIZE HASH.
	var debs []Deb
	var missing []string
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasSuffix(f[1], ".deb") {
			continue
		}
		parts := strings.SplitN(strings.TrimSuffix(f[1], ".deb"), "_", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("apt-get download --print-uris: unexpected file name %q", f[1])
		}
		version := strings.ReplaceAll(parts[1], "%3a", ":")
		deb := Deb{Package: parts[0], Version: version, File: filepath.Join(d.Cache, f[1])}
		debs = append(debs, deb)
		if _, err := os.Stat(deb.File); err != nil {
			missing = append(missing, deb.Package+"="+version)
		}
	}
	if len(debs) != len(pkgs) {
		return nil, fmt.Errorf("apt-get download --print-uris: %d package files for %d packages", len(debs), len(pkgs))
	}
	if len(missing) > 0 {
		d.logf("images: apt-get download %d Debian packages into %s", len(missing), d.Cache)
		if _, err := run(ctx, d.Cache, "apt-get", append([]string{"download", "-q"}, missing...)...); err != nil {
			return nil, err
		}
	}
	return debs, nil
}

// Unpack extracts every deb into root (dpkg-deb -x: files only, no
// maintainer scripts run).
func Unpack(ctx context.Context, root string, debs []Deb) error {
	for _, deb := range debs {
		if _, err := run(ctx, "", "dpkg-deb", "-x", deb.File, root); err != nil {
			return err
		}
	}
	return nil
}

// libDirs are where the dynamic loader of Debian's glibc looks for a
// DT_NEEDED library that has no slash (its multiarch and plain system
// directories; no ld.so.cache is in the image).
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib", "/lib64", "/usr/lib64"}

// ELFClosure returns the paths (absolute inside root) that executable exe
// needs to run: exe itself, its ELF interpreter (PT_INTERP) and the
// DT_NEEDED closure of exe and of each library, each library under the
// name it is looked up by (the first of the needing object's DT_RUNPATH
// or DT_RPATH directories, then libDirs, that has it + the needed name),
// sorted. A needed library found nowhere is an error naming it and who
// needs it.
func ELFClosure(root, exe string) ([]string, error) {
	seen := map[string]bool{}
	var walk func(p, by string) error
	walk = func(p, by string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		real, err := resolve(root, p)
		if err != nil {
			if by != "" {
				return fmt.Errorf("%s needs %s: %w", by, p, err)
			}
			return err
		}
		f, err := elf.Open(filepath.Join(root, real))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: PT_INTERP: %w", p, err)
			}
			if err := walk(string(bytes.TrimRight(b, "\x00")), p); err != nil {
				return err
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: DT_NEEDED: %w", p, err)
		}
		// DT_RUNPATH (or the older DT_RPATH) directories come first for
		// this object's own needs ($ORIGIN: the object's directory).
		var dirs []string
		for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
			vals, _ := f.DynString(tag)
			for _, v := range vals {
				for _, d := range strings.Split(v, ":") {
					dirs = append(dirs, strings.ReplaceAll(d, "$ORIGIN", path.Dir(p)))
				}
			}
		}
		dirs = append(dirs, libDirs...)
		for _, lib := range needed {
			found := ""
			for _, dir := range dirs {
				if _, err := resolve(root, path.Join(dir, lib)); err == nil {
					found = path.Join(dir, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which no unpacked package has in %v", p, lib, dirs)
			}
			if err := walk(found, p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(exe, ""); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// resolve follows symbolic links of p's last component inside root (an
// absolute target is taken relative to root) and returns the path of the
// regular file it ends at.
func resolve(root, p string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file", p)
			}
			return p, nil
		}
		t, err := os.Readlink(filepath.Join(root, p))
		if err != nil {
			return "", err
		}
		if path.IsAbs(t) {
			p = t
		} else {
			p = path.Join(path.Dir(p), t)
		}
	}
	return "", fmt.Errorf("%s: too many symbolic links", p)
}

// run runs name with args in dir and returns its standard output; an
// error carries the command and its standard error.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || stderr.Len() > 0 {
			return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
