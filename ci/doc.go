// Package ci writes a run's or a sweep's results in the forms CI systems
// read natively (docs/ci.md): Prow's artifact layout for TestGrid and
// Spyglass — started.json, finished.json with metadata, and
// artifacts/junit_<context>_<NN>.xml whose testcase names are stable
// across runs and seeds, with numeric properties and a verdict property —
// GitHub Actions' step summary ($GITHUB_STEP_SUMMARY, kept far under its
// 1 MiB limit) and an OpenMetrics metrics.txt (GitLab's metrics report).
// Figures are the numbers all of them, and package history, track.
//
// Import direction (architecture_test.go): ci may import record, checks
// and reports (and the leaves they build on), plus prometheus/common's
// expfmt and client_model to write OpenMetrics; nothing that runs
// anything.
package ci
