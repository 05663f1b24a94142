// Package harness is fiomig's library entry point: it builds, runs, judges
// and reports a run from a typed spec (Spec: seed, record.Params with the
// simulated world, the backend) — Run on the embedded simulator or a
// Kubernetes cluster, RunOn on a cluster the caller built (the suites) —
// and, on the same specs, a sweep over seeds (Sweep, with its determinism
// self-check and coverage stop) run here or as a Kubernetes Indexed Job
// whose pods run Shard (Farm, docs/farm.md), the shrinking of a
// failing run's schedule (Shrink, from plan.json's typed spec), an
// incident's reproduction with both operators and over seeds (Reproduce,
// ReproduceSeeds), and the re-judging of a stored run (Rejudge). It holds
// the flags every verb binds to a spec (RegisterFlags, ModelFlags), the one
// rerun command (Spec.Command: only the flags that differ from the
// defaults), the one worker pool and the one verdict→exit-code mapping
// (ExitCode, Worse). cmd/fiomig binds flags, calls one function of it and
// prints.
//
// harness may import every package of the module but cmd, suites and
// internal (architecture_test.go).
package harness
