// Package sim is fiomig's deterministic world, a discrete-event simulation
// on an injected clock:
//
//   - storage nodes running an SPDK-like NVMe-oF target (target.go): one TCP
//     port per logical volume store served, every subsystem of that store
//     exposed there; per subsystem, listeners with ANA states, a host
//     allow-list and attached namespaces. TCP is refused only when nothing
//     listens on the port; otherwise a CONNECT for a subsystem not exposed
//     there (or not to that host) is rejected and counted (target events).
//   - consumer hosts with a kernel NVMe-oF initiator (kernel.go): controller
//     states new → connecting → live → resetting → connecting → live |
//     deleting; reconnect every reconnect_delay, removal after
//     max_reconnects = ceil(ctrl_loss_tmo / reconnect_delay); the
//     --reconnect-reset and DNR switches; fast_io_fail_tmo; "already
//     connected" keys; keep-alive (kato) detection of a silent target
//     (faults.go); multipath heads and legs; namespace rescans on
//     notices, with the kernel's namespace identity checks; kernel-log
//     events.
//   - the control plane (controlplane.go: CreateMigration, continue,
//     cutover — for a batch, sbcli's two-pass namespace swap and old
//     source-port listener removal —, cancel; the optional cited
//     switches ListenerRace, SwapReaddFail, NSIDDivergence) and the
//     lvol monitor (monitor.go); the operator (operator.go) in its prefix and
//     fixed variants, whose validation and release Jobs call nvmeof's
//     Inspect, ReleaseMigrationPaths and ReapDeadControllers through the
//     hosts' nvmeof.Host implementation (hostiface.go).
//   - modelled fio pods (pods.go) following the kernel's head I/O rule.
//   - fault hooks (faults.go): target stop/start (restart or silent),
//     dropped CONNECTs, abort, validation-Job kill, leftover controllers.
//
// Every host's kernel state is rendered as a sysfs tree (sysfs.go, an
// io/fs.FS in the kernel's layout with symlinked class/ entries; treefs.go)
// so that collectors read the simulation through exactly the code (package
// nvmeof) that reads a real host; Materialize writes it to disk for real
// tools (nvme-cli).
//
// Determinism: the world never reads the wall clock or global randomness.
// Time comes from an injected Clock (VirtualClock by default) and every
// random choice from one *rand.Rand seeded with Config.Seed; the same
// Config (and the same calls) give the same events and the same trees.
//
// Imports: the standard library, nvmeof and fio only (docs/architecture.md
// "Import direction").
package sim
