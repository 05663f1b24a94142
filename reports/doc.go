// Package reports turns a run's plan and its check results (record.Summary,
// from package checks) into the files a person attaches to a pull request:
// summary.json (deterministic bytes), report.md, plots/pause.png — the
// longest pause per migration as bars with the CUTOVER_PAUSE_CRIT_S line
// (gonum.org/v1/plot) — and the pause statistics (montanaflynn/stats).
//
// Import direction (DESIGN.md): reports may import record and checks (plus
// montanaflynn/stats and gonum.org/v1/plot), nothing that runs anything.
package reports
