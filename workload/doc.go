// Package workload runs real fio processes against simulated NVMe-oF
// volumes: each volume is a regular file on a FUSE mount (go-fuse v2,
// mounted directly with mount(2) as root), backed by a real sparse file, and
// every read or write first asks the volume's multipath head what to do —
// serve it, hold it while no path is usable but one may come back, or fail
// it with EIO when none can (kernel drivers/nvme/host/multipath.c). One fio
// process per volume runs the fio package's migration workload on its file
// and writes its job file, JSON+ result, stderr and per-I/O latency log into
// a directory of its own.
//
// The head's answer comes from a Paths value (backend/sim adapts the
// simulator's HeadIO to it); this package never imports the simulator.
// Stopping is ordered so nothing is left behind: fio gets SIGINT (it then
// writes its result and logs), held I/O is released (Drain) if fio does not
// exit in time, fio is killed as a last resort, and the mount is unmounted —
// lazily and with the FUSE connection aborted if a plain unmount stays busy.
// Mounted reads /proc/self/mountinfo to prove it. /dev/fuse is opened
// close-on-exec, so no fio inherits the FUSE connection. fio's job
// processes run in sessions of their own; every fio process carries a
// marker in its environment (MarkerEnv), by which Stop finds and kills the
// ones a dead fio main process left. Everything a Workload creates —
// temporary directories, the mount, fio processes — is first recorded in
// OwnedFile in its output directory, so that after a kill -9 of fiomig
// Janitor (fiomig janitor) can remove what is left. Deadlines of process
// exits and unmounts are generous, named, and scaled by LoadFactor.
//
// Time: this package runs real processes, so it reads the wall clock (for
// timeouts only; no measurement comes from it — fio's own log is the
// measurement).
//
// Imports: fio, github.com/hanwen/go-fuse/v2 and the standard library
// (docs/architecture.md: workload <- fio; backend imports workload).
package workload
