// Package checks computes fiomig's verdicts as pure functions of the run
// record (docs/run-record.md): plan.json and timeline.jsonl in,
// record.Summary out. Nothing here reads a clock, a file or a cluster, so a
// run's verdicts can be recomputed later from its directory alone
// (`fiomig report <run-dir>`).
//
// The checks, by their names in summary.json "checks":
//
//   - pause-bound: for every migration and consumer host, the longest pause
//     window is at most plan.Params.PauseCritS (CUTOVER_PAUSE_CRIT_S). A
//     silent stall (a live, optimized path whose target no longer answers;
//     stalls.go) is paused time; one known only from a keep-alive timeout
//     has a shortest and a longest length, inconclusive between them. A
//     pair whose host-observed cutover lies inside a fault window is masked
//     (record.HostPauses.MaskedBy): the window's length bounds its cutover
//     pause, a pass within the bound, inconclusive over it.
//   - freezes: pause windows per migration (the most any one host saw, a
//     masked pair's fault window counted as one) are at most
//     plan.Params.FreezesAllowed (CUTOVER_FREEZES_ALLOWED).
//   - leaked-controllers: after the settle period no host has a controller
//     that nvmeof.Inspect reports against the published endpoints, and none
//     is still not live (kind "not-live").
//   - path-completeness: every consumer host has a controller for every
//     published ip:port endpoint of its volumes (nvmeof.MissingEndpoints).
//   - split-brain: no sample shows a source path and a target path of one
//     migration both optimized for the same namespace.
//   - served-after-cutover: after a Completed migration, at the end of the
//     attribution margin, a live controller at the target serves every
//     namespace on every consumer host.
//   - unattributed-pauses: no pause window lies outside every migration.
//   - faults-landed: every injected fault left evidence, and every fault
//     kind asked for landed at least once; otherwise the run is
//     inconclusive, never a pass.
//
// The seed harness's checks (seed.go; operator fio_migration_test.py and
// sbtest, docs/sources.md §8), thresholds in plan.Params.Seed, each a
// self-contained function of the plan and the lines: migration-outcomes,
// io-outage, data-integrity (with the verify lag), controller-churn,
// loss-timeout (warn), paths-per-subsystem (warn), dirty-start
// (inconclusive) and target-log-pattern. A check whose lines the record
// does not carry at all is not made (SeedChecks); a warn does not fail the
// run. Checks that judge per migration list the migrations they fail on
// (CheckResult.Failing). On a short record (record.Coverage.Short: a
// killed or interrupted run) the ones judged on the record's end —
// paths-per-subsystem and controller-churn's net controllers — are
// inconclusive, like leaked-controllers and path-completeness, and a
// migration still running at its end is not counted as timed out
// (notJudgedShort).
//
// Verdicts only on what was seen (observed.go): pause-bound and freezes
// need a sample interval of at most ResolutionFraction (0.1) of the pause
// bound; a hole in a host's observations (a gap over record.HoleFactor
// intervals, heartbeats counting as observations) makes every check over
// that host and time range inconclusive, naming both. The summary also
// lists every fault with its outcome and a kind × stage matrix.
//
// One judge (issues 15, 22): Judge streams per-tick states
// (record.ScanStates, or the lines as a run writes them) keeping only what
// the checks need — each host's last sample, open pause windows per host
// and subsystem, the migrations whose span is open — so memory follows
// hosts × controllers, not the run's length. fiomig run and fiomig report
// feed it line by line; Evaluate is the same Judge folded over a record
// held in memory. A check is written once: its per-sample part in the
// Judge, its verdict in a function of the findings (pauseBound,
// splitBrainResult, servedResult, leakedControllers, ...). The tests keep
// an independent whole-record implementation of the per-sample parts
// (reference_test.go) and hold the Judge to it (TestJudgeEqualsReference).
//
// Import direction (docs/architecture.md): checks may import only the
// leaves record, nvmeof and fio (and the standard library).
package checks
