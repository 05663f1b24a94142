// Command fiomig is the harness's command line: run (the main job on the
// embedded simulator), sweep (many seeds of run in parallel, summarized),
// shrink (a failing run's schedule cut down to what still fails),
// reproduce (an incident from one seed), report (rebuild a run's reports
// from its record), hosts, inspect, release, reap (the nvmeof host model on
// a live host or a sysfs capture), and janitor (remove what a killed run
// left: fio processes, FUSE mounts, temporary directories; KubeJanitor is
// the hook for the kube backend's part). fiomig --version names the build.
//
// run and reproduce catch SIGINT and SIGTERM from their first instant
// (interruptContext) and exit 130 with the record so far.
//
// Each subcommand lives in its own file and registers itself in init.
// cmd/fiomig may import every package of the module.
package main
