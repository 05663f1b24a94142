// Package faults is fiomig's fault catalogue, in the style of etcd's
// robustness failpoints and chaos-mesh: each fault has Inject, an idempotent
// Recover (a vanished target counts as recovered), and evidence — what was
// observed to change — recorded as a "fault" line of the timeline. A fault
// whose injection left no evidence makes the verdict inconclusive
// (checks.FaultsLanded).
//
// The catalogue (issue 4 part 6):
//
//   - target-restart: a storage node's target goes away — every port of the
//     node stops listening and the hosts' controllers connected to it lose
//     their connection — then comes back after for_s seconds.
//   - dropped-connects: CONNECTs to a node (or one ip:port) get no answer for
//     a window of for_s seconds; existing connections are untouched.
//   - aborted-validation: a migration is aborted while Validating
//     (params mode=abort), or one consumer host's validation Job is killed
//     mid-round (mode=kill-job, params host=<name>, default the first
//     consumer of the volume).
//   - node-crash, network-partition (host/node, both ways),
//     connect-rejected ("does not allow host"), operator-restart,
//     reset-controller and ana-flap (kinds.go, issue 10).
//
// Default draws the main job's schedule: one fault per two migrations, up
// to one of every kind, tied to migrations by ordinal (#N, #N+) and spread
// over the stages (record.Stages) where each kind's evidence can be seen,
// no more of them where they may end a migration than migration-outcomes
// allows (EndsBudget). A "#N+" fault that would find nothing to break, or
// stack on an earlier fault's effect, moves on to a later migration
// (Precondition). ParseFile / WriteFile read and write fault files
// (file.go). Two faults of one kind and target whose windows overlap share
// one effect, which the last recover ends (Injector).
//
// A fault is injected at a named migration phase (FaultSpec.Phase, with
// Migration naming the migration or "" for the first one to enter that
// phase, and params after_s for a delay) or at a time (FaultSpec.AtS), and
// recovered for_s seconds later; Seeded draws such a schedule from a seed.
// Injector wraps a backend.Cluster and runs a schedule while the scenario
// advances the cluster: it injects and recovers at the exact cluster times,
// returns the fault lines among the cluster's own, registers every
// injection's recovery right away and recovers whatever is still active at
// the end (RecoverAll, Close), and reports the schedule as executed for
// plan.json (Executed).
//
// The backend's knobs are reached through the small interfaces of hooks.go
// (TargetRestarter, ConnectDropper, MigrationAborter, NodeCrasher,
// Partitioner, ConnectRejecter, OperatorRestarter, ControllerResetter,
// ANAFlapper, StageReporter, EventStepper), which
// backend/sim's Cluster implements; faults never imports a backend
// implementation.
//
// Imports (docs/architecture.md): backend, record, nvmeof, fio, the
// standard library and sigs.k8s.io/yaml (fault files).
package faults
