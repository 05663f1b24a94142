package reports

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fiomig/fiomig/record"
)

// File names Write produces inside the run directory.
const (
	ReportFile    = "report.md"
	PlotsDir      = "plots"
	PausePlotFile = "plots/pause.png"
)

// Write writes summary.json (sum with Stats filled in, indented JSON;
// equal inputs give equal bytes), report.md and plots/pause.png into dir,
// which must exist. Errors name the file.
func Write(dir string, plan record.Plan, sum record.Summary) error {
	sum = WithStats(sum)
	if err := record.WriteJSON(filepath.Join(dir, record.SummaryFile), sum); err != nil {
		return err
	}
	md := filepath.Join(dir, ReportFile)
	if err := os.WriteFile(md, Markdown(plan, sum), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", md, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, PlotsDir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(dir, PlotsDir), err)
	}
	return SavePausePlot(filepath.Join(dir, PausePlotFile), plan, sum)
}
