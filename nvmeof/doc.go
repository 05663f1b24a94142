// Package nvmeof is fiomig's host model: what one host's kernel NVMe-oF
// initiator shows and what may be done to it.
//
//   - Reading: ReadSysfs/ReadHost parse a sysfs tree given as an io/fs.FS
//     (root = the "sys" directory: os.DirFS("/sys"), a capture loaded with
//     LoadCapture, or a tree the simulator renders) into HostState:
//     subsystems -> controllers -> legs, plus namespaces.
//   - Judging: Inspect classifies what is wrong with one subsystem as the
//     operator's Inspect does (five defect kinds, in teardown order with
//     co-tenants; docs/sources.md §6.2); NotLive lists controllers that are
//     not live, which is no defect; HostState.Multipath says whether native
//     multipath is on (off: no legs, no ANA states, nothing to judge a
//     cutover by); MissingEndpoints and StaleEndpoints compare attached
//     controllers with published endpoints by canonical ip:port
//     (CanonicalEndpoint).
//   - Acting: PlanRelease/ReleaseMigrationPaths and PlanReap/
//     ReapDeadControllers decide and perform teardowns through the Host
//     interface (LinuxHost for a real host, reading sysfs with one open, read
//     and close per attribute; MemHost for tests; the simulator has its
//     own); Target renders connect options for nvme-cli and for
//     /dev/nvme-fabrics, MigrationTarget switches between the fixed and the
//     pre-fix migration-path options.
//
// Bad input gets a named error: unknown controller or ANA states
// (ErrUnknownState), malformed sysfs attributes and capture lines, unknown
// connection fields and transports. Secret attributes (SecretAttrs) are
// never read, kept or quoted.
//
// The kernel, nvme-cli and simplyblock facts it honours are listed in
// docs/sources.md (§1 the kernel, §2 nvme-cli, §5.5 release and reap, §6
// Inspect); each function's doc names its source. Sub-package hostcmd is
// the host tools' command line (hosts, inspect, release, reap).
//
// Imports: the standard library only (a leaf of the import direction of
// docs/architecture.md); its tests also use github.com/google/go-cmp and
// github.com/prometheus/procfs (the independent parser of the cross-check).
// It never reads the wall clock or global randomness.
package nvmeof
