package workload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Available reports why real fio through FUSE cannot run here, or nil: fio
// must be in PATH, /dev/fuse must open read-write, the process must be root
// (the volumes are mounted with mount(2) directly), and a trial mount of a
// one-byte volume in a temporary directory must succeed (a container
// without CAP_SYS_ADMIN fails there).
func Available() error {
	var errs []error
	if _, err := FioBinary(""); err != nil {
		errs = append(errs, err)
	}
	if fh, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		errs = append(errs, fmt.Errorf("workload: /dev/fuse: %w (FUSE is needed for the volumes)", err))
	} else {
		fh.Close()
	}
	if os.Geteuid() != 0 {
		errs = append(errs, fmt.Errorf("workload: running as uid %d; mounting the FUSE volumes directly needs root", os.Geteuid()))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return trialMount()
}

func trialMount() error {
	dir, err := os.MkdirTemp("", "fiomig-probe-")
	if err != nil {
		return fmt.Errorf("workload: trial mount: %w", err)
	}
	defer os.RemoveAll(dir)
	f, err := Mount(MountOptions{Dir: filepath.Join(dir, "mnt"), BackingDir: filepath.Join(dir, "backing")}, []Volume{{Name: "probe", Size: 1}})
	if err != nil {
		return fmt.Errorf("workload: trial FUSE mount failed: %w", err)
	}
	if err := f.Unmount(); err != nil {
		return fmt.Errorf("workload: trial FUSE unmount: %w", err)
	}
	return nil
}
