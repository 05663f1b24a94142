package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// Env is the environment variable that makes a missing tool a failure.
const Env = "FIOMIG_REQUIRE_TOOLS"

// Required reports whether Env=1 asks missing tools to fail tests.
func Required() bool { return os.Getenv(Env) == "1" }

// Require skips tb with missing printed as the reason, or fails it when
// Required; it does nothing when missing is nil.
func Require(tb testing.TB, missing error) {
	tb.Helper()
	if missing == nil {
		return
	}
	if Required() {
		tb.Fatalf("%s=1 but a required tool is missing: %v", Env, missing)
		return
	}
	tb.Skipf("skipping: %v (install with `make tools`; %s=1 makes this a failure)", missing, Env)
}

// Command returns the path of the named command from PATH, or applies
// Require's rule when it is not there.
func Command(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	Require(tb, err)
	return p
}
