package workload

import (
	"errors"
	"fmt"
	"os"
)

// RequireToolsEnv is the environment variable that turns a missing tool
// from a skipped test into a failed one (CI sets FIOMIG_REQUIRE_TOOLS=1).
const RequireToolsEnv = "FIOMIG_REQUIRE_TOOLS"

// Available reports why real fio through FUSE cannot run here, or nil: fio
// must be in PATH, /dev/fuse must open read-write, and the process must be
// root (the volumes are mounted with mount(2) directly).
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
	return errors.Join(errs...)
}

// ToolsRequired reports whether FIOMIG_REQUIRE_TOOLS=1 asks missing tools
// to fail tests instead of skipping them.
func ToolsRequired() bool { return os.Getenv(RequireToolsEnv) == "1" }
