package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/record"
)

// SimRun runs fiomig run's spec on the embedded simulator with seed and
// params (harness.Run: the same code, defaults and record as the CLI),
// writing the run directory under outDir, progress to the GinkgoWriter
// (shown when a spec fails). It fails on a bad spec, a backend or I/O
// error; check verdicts are in the returned Summary.
func SimRun(outDir string, seed int64, p record.Params) (harness.Result, error) {
	s := harness.DefaultSpec()
	s.Seed, s.Params, s.Out = seed, p, outDir
	return harness.Run(context.Background(), s, harness.Options{Progress: ginkgo.GinkgoWriter,
		Command: fmt.Sprintf("%s (suite)", s.Command())})
}

// JUnitPath is where a suite writes its JUnit XML: $FIOMIG_JUNIT_DIR/name
// (the Makefile sets it to out/junit), else out/junit/name under the module
// root found from the working directory.
func JUnitPath(name string) string {
	if d := os.Getenv("FIOMIG_JUNIT_DIR"); d != "" {
		return filepath.Join(d, name)
	}
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("out", "junit", name)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "out", "junit", name)
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "out", "junit", name)
		}
	}
}
