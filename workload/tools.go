package workload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RequireToolsEnv is the environment variable that turns a missing tool
// from a skipped test into a failed one (CI sets FIOMIG_REQUIRE_TOOLS=1).
const RequireToolsEnv = "FIOMIG_REQUIRE_TOOLS"

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

// ToolsRequired reports whether FIOMIG_REQUIRE_TOOLS=1 asks missing tools
// to fail tests instead of skipping them.
func ToolsRequired() bool { return os.Getenv(RequireToolsEnv) == "1" }

// RequireAvailable is the tool check of every test that runs real fio
// through FUSE: when Available reports an error it skips tb with that
// reason printed, or fails tb when FIOMIG_REQUIRE_TOOLS=1 (CI), so a
// missing tool never hides a red test there.
func RequireAvailable(tb testing.TB) {
	tb.Helper()
	if err := Available(); err != nil {
		if ToolsRequired() {
			tb.Fatalf("%s=1 but real fio through FUSE cannot run: %v", RequireToolsEnv, err)
		}
		tb.Skipf("skipping: real fio through FUSE cannot run here: %v", err)
	}
}
