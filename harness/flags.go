package harness

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// RegisterFlags defines fiomig run's flags on fs, each bound to its field
// of s, and sets s to DefaultSpec: the flags' defaults are the main job's.
// Every flag reads and writes s itself, so Command can render any spec.
func RegisterFlags(fs *flag.FlagSet, s *Spec) {
	*s = DefaultSpec()
	d, p, sd := DefaultSpec(), &s.Params, &s.Params.Seed
	fs.Int64Var(&s.Seed, "seed", d.Seed, "`seed` of every random choice; the same seed gives a byte-identical timeline.jsonl and summary.json")
	fs.IntVar(&p.Migrations, "migrations", d.Params.Migrations, "number of migrations, run one after another")
	fs.Float64Var(&p.SampleIntervalS, "sample-interval", d.Params.SampleIntervalS, "`seconds` between samples of every host's controllers")
	fs.Float64Var(&p.SettleSampleIntervalS, "settle-sample-interval", d.Params.SettleSampleIntervalS, "`seconds` between samples during the settle period (0 = --sample-interval); the settle judges end states (leaks, path completeness), so 1 s by default")
	fs.Float64Var(&p.PauseCritS, "pause-crit", d.Params.PauseCritS, "`seconds`: bound on the longest pause window per migration and host (CUTOVER_PAUSE_CRIT_S; the flag wins over the environment)")
	fs.IntVar(&p.FreezesAllowed, "freezes-allowed", d.Params.FreezesAllowed, "pause windows allowed per migration (CUTOVER_FREEZES_ALLOWED)")
	fs.Float64Var(&p.SettleS, "settle", d.Params.SettleS, "`seconds` the run keeps sampling after the last migration before leaks and completeness are judged; the default outlasts the sourced repairs (sbcli's lvol monitor: 300 s sweep + 30 s cycle; the CSI restore's backoff: up to 60 s); with --workload=fio, on the wall clock, the default is 90 s, and a path or namespace those repairs may still bring back is not judged (docs/fio.md)")
	fs.Float64Var(&p.AttributionMarginS, "attribution-margin", d.Params.AttributionMarginS, "`seconds` after a migration's terminal phase during which a pause window still belongs to it")
	fs.Float64Var(&p.GapS, "gap", d.Params.GapS, "`seconds` between one migration's end and the next one's start")
	fs.Var(fullSamples{&p.TimelineFormat}, "full-samples", "write every host's whole state at every tick (timeline format version 1) instead of only changes plus one heartbeat line per tick (version 2, the default; record/FORMAT.md); the verdicts are the same, the timeline is ~50x larger")
	fs.StringVar(&s.Out, "out", d.Out, "`directory` under which the run directory fio-mig-<unix seconds> is created")
	fs.Var(workloadValue{&p.Workload}, "workload", "`sim`: the simulator's modelled I/O on virtual time; fio: one real fio process per volume on a FUSE file that follows the simulated host's multipath head, the simulator driven by the wall clock, with the same model switches (needs root, /dev/fuse and fio; fio's output goes to <run dir>/fio/; one namespace per volume only)")
	fs.IntVar(&p.FioRateIOPS, "fio-rate-iops", d.Params.FioRateIOPS, "with --workload=fio: each volume's fio job is capped at this many `I/Os per second` (rate_iops)")
	fs.Int64Var(&p.FioCorruptWrite, "fio-corrupt-write", 0, "with --workload=fio: store the `N`-th write to the first volume corrupted underneath fio, to prove a verify failure is reported as a data integrity failure with its offset (0 = off)")
	fs.Var(faultsValue{&p.Faults}, "faults", "`default`: a seeded schedule scaled to the run, one fault per two migrations of distinct kinds (all nine from 20 migrations on), on every other migration, across the stages (in-validation, before-cutover, in-freeze, after-cutover), at most as many where they may end a migration as migration-outcomes allows (docs/faults.md); none; or a comma-separated list of kinds ("+strings.Join(faults.Kinds, ", ")+"), one fault of each, drawn the same way")
	fs.Var(faultFileValue{&p.Faults}, "fault-file", "a fault `file` (YAML or JSON; format in fiomig run --help) whose schedule replaces --faults")
	ModelFlags(fs, &p.Model)
	fs.Float64Var(&sd.MinCompleted, "min-completed", d.Params.Seed.MinCompleted, "`fraction` of migrations that must complete within --migration-timeout (migration-outcomes)")
	fs.Float64Var(&sd.MaxTimedOut, "max-timed-out", d.Params.Seed.MaxTimedOut, "`fraction` of migrations that may not end within --migration-timeout (migration-outcomes)")
	fs.Float64Var(&sd.MigrationTimeoutS, "migration-timeout", d.Params.Seed.MigrationTimeoutS, "`seconds` a migration may take before it counts as timed out (the seed harness's 420 s)")
	fs.Float64Var(&sd.OutageS, "outage", d.Params.Seed.OutageS, "`seconds` without a completed I/O on a volume that fail io-outage")
	fs.Float64Var(&sd.VerifyLagS, "verify-lag", d.Params.Seed.VerifyLagS, "`seconds` after a migration's end within which a verify failure is charged to it (data-integrity; fio detects lost writes 3-34 s later)")
	fs.IntVar(&sd.MaxNetControllers, "max-net-controllers", d.Params.Seed.MaxNetControllers, "controllers created minus removed per subsystem and host above which controller-churn fails")
	fs.IntVar(&sd.MaxReconnects, "max-reconnects", d.Params.Seed.MaxReconnects, "reconnect `attempts` of one controller above which controller-churn fails")
	fs.IntVar(&sd.MaxCtrlLossTmoS, "max-ctrl-loss-tmo", d.Params.Seed.MaxCtrlLossTmoS, "`seconds` of ctrl_loss_tmo above which (or off) loss-timeout warns")
	fs.IntVar(&sd.MaxPaths, "max-paths", d.Params.Seed.MaxPaths, "controllers per subsystem on a host at the end above which paths-per-subsystem warns")
	fs.IntVar(&sd.MaxNotAllowed, "max-not-allowed", d.Params.Seed.MaxNotAllowed, "target rejections logged as \"does not allow host\" at or above which target-log-pattern fails (>= 1; 1 allows none)")
	k := &s.Kube
	fs.StringVar(&s.Backend, "backend", d.Backend, "`sim`: the embedded simulator; kube: a real Kubernetes cluster running simplyblock (needs --kubeconfig and --storage-class; see docs/kube.md)")
	fs.StringVar(&s.Kubeconfig, "kubeconfig", d.Kubeconfig, "with --backend kube: kubeconfig `file` (default $KUBECONFIG)")
	fs.StringVar(&k.Namespace, "namespace", d.Kube.Namespace, "with --backend kube: `namespace` of the run's PVCs and pods and of the agent DaemonSet")
	fs.StringVar(&k.StorageNamespace, "storage-namespace", d.Kube.StorageNamespace, "with --backend kube: the StorageCluster's `namespace` (its StorageNodeSets; the run's VolumeMigrations and the operator's Jobs)")
	fs.StringVar(&k.ControlPlaneNamespace, "control-plane-namespace", "", "with --backend kube: `namespace` of the control-plane (webappapi) pods (default: --storage-namespace)")
	fs.StringVar(&k.SPDKNamespace, "spdk-namespace", "", "with --backend kube: `namespace` of the storage nodes' SPDK pods (default: --storage-namespace)")
	fs.StringVar(&s.ClusterSecretFile, "cluster-secret-file", "", "with --backend kube: `file` holding the control plane's cluster secret, bare or as simplyblock's secret.json (default: $"+kube.SecretEnv+"); it is never printed or recorded")
	fs.StringVar(&k.StorageClass, "storage-class", d.Kube.StorageClass, "with --backend kube: StorageClass `name` of the volumes' PVCs")
	fs.StringVar(&k.VolumeSize, "volume-size", d.Kube.VolumeSize, "with --backend kube: each PVC's `size`")
	fs.StringVar(&k.FioImage, "fio-image", d.Kube.FioImage, "with --backend kube: `image` of the fio container (make images builds it; an image without fio installs it with apk)")
	fs.StringVar(&k.HelperImage, "helper-image", d.Kube.HelperImage, "with --backend kube: `image` whose entry point is fiomig (fio log sidecar, nft helper; make images builds it)")
	fs.BoolVar(&k.FioResults, "fio-results", d.Kube.FioResults, "with --backend kube: stop the fio pods after the run, bring their results and per-I/O logs into <run dir>/fio/ and judge them (the fio-* checks)")
	fs.Var(seconds{&k.SetupTimeoutS}, "setup-timeout", "with --backend kube: how long to wait for PVCs to bind and pods to run")
}

// ModelFlags defines a flag for the switches of m a run may change — the
// world's shape and the control plane's, operator's and kernel's switches
// — each bound to its field and defaulting to DefaultSpec's value. Names
// are the plan.json names with dashes (csi_restore: --csi-restore); those
// in skip are left out.
func ModelFlags(fs *flag.FlagSet, m *record.Model, skip ...string) {
	d := DefaultSpec().Params.Model
	*m = d
	def := func(name string, f func()) {
		if !slices.Contains(skip, name) {
			f()
		}
	}
	def("volumes", func() { fs.IntVar(&m.Volumes, "volumes", d.Volumes, "number of volumes (one NVMe-oF subsystem each)") })
	def("hosts", func() { fs.IntVar(&m.Hosts, "hosts", d.Hosts, "number of consumer hosts") })
	def("consumers-per-volume", func() {
		fs.IntVar(&m.ConsumersPerVolume, "consumers-per-volume", d.ConsumersPerVolume, "consumer hosts per volume (hosts running a pod that uses it)")
	})
	def("namespaces-per-volume", func() {
		fs.IntVar(&m.NamespacesPerVolume, "namespaces-per-volume", d.NamespacesPerVolume, "`N` namespaces (NSIDs 1..N) per namespaced volume's subsystem; such a volume migrates as a batch (the whole subsystem moves), and a pause of any one namespace is a pause")
	})
	def("namespaced-volumes", func() {
		fs.IntVar(&m.NamespacedVolumes, "namespaced-volumes", d.NamespacedVolumes, "how many of the volumes (the last ones) are namespaced, the others single-namespace (0 = all; the seed harness mixes 10 single and 6 namespaced)")
	})
	def("cutover-pause", func() {
		fs.Float64Var(&m.CutoverPauseS, "cutover-pause", d.CutoverPauseS, "`seconds` the simulated cutover keeps every path inaccessible (each window is this ±25%, drawn from the seed)")
	})
	def("control-plane", func() {
		fs.StringVar(&m.ControlPlane, "control-plane", d.ControlPlane, "the simulated control plane's cancel before continue: `sbcli` (as sourced: _cleanup_created deletes the volume's subsystem on the source's tertiary node, docs/simulator.md; with --lvol-monitor and --csi-restore ip-port, the defaults, that path comes back) or fixed-cancel (an assumed fix, with no source, that spares the tertiaries)")
	})
	def("lvol-monitor", func() {
		fs.BoolVar(&m.LvolMonitor, "lvol-monitor", d.LvolMonitor, "run sbcli's lvol monitor repair in the simulator (every 300 s it re-creates a non-leader's deleted subsystem and listener and re-adds a missing namespace; sourced, docs/simulator.md)")
	})
	def("csi-restore", func() {
		fs.StringVar(&m.CSIRestore, "csi-restore", d.CSIRestore, "the CSI driver's path restore in the simulator: `off`, ip (pre-fix: only when no controller of the subsystem is at that IP) or ip-port (fixed: every published ip:port without a controller)")
	})
	def("operator", func() {
		fs.StringVar(&m.Operator, "operator", d.Operator, "the simulated migration operator: `fixed` (simplyblock-operator 5aa711cc) or prefix (36c00741, the code of fio-mig-1787159565)")
	})
	def("release-sources", func() {
		fs.BoolVar(&m.ReleaseSources, "release-sources", d.ReleaseSources, "fiomig's extra, not the fix, on by default so that the main job runs a system that should pass: the simulated fixed operator runs a release Job for the source paths on every consumer host after the cutover. The fixed operator as sourced (simplyblock-operator 5aa711cc) releases migration paths only when it cancels (cancelAndFail, reconcileAbort) and touches no host after Completed: with --release-sources=false the source controllers reconnect into \"does not allow host\" until ctrl_loss_tmo removes them and target-log-pattern fails (fiomig reproduce fixed-operator-source-paths). The prefix operator ignores it")
	})
	def("listener-race", func() {
		fs.BoolVar(&m.ListenerRace, "listener-race", d.ListenerRace, "simulated control plane: on a target node that does not hold the subsystem, CreateMigration adds the listener before the namespace and the add_ns fails, which it only logs (sbcli migration_controller.py create_migration :1180 → :1197 → :1204; SB 97ef965c2: the host connects, live, and the namespace never joins the head); off by default: no source says this happened in the incident")
	})
	def("swap-readd-fail", func() {
		fs.Float64Var(&m.SwapReaddFail, "swap-readd-fail", d.SwapReaddFail, "simulated control plane: `probability` that one namespace re-add of a batch cutover's two-pass swap fails, which it only logs (sbcli tasks_runner_batch_migration.py :509): that node's controllers stay live with a partial leg set (0 = never); off by default: no source says this happened in the incident")
	})
	def("nsid-divergence", func() {
		fs.BoolVar(&m.NSIDDivergence, "nsid-divergence", d.NSIDDivergence, "simulated control plane: in each batch cutover's swap one overlap node re-adds two members in the other order, so the namespaces' NSIDs differ there (the re-add passes no nsid, :509; sbcli branch fix fabb18694 passes it) and the kernel refuses them on that node's controllers (\"IDs don't match for shared namespace N\", sbcli lvol_controller.py:1264-1276); off by default: no source says this happened in the incident")
	})
	def("reconnect-reset", func() {
		fs.StringVar(&m.ReconnectReset, "reconnect-reset", d.ReconnectReset, "host kernel's reconnect counter reset: `full` (upstream: after a successful reconnect) or partial (also after a rejected CONNECT, as field reports say some kernels do)")
	})
	def("kernel-dnr", func() {
		fs.StringVar(&m.KernelDNR, "kernel-dnr", d.KernelDNR, "host kernel's handling of a CONNECT rejected with DNR: `honor` (stop reconnecting) or ignore")
	})
	def("target-dnr", func() {
		fs.BoolVar(&m.TargetDNR, "target-dnr", d.TargetDNR, "targets set DNR on rejected CONNECTs (SPDK's \"does not allow host\" reply does not)")
	})
}

// IsModelFlag says whether name is one of ModelFlags' flags.
func IsModelFlag(name string) bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var m record.Model
	ModelFlags(fs, &m)
	return fs.Lookup(name) != nil
}

// Command is the one command line that reruns s: "fiomig run" and every
// flag whose value differs from its default, as --name=value in the flag
// set's (sorted) order; never --out. A default that changes later would
// change what the command runs: plan.json's params hold every value, and
// SpecFromPlan reruns from them.
func (s Spec) Command() string {
	return CommandLine("fiomig run", s.Flags())
}

// Flags are fiomig run's flags that differ from their defaults for s, as
// --name=value (not quoted), in name order; never --out nor those in skip.
func (s Spec) Flags(skip ...string) []string {
	fs := flag.NewFlagSet("fiomig run", flag.ContinueOnError)
	var x Spec
	RegisterFlags(fs, &x)
	x = s
	return ChangedFlags(fs, append(skip, "out")...)
}

// ChangedFlags are the flags of fs whose value is not their default, as
// --name=value in name order, but those in skip.
func ChangedFlags(fs *flag.FlagSet, skip ...string) []string {
	out := []string{}
	fs.VisitAll(func(fl *flag.Flag) {
		if v := fl.Value.String(); v != fl.DefValue && !slices.Contains(skip, fl.Name) {
			out = append(out, "--"+fl.Name+"="+v)
		}
	})
	return out
}

// CommandLine is cmd followed by flags (--name=value), each value
// shell-quoted where a shell would split or expand it.
func CommandLine(cmd string, flags []string) string {
	var b strings.Builder
	b.WriteString(cmd)
	for _, f := range flags {
		name, v, _ := strings.Cut(f, "=")
		b.WriteString(" " + name + "=" + shellQuote(v))
	}
	return b.String()
}

// shellQuote quotes v for a POSIX shell when it holds anything but
// letters, digits and ._-/:,=+@.
func shellQuote(v string) string {
	if v != "" && strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:,=+@", r))
	}) < 0 {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// EnvDefaults applies CUTOVER_PAUSE_CRIT_S and CUTOVER_FREEZES_ALLOWED to
// the flags of fs not given on the command line; a bad value is a
// UsageError naming the variable.
func EnvDefaults(fs *flag.FlagSet, getenv func(string) string) error {
	given := Given(fs)
	for _, flagName := range slices.Sorted(maps.Keys(envOf)) {
		env := envOf[flagName]
		v := getenv(env)
		if v == "" || given[flagName] {
			continue
		}
		if err := fs.Set(flagName, v); err != nil {
			return Usagef("environment %s=%q: %v", env, v, err)
		}
	}
	return nil
}

var envOf = map[string]string{"pause-crit": "CUTOVER_PAUSE_CRIT_S", "freezes-allowed": "CUTOVER_FREEZES_ALLOWED"}

// Given is the set of flags of fs set on the command line.
func Given(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	return given
}

// KubeFaultHelp lists the fault kinds the kube backend can inject, for
// fiomig run --help.
func KubeFaultHelp() string {
	s := "\nFaults on --backend kube: only these kinds (the default selection is all of them; any\nother kind, in --faults or --fault-file, is refused before the run starts):\n"
	for _, k := range slices.Sorted(maps.Keys(kube.Kinds)) {
		s += fmt.Sprintf("  %-19s %s\n", k, kube.Kinds[k])
	}
	return s
}

// Flag values that read and write a field of a Spec in another form than
// the field's own. Each tolerates a nil pointer (the flag package calls
// String on a zero value to tell whether a default is worth printing).

// fullSamples is --full-samples: the timeline format version 1.
type fullSamples struct{ v *int }

func (f fullSamples) String() string {
	return strconv.FormatBool(f.v != nil && *f.v == record.FormatFull)
}
func (f fullSamples) IsBoolFlag() bool { return true }
func (f fullSamples) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.v = record.FormatChangeOnly
	if on {
		*f.v = record.FormatFull
	}
	return nil
}

// workloadValue is --workload: "" is the simulator's (record.WorkloadSim).
type workloadValue struct{ v *string }

func (w workloadValue) String() string {
	if w.v == nil || *w.v == "" {
		return record.WorkloadSim
	}
	return *w.v
}

func (w workloadValue) Set(s string) error {
	if s == record.WorkloadSim {
		s = ""
	}
	*w.v = s
	return nil
}

// faultsValue is --faults: the fault selection, unless a fault file is
// (then it shows the default, so that a rerun command names the file only).
type faultsValue struct{ v *string }

func (f faultsValue) String() string {
	if f.v == nil || *f.v == "" || strings.HasPrefix(*f.v, record.FaultsFilePrefix) {
		return record.FaultsDefault
	}
	return *f.v
}

func (f faultsValue) Set(s string) error { *f.v = s; return nil }

// faultFileValue is --fault-file: the selection "file:<path>".
type faultFileValue struct{ v *string }

func (f faultFileValue) String() string {
	if f.v == nil {
		return ""
	}
	p, _ := strings.CutPrefix(*f.v, record.FaultsFilePrefix)
	if p == *f.v {
		return ""
	}
	return p
}

func (f faultFileValue) Set(s string) error {
	if s != "" {
		*f.v = record.FaultsFilePrefix + s
	} else if strings.HasPrefix(*f.v, record.FaultsFilePrefix) {
		*f.v = record.FaultsDefault
	}
	return nil
}

// seconds is a duration flag ("5m", "90s") stored as float64 seconds.
type seconds struct{ v *float64 }

func (s seconds) String() string {
	if s.v == nil {
		return "0s"
	}
	return (time.Duration(*s.v * float64(time.Second))).String()
}

func (s seconds) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	*s.v = d.Seconds()
	return nil
}
