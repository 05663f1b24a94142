// Package sim is fiomig's deterministic world: storage nodes running an
// SPDK-like NVMe-oF target (one port per logical volume store, listeners
// with ANA states, host allow-lists, counted CONNECT rejections), consumer
// hosts with a kernel NVMe-oF initiator model (controller states, reconnect
// loop with reconnect_delay / ctrl_loss_tmo / fast_io_fail_tmo, multipath
// heads and path legs), volumes, and the control plane's migrations.
//
// Every host's kernel state is rendered as a sysfs tree (io/fs.FS, the
// kernel's own layout, symlinked class/ entries) so that collectors read
// the simulation through exactly the code (package nvmeof) that reads a
// real host.
//
// Determinism: the world never reads the wall clock or global randomness.
// Time comes from an injected Clock (VirtualClock by default) and every
// random choice from one *rand.Rand seeded with Config.Seed; the same
// Config gives the same events and the same trees.
//
// Imports: the standard library, nvmeof and fio only (DESIGN.md "Packages").
package sim
