package reports

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fiomig/fiomig/record"
)

// File names Write produces inside the run directory.
const (
	ReportFile     = "report.md"
	HTMLReportFile = "report.html"
	JUnitFile      = "junit.xml"
	PlotsDir       = "plots"
	PausePlotFile  = "plots/pause.png"
	PauseSVGFile   = "plots/pause.svg"
)

// Write writes into dir, which must exist: summary.json (sum with Stats
// filled in, indented JSON), report.md, plots/pause.png, plots/pause.svg,
// report.html (with that SVG embedded) and junit.xml. Equal inputs give
// equal bytes in every file. Errors name the file.
func Write(dir string, plan record.Plan, sum record.Summary) error {
	sum = WithStats(sum)
	if err := record.WriteJSON(filepath.Join(dir, record.SummaryFile), sum); err != nil {
		return err
	}
	if err := writeFile(dir, ReportFile, Markdown(plan, sum)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, PlotsDir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(dir, PlotsDir), err)
	}
	if err := savePausePlot(filepath.Join(dir, PausePlotFile), plan, sum); err != nil {
		return err
	}
	svg, err := PausePlotBytes(plan, sum, "svg")
	if err != nil {
		return err
	}
	if err := writeFile(dir, PauseSVGFile, svg); err != nil {
		return err
	}
	page, err := HTML(plan, sum, svg)
	if err != nil {
		return err
	}
	if err := writeFile(dir, HTMLReportFile, page); err != nil {
		return err
	}
	junit, err := JUnit(plan, sum)
	if err != nil {
		return err
	}
	return writeFile(dir, JUnitFile, junit)
}

func writeFile(dir, name string, b []byte) error {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
