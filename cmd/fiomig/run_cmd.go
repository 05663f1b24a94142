package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/sim"
	"github.com/fiomig/fiomig/workload"
)

func init() {
	register(command{name: "run", summary: "run migrations on the embedded simulator and write a report", run: runCmd})
}

// runFlags are the flags of "fiomig run": most bind straight to the
// run's typed parameters (record.Params, its Model included).
type runFlags struct {
	seed        int64
	p           record.Params
	out         string
	faultFile   string
	fullSamples bool
	// faultKinds is --faults parsed (validate): nil = every kind.
	faultKinds []string
	kube       kubeFlags // --backend and the kube backend's flags (kube_run.go)
}

func (f *runFlags) register(fs *flag.FlagSet) {
	d := scenario.DefaultParams()
	p, m, sd := &f.p, &f.p.Model, &f.p.Seed
	*p = d
	fs.Int64Var(&f.seed, "seed", 1, "`seed` of every random choice; the same seed gives a byte-identical timeline.jsonl and summary.json")
	fs.IntVar(&p.Migrations, "migrations", d.Migrations, "number of migrations, run one after another")
	fs.IntVar(&m.Volumes, "volumes", d.Model.Volumes, "number of volumes (one NVMe-oF subsystem each)")
	fs.IntVar(&m.Hosts, "hosts", d.Model.Hosts, "number of consumer hosts")
	fs.IntVar(&m.NamespacesPerVolume, "namespaces-per-volume", d.Model.NamespacesPerVolume, "`N` namespaces (NSIDs 1..N) per namespaced volume's subsystem; such a volume migrates as a batch (the whole subsystem moves), and a pause of any one namespace is a pause")
	fs.IntVar(&m.NamespacedVolumes, "namespaced-volumes", d.Model.NamespacedVolumes, "how many of the volumes (the last ones) are namespaced, the others single-namespace (0 = all; the seed harness mixes 10 single and 6 namespaced)")
	fs.IntVar(&m.ConsumersPerVolume, "consumers-per-volume", d.Model.ConsumersPerVolume, "consumer hosts per volume (hosts running a pod that uses it)")
	fs.Float64Var(&p.SampleIntervalS, "sample-interval", d.SampleIntervalS, "`seconds` between samples of every host's controllers")
	fs.Float64Var(&p.SettleSampleIntervalS, "settle-sample-interval", d.SettleSampleIntervalS, "`seconds` between samples during the settle period (0 = --sample-interval); the settle judges end states (leaks, path completeness), so 1 s by default")
	fs.Float64Var(&m.CutoverPauseS, "cutover-pause", d.Model.CutoverPauseS, "`seconds` the simulated cutover keeps every path inaccessible (each window is this ±25%, drawn from the seed)")
	fs.Float64Var(&p.PauseCritS, "pause-crit", d.PauseCritS, "`seconds`: bound on the longest pause window per migration and host (CUTOVER_PAUSE_CRIT_S; the flag wins over the environment)")
	fs.IntVar(&p.FreezesAllowed, "freezes-allowed", d.FreezesAllowed, "pause windows allowed per migration (CUTOVER_FREEZES_ALLOWED)")
	fs.Float64Var(&p.SettleS, "settle", d.SettleS, "`seconds` the run keeps sampling after the last migration before leaks and completeness are judged; the default outlasts the sourced repairs (sbcli's lvol monitor: 300 s sweep + 30 s cycle; the CSI restore's backoff: up to 60 s); with --workload=fio, on the wall clock, the default is 90 s, and a path or namespace those repairs may still bring back is not judged (docs/fio.md)")
	fs.Float64Var(&p.AttributionMarginS, "attribution-margin", d.AttributionMarginS, "`seconds` after a migration's terminal phase during which a pause window still belongs to it")
	fs.Float64Var(&p.GapS, "gap", d.GapS, "`seconds` between one migration's end and the next one's start")
	fs.BoolVar(&f.fullSamples, "full-samples", false, "write every host's whole state at every tick (timeline format version 1) instead of only changes plus one heartbeat line per tick (version 2, the default; record/FORMAT.md); the verdicts are the same, the timeline is ~50x larger")
	fs.StringVar(&f.out, "out", "out", "`directory` under which the run directory fio-mig-<unix seconds> is created")
	p.Workload = scenario.WorkloadSim
	fs.StringVar(&p.Workload, "workload", scenario.WorkloadSim, "`sim`: the simulator's modelled I/O on virtual time; fio: one real fio process per volume on a FUSE file that follows the simulated host's multipath head, the simulator driven by the wall clock, with the same model switches (needs root, /dev/fuse and fio; fio's output goes to <run dir>/fio/; one namespace per volume only)")
	fs.IntVar(&p.FioRateIOPS, "fio-rate-iops", workload.DefaultRateIOPS, "with --workload=fio: each volume's fio job is capped at this many `I/Os per second` (rate_iops)")
	fs.StringVar(&p.Faults, "faults", scenario.FaultsDefault, "`default`: a seeded schedule of one fault of every kind, together covering every stage (in-validation, before-cutover, in-freeze, after-cutover); none; or a comma-separated list of kinds ("+strings.Join(faults.Kinds, ", ")+") drawn the same way")
	fs.StringVar(&m.ControlPlane, "control-plane", d.Model.ControlPlane, "the simulated control plane's cancel before continue: `sbcli` (as sourced: _cleanup_created deletes the volume's subsystem on the source's tertiary node, docs/simulator.md; with --lvol-monitor and --csi-restore ip-port, the defaults, that path comes back) or fixed-cancel (an assumed fix, with no source, that spares the tertiaries)")
	fs.BoolVar(&m.LvolMonitor, "lvol-monitor", d.Model.LvolMonitor, "run sbcli's lvol monitor repair in the simulator (every 300 s it re-creates a non-leader's deleted subsystem and listener and re-adds a missing namespace; sourced, docs/simulator.md)")
	fs.StringVar(&m.CSIRestore, "csi-restore", d.Model.CSIRestore, "the CSI driver's path restore in the simulator: `off`, ip (pre-fix: only when no controller of the subsystem is at that IP) or ip-port (fixed: every published ip:port without a controller)")
	fs.BoolVar(&m.ReleaseSources, "release-sources", d.Model.ReleaseSources, "fiomig's extra, not the fix: the simulated fixed operator runs a release Job for the source paths on every consumer host after the cutover. Off by default, as the fixed operator (simplyblock-operator 5aa711cc) releases migration paths only when it cancels (cancelAndFail, reconcileAbort) and touches no host after Completed; without it the source controllers reconnect into rejected CONNECTs until ctrl_loss_tmo removes them. The prefix operator ignores it")
	fs.BoolVar(&m.ListenerRace, "listener-race", d.Model.ListenerRace, "simulated control plane: on a target node that does not hold the subsystem, CreateMigration adds the listener before the namespace and the add_ns fails, which it only logs (sbcli migration_controller.py create_migration :1180 → :1197 → :1204; SB 97ef965c2: the host connects, live, and the namespace never joins the head); off by default: no source says this happened in the incident")
	fs.Float64Var(&m.SwapReaddFail, "swap-readd-fail", d.Model.SwapReaddFail, "simulated control plane: `probability` that one namespace re-add of a batch cutover's two-pass swap fails, which it only logs (sbcli tasks_runner_batch_migration.py :509): that node's controllers stay live with a partial leg set (0 = never); off by default: no source says this happened in the incident")
	fs.BoolVar(&m.NSIDDivergence, "nsid-divergence", d.Model.NSIDDivergence, "simulated control plane: in each batch cutover's swap one overlap node re-adds two members in the other order, so the namespaces' NSIDs differ there (the re-add passes no nsid, :509; sbcli branch fix fabb18694 passes it) and the kernel refuses them on that node's controllers (\"IDs don't match for shared namespace N\", sbcli lvol_controller.py:1264-1276); off by default: no source says this happened in the incident")
	fs.StringVar(&f.faultFile, "fault-file", "", "a fault `file` (YAML or JSON; format in fiomig run --help) whose schedule replaces --faults")
	fs.Float64Var(&sd.MinCompleted, "min-completed", d.Seed.MinCompleted, "`fraction` of migrations that must complete within --migration-timeout (migration-outcomes)")
	fs.Float64Var(&sd.MaxTimedOut, "max-timed-out", d.Seed.MaxTimedOut, "`fraction` of migrations that may not end within --migration-timeout (migration-outcomes)")
	fs.Float64Var(&sd.MigrationTimeoutS, "migration-timeout", d.Seed.MigrationTimeoutS, "`seconds` a migration may take before it counts as timed out (the seed harness's 420 s)")
	fs.Float64Var(&sd.OutageS, "outage", d.Seed.OutageS, "`seconds` without a completed I/O on a volume that fail io-outage")
	fs.Float64Var(&sd.VerifyLagS, "verify-lag", d.Seed.VerifyLagS, "`seconds` after a migration's end within which a verify failure is charged to it (data-integrity; fio detects lost writes 3-34 s later)")
	fs.IntVar(&sd.MaxNetControllers, "max-net-controllers", d.Seed.MaxNetControllers, "controllers created minus removed per subsystem and host above which controller-churn fails")
	fs.IntVar(&sd.MaxReconnects, "max-reconnects", d.Seed.MaxReconnects, "reconnect `attempts` of one controller above which controller-churn fails")
	fs.IntVar(&sd.MaxCtrlLossTmoS, "max-ctrl-loss-tmo", d.Seed.MaxCtrlLossTmoS, "`seconds` of ctrl_loss_tmo above which (or off) loss-timeout warns")
	fs.IntVar(&sd.MaxPaths, "max-paths", d.Seed.MaxPaths, "controllers per subsystem on a host at the end above which paths-per-subsystem warns")
	fs.IntVar(&sd.MaxNotAllowed, "max-not-allowed", d.Seed.MaxNotAllowed, "target rejections logged as \"does not allow host\" at or above which target-log-pattern fails")
	f.kube.register(fs)
	fs.Int64Var(&p.FioCorruptWrite, "fio-corrupt-write", 0, "with --workload=fio: store the `N`-th write to the first volume corrupted underneath fio, to prove a verify failure is reported as a data integrity failure with its offset (0 = off)")
}

// Record bounds: a run samples every host at most maxSamplesPerHost times
// in its migrations and again in its settle period, so that a mistyped
// flag cannot fill the disk (one sample line is about 3 kB); minMigrationS
// is the shortest a simulated migration usually takes, seconds.
const (
	maxSamplesPerHost = 1e6
	minMigrationS     = 10.0
)

// validate checks ranges; errors name the flag.
func (f *runFlags) validate() error {
	// Seconds flags: finite and within a range that keeps a run's record
	// bounded (a 1e300 s settle or a 1e-7 s interval would fill the disk).
	for _, r := range []struct {
		name     string
		v        float64
		min, max float64
		openMin  bool // v must be > min rather than >= min
	}{
		{"--sample-interval", f.p.SampleIntervalS, 0.001, 60, false},
		{"--cutover-pause", f.p.Model.CutoverPauseS, 0, 600, true},
		{"--pause-crit (or CUTOVER_PAUSE_CRIT_S)", f.p.PauseCritS, 0, 3600, true},
		{"--settle", f.p.SettleS, 0, 86400, false},
		{"--attribution-margin", f.p.AttributionMarginS, 0, 3600, false},
		{"--gap", f.p.GapS, 0, 3600, false},
	} {
		below := r.v < r.min || (r.openMin && r.v == r.min)
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) || below || r.v > r.max {
			lo := "["
			if r.openMin {
				lo = "("
			}
			return usagef("%s must be a finite number of seconds in %s%g, %g], got %v", r.name, lo, r.min, r.max, r.v)
		}
	}
	if f.p.SettleSampleIntervalS != 0 && (math.IsNaN(f.p.SettleSampleIntervalS) || f.p.SettleSampleIntervalS < 0.001 || f.p.SettleSampleIntervalS > 3600) {
		return usagef("--settle-sample-interval must be 0 (= --sample-interval) or a finite number of seconds in [0.001, 3600], got %v", f.p.SettleSampleIntervalS)
	}
	settleInterval := f.p.SettleSampleIntervalS
	if settleInterval == 0 {
		settleInterval = f.p.SampleIntervalS
	}
	if n := f.p.SettleS / settleInterval; n > maxSamplesPerHost {
		return usagef("--settle %g s sampled every %g s is %.0f samples per host; keep it under 1,000,000 (raise --settle-sample-interval)", f.p.SettleS, settleInterval, n)
	}
	// The migrations' part of the record, estimated from below: a migration
	// on the simulator takes about 15 s (validation, sync, cutover) and
	// rarely under minMigrationS, plus the gap after it.
	if n := float64(f.p.Migrations) * (minMigrationS + f.p.GapS) / f.p.SampleIntervalS; n > maxSamplesPerHost {
		return usagef("--migrations %d at %g s or more each (with --gap %g s) sampled every %g s is over %.0f samples per host; keep it under 1,000,000 (run fewer migrations or raise --sample-interval)",
			f.p.Migrations, minMigrationS+f.p.GapS, f.p.GapS, f.p.SampleIntervalS, n)
	}
	switch {
	case f.p.Migrations < 0 || f.p.Migrations > 100000:
		return usagef("--migrations must be in [0, 100000], got %d", f.p.Migrations)
	case f.p.Model.Volumes < 1 || f.p.Model.Volumes > 10000:
		return usagef("--volumes must be in [1, 10000], got %d", f.p.Model.Volumes)
	case f.p.Model.Hosts < 1 || f.p.Model.Hosts > 1000:
		return usagef("--hosts must be in [1, 1000], got %d", f.p.Model.Hosts)
	case f.p.Model.ConsumersPerVolume < 1 || f.p.Model.ConsumersPerVolume > f.p.Model.Hosts:
		return usagef("--consumers-per-volume must be between 1 and --hosts (%d), got %d", f.p.Model.Hosts, f.p.Model.ConsumersPerVolume)
	case f.p.Model.CSIRestore != "off" && f.p.Model.CSIRestore != "ip" && f.p.Model.CSIRestore != "ip-port":
		return usagef("--csi-restore must be off, ip or ip-port, got %q", f.p.Model.CSIRestore)
	case f.p.Model.NamespacesPerVolume < 1 || f.p.Model.NamespacesPerVolume > 64:
		return usagef("--namespaces-per-volume must be in [1, 64], got %d", f.p.Model.NamespacesPerVolume)
	case f.p.Model.NamespacedVolumes < 0 || f.p.Model.NamespacedVolumes > f.p.Model.Volumes:
		return usagef("--namespaced-volumes must be between 0 and --volumes (%d), got %d", f.p.Model.Volumes, f.p.Model.NamespacedVolumes)
	case f.p.FreezesAllowed < 0:
		return usagef("--freezes-allowed (or CUTOVER_FREEZES_ALLOWED) must be >= 0, got %d", f.p.FreezesAllowed)
	case f.p.Workload != scenario.WorkloadSim && f.p.Workload != scenario.WorkloadFio:
		return usagef("--workload must be %s or %s, got %q", scenario.WorkloadSim, scenario.WorkloadFio, f.p.Workload)
	case f.p.Workload == scenario.WorkloadFio && f.p.Model.NamespacesPerVolume > 1:
		return usagef("%s", scenario.FioNamespacesUnsupported(f.p.Model.NamespacesPerVolume))
	case f.p.FioRateIOPS < 2:
		// Split into a read,write cap (70,30 for 100); a 0 cap would mean "no limit" to fio.
		return usagef("--fio-rate-iops must be >= 2 (it is split between reads and writes), got %d", f.p.FioRateIOPS)
	case f.p.Model.ControlPlane != "sbcli" && f.p.Model.ControlPlane != "fixed-cancel":
		return usagef("--control-plane must be sbcli or fixed-cancel, got %q", f.p.Model.ControlPlane)
	case !(f.p.Model.SwapReaddFail >= 0 && f.p.Model.SwapReaddFail <= 1):
		return usagef("--swap-readd-fail must be a probability in [0, 1], got %v", f.p.Model.SwapReaddFail)
	case f.p.FioCorruptWrite < 0:
		return usagef("--fio-corrupt-write must be >= 0, got %d", f.p.FioCorruptWrite)
	}
	kinds, err := scenario.ParseFaultKinds(f.p.Faults)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	f.faultKinds = kinds
	return checkOut(f.out)
}

// checkOut is the one check of an --out directory (run, reproduce), made
// before any work: empty, or naming an existing file, is bad usage (exit
// 2) naming the flag and the path. A missing directory is fine: it is
// created when the run writes.
func checkOut(out string) error {
	if out == "" {
		return usagef("--out must name a directory")
	}
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return usagef("--out %s is a file, want a directory", out)
	}
	return nil
}

func (f *runFlags) params() record.Params {
	p := f.p
	if p.SettleSampleIntervalS == 0 {
		p.SettleSampleIntervalS = p.SampleIntervalS
	}
	p.TimelineFormat = record.FormatChangeOnly
	if f.fullSamples {
		p.TimelineFormat = record.FormatFull
	}
	p.Faults = f.faultSelection()
	if p.Workload == scenario.WorkloadSim {
		p.Workload = ""
		p.FioRateIOPS = 0
	}
	p.Model = sim.ModelDefaults(p.Model)
	return p
}

// faultSelection is what plan.json's params.faults records: the
// --faults value, or "file:<path>" for --fault-file.
func (f *runFlags) faultSelection() string {
	if f.faultFile != "" {
		return record.FaultsFilePrefix + f.faultFile
	}
	return f.p.Faults
}

// envDefaults applies CUTOVER_PAUSE_CRIT_S and CUTOVER_FREEZES_ALLOWED to
// flags not given on the command line.
func envDefaults(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for flagName, env := range map[string]string{"pause-crit": "CUTOVER_PAUSE_CRIT_S", "freezes-allowed": "CUTOVER_FREEZES_ALLOWED"} {
		v := getenv(env)
		if v == "" || given[flagName] {
			continue
		}
		if err := fs.Set(flagName, v); err != nil {
			return usagef("environment %s=%q: %v", env, v, err)
		}
	}
	return nil
}

// workloadDefaults applies --workload=fio's own default settle
// (scenario.FioSettleS: it runs on the wall clock) when --settle is not
// given; the reproduce command then names it.
func workloadDefaults(fs *flag.FlagSet, f *runFlags) {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "settle" })
	if f.p.Workload == scenario.WorkloadFio && !given {
		f.p.SettleS = scenario.FioSettleS
	}
}

// reproduceCommand is the one command line that reruns this run: every
// parameter explicit, so a changed default cannot change the replay.
func reproduceCommand(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("fiomig run")
	fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name == "out" {
			return
		}
		// --fault-file replaces --faults: writing both makes the command
		// unrunnable ("give --faults or --fault-file, not both").
		if fl.Name == "faults" && fs.Lookup("fault-file").Value.String() != "" {
			return
		}
		fmt.Fprintf(&b, " --%s=%s", fl.Name, fl.Value.String())
	})
	return b.String()
}

func newRunFlagSet(f *runFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fiomig run [flags]

Runs the migrations scenario on the embedded deterministic simulator: N volumes
served by 3 storage nodes, consumer hosts connected to every published endpoint,
and --migrations migrations one after another, each with a cutover that keeps
every path inaccessible for about --cutover-pause seconds. Every host's kernel
NVMe state is sampled every --sample-interval seconds of virtual time, then the
run settles and is judged from the record alone:

  pause-bound          longest pause window per migration and host <= --pause-crit
  freezes              pause windows per migration <= --freezes-allowed
  leaked-controllers   no controller nvmeof.Inspect flags after the settle period
  path-completeness    a controller for every published ip:port on every consumer host
  split-brain          never a source and a target path both optimized
  served-after-cutover every namespace served by a live target controller,
                       judged --attribution-margin seconds after each cutover
  unattributed-pauses  no pause window outside every migration
  faults-landed        every injected fault left evidence, and every kind
                       asked for landed at least once

and the seed harness's checks (operator fio_migration_test.py, sbtest):

  migration-outcomes   >= --min-completed completed, <= --max-timed-out not
                       ended within --migration-timeout
  io-outage            no volume without a completed I/O for --outage seconds
                       (runs with a workload)
  data-integrity       no verify failure nor fio errno 84 EILSEQ, 5 EIO,
                       28 ENOSPC, 30 EROFS; each charged to the migration that
                       ended at most --verify-lag seconds before it
  controller-churn     <= --max-net-controllers created minus removed per
                       subsystem and host, <= --max-reconnects per controller
  loss-timeout         warns on ctrl_loss_tmo above --max-ctrl-loss-tmo or off
  paths-per-subsystem  warns on more than --max-paths controllers per
                       subsystem on a host at the end
  dirty-start          a controller leaked before the run (connecting, or
                       live with no namespace, in the first sample) makes
                       the run inconclusive
  target-log-pattern   < --max-not-allowed target rejections logged as
                       "does not allow host"

A warn is reported (report.md, junit.xml system-out) and does not fail the run.

It writes <out>/fio-mig-<unix seconds>/ with plan.json, timeline.jsonl,
summary.json, report.md, report.html, junit.xml and plots/, and prints the
verdicts. The same --seed gives byte-identical timeline.jsonl and
summary.json. plan.json's "command" names the binary fiomig: from a
checkout, run it as ./bin/fiomig.

Faults: by default (--faults default) the run injects one fault of every
kind, drawn from the seed, each tied to a stage of one migration (#1, #3, …)
so that together they cover every stage; report.md lists each fault (kind,
target, stage at injection, evidence, landed or not) and a kind × stage
matrix. Kinds: target-restart, dropped-connects, aborted-validation,
node-crash, network-partition (target host/node), connect-rejected,
operator-restart (target operator), reset-controller (target host, params
node), ana-flap. Two faults of one kind and target that overlap share one
effect, which ends with the last recover. --faults none injects nothing.

A fault file (--fault-file) is YAML or JSON:

  faults:
  - kind: target-restart     # one of the kinds above
    target: storage-2        # node, host, host/node, ip:port, migration or operator
    when: in-freeze          # a stage, a VolumeMigration phase (Validating, ...),
                             # or seconds since run start (30, "30s", "t=30")
    migration: "#3"          # optional: the 3rd migration started, or an id
    duration: 10             # seconds until recovery
    params: {after_s: 0.5}   # optional, per kind (after_s delays the injection)

Unknown fields and kinds are errors naming the file, the entry and the field.

What the samples can see: a pause window measured from samples every D s
is off by up to D at each end, and a window shorter than D can be missed,
so pause-bound and freezes are judged only when --sample-interval <= 0.1 x
--pause-crit (else inconclusive, naming both). A gap between two samples of
a host longer than 3 intervals (the settle interval in the settle period),
or a host with no sample, makes every check over that host and time range
inconclusive, naming both.

Exit codes: 0 pass, 1 a check failed, 2 bad usage or input, 3 inconclusive
(a check had too little record to judge: no migration, a fault or a fault
kind that left no evidence, a sample interval too coarse for the bound, a
hole in a host's samples, or a --settle shorter than --attribution-margin
leaves served-after-cutover unjudged), 130 interrupted (the timeline keeps
what was recorded).

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), kubeFaultHelp())
	}
	return fs
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	// SIGINT and SIGTERM are caught from the first instant: the run then
	// stops in order (fio stopped, volumes unmounted) and exits 130 with
	// its run directory (interruptContext).
	ctx, stop := interruptContext(stderr, "fiomig run")
	defer stop()
	var f runFlags
	fs := newRunFlagSet(&f, stderr)
	// --help to stdout; a bad flag in one line (host_cmds.go parseFlags).
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if err := envDefaults(fs, os.Getenv); err != nil {
		fmt.Fprintf(stderr, "fiomig run: %v\n", err)
		return exitUsage
	}
	workloadDefaults(fs, &f)
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "fiomig run: %v\n", err)
		return exitUsage
	}
	if f.faultFile != "" {
		bothGiven := false
		fs.Visit(func(fl *flag.Flag) { bothGiven = bothGiven || fl.Name == "faults" })
		if bothGiven {
			fmt.Fprintln(stderr, "fiomig run: give --faults or --fault-file, not both (the file's schedule replaces --faults)")
			return exitUsage
		}
	}
	switch f.kube.backend {
	case "kube":
		return runKube(&f, fs, stdout, stderr)
	case "sim":
	default:
		fmt.Fprintf(stderr, "fiomig run: --backend must be sim or kube, got %q\n", f.kube.backend)
		return exitUsage
	}

	if f.p.SampleIntervalS > checks.ResolutionFraction*f.p.PauseCritS {
		fmt.Fprintf(stderr, "fiomig run: warning: --sample-interval %g s is coarser than %g × --pause-crit %g s: pause-bound and freezes will be inconclusive (sample every %g s or less to judge them)\n",
			f.p.SampleIntervalS, checks.ResolutionFraction, f.p.PauseCritS, checks.ResolutionFraction*f.p.PauseCritS)
	}
	fmt.Fprintln(stdout, "fiomig run — parameters:")
	fs.VisitAll(func(fl *flag.Flag) { fmt.Fprintf(stdout, "  --%-24s %s\n", fl.Name, fl.Value.String()) })
	cmdline := reproduceCommand(fs)
	fmt.Fprintf(stdout, "  reproduce with: %s\n", cmdline)

	// The fault schedule is drawn on the world's topology (the same for
	// both workloads: scenario.SimCluster's shape).
	topo, terr := scenario.SimCluster(f.seed, f.params())
	if terr != nil {
		fmt.Fprintf(stderr, "fiomig run: simulator: %v\n", terr)
		return exitUsage
	}
	sched, serr := scenario.FaultSchedule(f.seed, f.params(), topo.Topology(), f.faultKinds, f.faultFile)
	topo.Close()
	if serr != nil {
		fmt.Fprintf(stderr, "fiomig run: %v\n", serr)
		return exitUsage
	}
	fmt.Fprintf(stdout, "  faults: %d scheduled (%s)\n", len(sched), f.faultSelection())

	if ctx.Err() != nil {
		// Interrupted before anything ran: nothing to record.
		fmt.Fprintln(stderr, "fiomig run: interrupted before the run started; nothing was recorded")
		return exitInterrupted
	}
	scfg := scenario.Config{
		Plan: record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: f.seed,
			Command: cmdline, Params: f.params(), Faults: sched},
		OutDir: f.out, StartUnix: time.Now().Unix(), Progress: stdout,
	}
	var res scenario.Result
	var err error
	if f.p.Workload == scenario.WorkloadFio {
		// Real fio through FUSE (scenario/workload.go): mounts, processes
		// and the wall clock are the scenario's business.
		if aerr := workload.Available(); aerr != nil {
			fmt.Fprintf(stderr, "fiomig run: --workload=fio cannot run here: %v\n", aerr)
			return exitUsage
		}
		res, err = scenario.RunFio(ctx, f.seed, scfg, scenario.FioOptions{RateIOPS: f.p.FioRateIOPS, CorruptWrite: f.p.FioCorruptWrite})
	} else {
		cluster, cerr := scenario.SimCluster(f.seed, f.params())
		if cerr != nil {
			fmt.Fprintf(stderr, "fiomig run: simulator: %v\n", cerr)
			return exitUsage
		}
		defer cluster.Close()
		res, err = scenario.Run(ctx, cluster, scfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fiomig run: %v\n", err)
		if res.Dir != "" {
			fmt.Fprintf(stderr, "fiomig run: what was recorded is in %s\n", res.Dir)
		}
		if res.Interrupted {
			return exitInterrupted
		}
		return exitUsage
	}
	if res.Interrupted {
		hint := "summary.json says interrupted; fiomig report " + res.Dir + " writes a report of it"
		if res.Summary.Coverage == nil { // nothing was sampled: fio was still starting
			hint = "interrupted before the first sample: nothing to report"
		}
		fmt.Fprintf(stderr, "fiomig run: interrupted; the timeline recorded so far is in %s (%s)\n",
			filepath.Join(res.Dir, record.TimelineFile), hint)
		return exitInterrupted
	}
	return printVerdicts(stdout, res.Dir, res.Summary)
}

// printVerdicts prints each check's verdict and the report path, and maps
// the overall verdict to the exit code.
func printVerdicts(w io.Writer, dir string, sum record.Summary) int {
	fmt.Fprintln(w, "checks:")
	for _, c := range sum.Checks {
		fmt.Fprintf(w, "  %-22s %-12s %s\n", c.Name, c.Verdict, c.Detail)
	}
	fmt.Fprintf(w, "verdict: %s\nreport:  %s\n", sum.Verdict, filepath.Join(dir, "report.md"))
	switch sum.Verdict {
	case record.Pass:
		return exitPass
	case record.Inconclusive:
		return exitInconclusive
	default:
		return exitCheckFailed
	}
}

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM, and says on stderr that the command is stopping; later signals
// are absorbed while it cleans up (every cleanup deadline is bounded; a
// kill -9 leaves what "fiomig janitor" removes). stop restores the default
// signal handling.
func interruptContext(stderr io.Writer, name string) (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-done: // stop() cancelled it: no signal
			default:
				fmt.Fprintf(stderr, "%s: interrupted: stopping in order (a real workload's fio stopped and its volumes unmounted) and keeping the record so far\n", name)
			}
		case <-done:
		}
	}()
	return ctx, func() { close(done); stop() }
}
