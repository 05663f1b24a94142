package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

// SimRun runs the migrations scenario on the embedded simulator with seed
// and params, writing the run directory under outDir, progress to the
// GinkgoWriter (shown when a spec fails). It fails on a backend or I/O
// error; check verdicts are in the returned Summary.
func SimRun(outDir string, seed int64, p record.Params) (scenario.Result, error) {
	cluster, err := scenario.SimCluster(seed, p)
	if err != nil {
		return scenario.Result{}, fmt.Errorf("simulator: %w", err)
	}
	defer cluster.Close()
	return scenario.Run(context.Background(), cluster, scenario.Config{
		Plan: record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: seed,
			Command: fmt.Sprintf("fiomig run --seed=%d (suite)", seed), Params: p},
		OutDir: outDir, Progress: ginkgo.GinkgoWriter,
	})
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
