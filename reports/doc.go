// Package reports turns a run's plan and its check results (record.Summary,
// from package checks) into the files a person attaches to a pull request:
// summary.json (deterministic bytes), report.md, report.html (the same
// content as one self-contained page through html/template, the pause plot
// embedded), plots/pause.png and plots/pause.svg — the longest pause per
// migration as bars with the CUTOVER_PAUSE_CRIT_S line (gonum.org/v1/plot) —
// junit.xml (one testcase per check, encoding/xml) and the pause statistics
// (montanaflynn/stats). Every file is a pure function of its inputs: equal
// inputs give equal bytes.
//
// Import direction (DESIGN.md, kept by architecture_test.go): reports may
// import record and checks and the leaves they build on (nvmeof, fio), plus
// montanaflynn/stats and gonum.org/v1/plot; nothing that runs anything.
package reports
