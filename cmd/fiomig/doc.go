// Command fiomig is the harness's command line: run (the main job on the
// embedded simulator), sweep (many seeds of run in parallel, summarized),
// shrink (a failing run's schedule cut down to what still fails),
// reproduce (an incident from one seed), report (rebuild a run's reports
// from its record), and inspect, release, reap (the nvmeof host model on a
// live host or a sysfs capture).
//
// Each subcommand lives in its own file and registers itself in init.
// cmd/fiomig may import every package of the module.
package main
