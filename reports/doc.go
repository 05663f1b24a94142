// Package reports turns a run's plan, its check results (record.Summary,
// from package checks) and its timeline into the files a person attaches to
// a pull request: summary.json (deterministic bytes, with controller
// churn), report.md (PR-sized: verdict and worst cutover first, details
// folded, rerun command last), report.html (the same content as one
// self-contained page through html/template, every plot embedded, the
// faults table), the plots (gonum.org/v1/plot) — pause bars, the ECDF of
// pause windows (ECDFPlot also takes many runs' summaries: a sweep's
// seeds), one swimlane per cutover (host × path lanes coloured by
// ANA/controller state, pause windows, faults, phases, fio gaps) and fio's
// per-second IOPS and p99 latency around each cutover — junit.xml, the
// pause statistics (montanaflynn/stats); the comparison of two runs or
// sweeps (Compare, CompareMarkdown: the nightly gate) and the seed
// harness's ana/<migration>.csv (SeedCSV) and an incident reproduction's
// reproduce.md (incident.go: package analysis's figures, bands and
// comparison over seeds, side by side). Every file is a pure function
// of its inputs: equal inputs give equal bytes.
//
// Import direction (docs/architecture.md, kept by architecture_test.go):
// reports may import record, checks, analysis and incidents and the leaves
// they build on (nvmeof, fio), plus montanaflynn/stats and
// gonum.org/v1/plot; nothing that runs anything.
package reports
