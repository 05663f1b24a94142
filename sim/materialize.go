package sim

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Materialize writes the tree fsys (a rendered sysfs) under dir on disk:
// directories, regular files with their permission bits, and symbolic links
// as links (relative targets kept), so that real tools (nvme-cli, libnvme)
// can read it as /sys. dir must exist. Files that cannot be read (the
// write-only trigger files) are created empty with their mode.
func Materialize(fsys fs.FS, dir string) error {
	rl, _ := fsys.(fs.ReadLinkFS)
	var walk func(p string) error
	walk = func(p string) error {
		ents, err := fs.ReadDir(fsys, p)
		if err != nil {
			return fmt.Errorf("materialize %s: %w", p, err)
		}
		for _, e := range ents {
			rel := e.Name()
			if p != "." {
				rel = p + "/" + e.Name()
			}
			dst := filepath.Join(dir, filepath.FromSlash(rel))
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				if rl == nil {
					return fmt.Errorf("materialize %s: symlink in a tree without ReadLink", rel)
				}
				target, err := rl.ReadLink(rel)
				if err != nil {
					return fmt.Errorf("materialize %s: %w", rel, err)
				}
				if err := os.Symlink(target, dst); err != nil {
					return fmt.Errorf("materialize %s: %w", rel, err)
				}
			case e.IsDir():
				if err := os.Mkdir(dst, 0o755); err != nil {
					return fmt.Errorf("materialize %s: %w", rel, err)
				}
				if err := walk(rel); err != nil {
					return err
				}
			default:
				info, err := e.Info()
				if err != nil {
					return fmt.Errorf("materialize %s: %w", rel, err)
				}
				data, err := fs.ReadFile(fsys, rel)
				if err != nil {
					data = nil
				}
				if err := os.WriteFile(dst, data, info.Mode().Perm()|0o200); err != nil {
					return fmt.Errorf("materialize %s: %w", rel, err)
				}
				if err := os.Chmod(dst, info.Mode().Perm()); err != nil {
					return fmt.Errorf("materialize %s: %w", rel, err)
				}
			}
		}
		return nil
	}
	return walk(".")
}
