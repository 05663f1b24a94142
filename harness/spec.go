package harness

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/workload"
)

// Backends (Spec.Backend).
const (
	BackendSim  = "sim"
	BackendKube = "kube"
)

// Spec is one run, typed: what fiomig run's flags bind to (RegisterFlags),
// what plan.json records (Seed, Params, the backend and the kube
// settings) and what sweep, shrink, reproduce and the suites build and
// change. A rerun starts from a Spec (SpecFromPlan), never from a command
// line.
type Spec struct {
	Seed int64
	// Params are the pacing, thresholds, choices and the simulated world
	// (record.Params, its Model included).
	Params record.Params
	// Schedule, when not nil, is the fault schedule to run as it is
	// (shrink's candidates); nil draws it from Params.Faults on the run's
	// topology (the default schedule, none, a list of kinds, or a fault
	// file).
	Schedule []record.FaultSpec
	// Backend is BackendSim (the embedded simulator) or BackendKube.
	Backend string
	// Kube are the kube backend's settings (RunID is filled by the run);
	// Kubeconfig its kubeconfig file, ClusterSecretFile the file holding
	// the control plane's cluster secret (neither recorded).
	Kube                          record.KubeParams
	Kubeconfig, ClusterSecretFile string
	// Out is the directory under which the run directory is created.
	Out string
}

// DefaultSpec is fiomig run with no flag: the main job on the simulator,
// seed 1, with scenario.DefaultParams, writing under out/.
func DefaultSpec() Spec {
	p := scenario.DefaultParams()
	p.FioRateIOPS = workload.DefaultRateIOPS
	return Spec{Seed: 1, Params: p, Backend: BackendSim, Out: "out",
		Kube: record.KubeParams{Namespace: "fiomig", StorageNamespace: "simplyblock", VolumeSize: "1Gi",
			FioImage: "ghcr.io/fiomig/fio:3.33-3", HelperImage: "ghcr.io/fiomig/fiomig:latest", SetupTimeoutS: 300, FioResults: true},
		Kubeconfig: os.Getenv("KUBECONFIG")}
}

// SpecFromPlan is the spec that reruns the run plan.json records: its
// seed, its params (the world included) and its backend; the fault
// schedule is drawn again from params.faults (set Schedule to plan.Faults
// to rerun the schedule as executed instead).
func SpecFromPlan(plan record.Plan) Spec {
	s := DefaultSpec()
	s.Seed, s.Params = plan.Seed, plan.Params
	if s.Params.FioRateIOPS == 0 {
		s.Params.FioRateIOPS = workload.DefaultRateIOPS
	}
	if plan.Backend != "" {
		s.Backend = plan.Backend
	}
	if k := plan.Params.Kube; k != nil {
		s.Kube = *k
		s.Kube.RunID = ""
	}
	return s
}

// UsageError is a spec or an input no run can take (fiomig's exit 2);
// its message names the flag, file or field.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var u UsageError
	return errors.As(err, &u)
}

// Record bounds: a run samples every host at most maxSamplesPerHost times
// in its migrations and again in its settle period, so that a mistyped
// flag cannot fill the disk (one sample line is about 3 kB); minMigrationS
// is the shortest a simulated migration usually takes, seconds.
const (
	maxSamplesPerHost = 1e6
	minMigrationS     = 10.0
)

// Validate checks s before any work: ranges that keep a run's record
// bounded, the switches' values, the fault selection, the workload and the
// backend's needs. Errors are UsageErrors naming the flag.
func (s Spec) Validate() error {
	p, m := s.Params, s.Params.Model
	for _, r := range []struct {
		name     string
		v        float64
		min, max float64
		openMin  bool // v must be > min rather than >= min
	}{
		{"--sample-interval", p.SampleIntervalS, 0.001, 60, false},
		{"--cutover-pause", m.CutoverPauseS, 0, 600, true},
		{"--pause-crit (or CUTOVER_PAUSE_CRIT_S)", p.PauseCritS, 0, 3600, true},
		{"--settle", p.SettleS, 0, 86400, false},
		{"--attribution-margin", p.AttributionMarginS, 0, 3600, false},
		{"--gap", p.GapS, 0, 3600, false},
	} {
		below := r.v < r.min || (r.openMin && r.v == r.min)
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) || below || r.v > r.max {
			lo := "["
			if r.openMin {
				lo = "("
			}
			return Usagef("%s must be a finite number of seconds in %s%g, %g], got %v", r.name, lo, r.min, r.max, r.v)
		}
	}
	// The seed harness's thresholds, by the rules the record's reader
	// applies to plan.json (record.Plan.Validate): a value it would refuse
	// is refused here, before any work, so that every run recorded can be
	// re-judged (fiomig report) and no run directory is left with a plan
	// that cannot be written (a NaN).
	sd := p.Seed
	for _, r := range []struct {
		name string
		v    float64
	}{{"--min-completed", sd.MinCompleted}, {"--max-timed-out", sd.MaxTimedOut}} {
		if !(r.v >= 0 && r.v <= 1) {
			return Usagef("%s must be a fraction in [0, 1], got %v", r.name, r.v)
		}
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"--migration-timeout", sd.MigrationTimeoutS}, {"--outage", sd.OutageS}, {"--verify-lag", sd.VerifyLagS}} {
		if !(r.v >= 0) || math.IsInf(r.v, 0) {
			return Usagef("%s must be a finite number of seconds >= 0, got %v", r.name, r.v)
		}
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"--max-net-controllers", sd.MaxNetControllers}, {"--max-reconnects", sd.MaxReconnects},
		{"--max-ctrl-loss-tmo", sd.MaxCtrlLossTmoS}, {"--max-paths", sd.MaxPaths}, {"--max-not-allowed", sd.MaxNotAllowed}} {
		if r.v < 0 {
			return Usagef("%s must be >= 0, got %d", r.name, r.v)
		}
	}
	if v := p.SettleSampleIntervalS; v != 0 && (math.IsNaN(v) || v < 0.001 || v > 3600) {
		return Usagef("--settle-sample-interval must be 0 (= --sample-interval) or a finite number of seconds in [0.001, 3600], got %v", v)
	}
	settleInterval := p.SettleSampleIntervalS
	if settleInterval == 0 {
		settleInterval = p.SampleIntervalS
	}
	if n := p.SettleS / settleInterval; n > maxSamplesPerHost {
		return Usagef("--settle %g s sampled every %g s is %.0f samples per host; keep it under 1,000,000 (raise --settle-sample-interval)", p.SettleS, settleInterval, n)
	}
	// The migrations' part of the record, estimated from below: a migration
	// on the simulator takes about 15 s (validation, sync, cutover) and
	// rarely under minMigrationS, plus the gap after it.
	if n := float64(p.Migrations) * (minMigrationS + p.GapS) / p.SampleIntervalS; n > maxSamplesPerHost {
		return Usagef("--migrations %d at %g s or more each (with --gap %g s) sampled every %g s is over %.0f samples per host; keep it under 1,000,000 (run fewer migrations or raise --sample-interval)",
			p.Migrations, minMigrationS+p.GapS, p.GapS, p.SampleIntervalS, n)
	}
	oneOf := func(v string, allowed ...string) bool {
		for _, a := range allowed {
			if v == a {
				return true
			}
		}
		return false
	}
	switch {
	case p.Migrations < 0 || p.Migrations > 100000:
		return Usagef("--migrations must be in [0, 100000], got %d", p.Migrations)
	case m.Volumes < 1 || m.Volumes > 10000:
		return Usagef("--volumes must be in [1, 10000], got %d", m.Volumes)
	case m.Hosts < 1 || m.Hosts > 1000:
		return Usagef("--hosts must be in [1, 1000], got %d", m.Hosts)
	case m.ConsumersPerVolume < 1 || m.ConsumersPerVolume > m.Hosts:
		return Usagef("--consumers-per-volume must be between 1 and --hosts (%d), got %d", m.Hosts, m.ConsumersPerVolume)
	case !oneOf(m.CSIRestore, record.CSIRestoreOff, record.CSIRestoreByIP, record.CSIRestoreByEndpoint):
		return Usagef("--csi-restore must be off, ip or ip-port, got %q", m.CSIRestore)
	case m.NamespacesPerVolume < 1 || m.NamespacesPerVolume > 64:
		return Usagef("--namespaces-per-volume must be in [1, 64], got %d", m.NamespacesPerVolume)
	case m.NamespacedVolumes < 0 || m.NamespacedVolumes > m.Volumes:
		return Usagef("--namespaced-volumes must be between 0 and --volumes (%d), got %d", m.Volumes, m.NamespacedVolumes)
	case p.FreezesAllowed < 0:
		return Usagef("--freezes-allowed (or CUTOVER_FREEZES_ALLOWED) must be >= 0, got %d", p.FreezesAllowed)
	case !oneOf(p.Workload, "", record.WorkloadSim, record.WorkloadFio):
		return Usagef("--workload must be %s or %s, got %q", record.WorkloadSim, record.WorkloadFio, p.Workload)
	case p.IsFio() && m.NamespacesPerVolume > 1:
		return Usagef("%s", scenario.FioNamespacesUnsupported(m.NamespacesPerVolume))
	case p.IsFio() && p.FioRateIOPS < 2:
		// Split into a read,write cap (70,30 for 100); a 0 cap would mean "no limit" to fio.
		return Usagef("--fio-rate-iops must be >= 2 (it is split between reads and writes), got %d", p.FioRateIOPS)
	case !oneOf(m.ControlPlane, record.ControlPlaneSbcli, record.ControlPlaneFixedCancel):
		return Usagef("--control-plane must be sbcli or fixed-cancel, got %q", m.ControlPlane)
	case !oneOf(m.Operator, record.OperatorPrefix, record.OperatorFixed):
		return Usagef("--operator must be prefix or fixed, got %q", m.Operator)
	case !oneOf(m.ReconnectReset, record.ReconnectResetFull, record.ReconnectResetPartial):
		return Usagef("--reconnect-reset must be full or partial, got %q", m.ReconnectReset)
	case !oneOf(m.KernelDNR, record.KernelDNRHonor, record.KernelDNRIgnore):
		return Usagef("--kernel-dnr must be honor or ignore, got %q", m.KernelDNR)
	case !(m.SwapReaddFail >= 0 && m.SwapReaddFail <= 1):
		return Usagef("--swap-readd-fail must be a probability in [0, 1], got %v", m.SwapReaddFail)
	case p.FioCorruptWrite < 0:
		return Usagef("--fio-corrupt-write must be >= 0, got %d", p.FioCorruptWrite)
	case !oneOf(s.Backend, BackendSim, BackendKube):
		return Usagef("--backend must be sim or kube, got %q", s.Backend)
	}
	if _, err := s.faultKinds(); err != nil {
		return Usagef("--faults: %v", err)
	}
	if s.Backend == BackendKube {
		switch {
		case s.Kubeconfig == "":
			return Usagef("--backend kube needs --kubeconfig (or $KUBECONFIG)")
		case s.Kube.StorageClass == "":
			return Usagef("--backend kube needs --storage-class")
		case p.IsFio():
			return Usagef("--workload applies to the simulator; --backend kube always runs real fio pods")
		}
	}
	return CheckOut(s.Out)
}

// Warnings are what a person should know before s runs: a sample interval
// too coarse for the pause bound leaves pause-bound and freezes
// inconclusive.
func (s Spec) Warnings() []string {
	p := s.Params
	if p.SampleIntervalS > checks.ResolutionFraction*p.PauseCritS {
		return []string{fmt.Sprintf("--sample-interval %g s is coarser than %g × --pause-crit %g s: pause-bound and freezes will be inconclusive (sample every %g s or less to judge them)",
			p.SampleIntervalS, checks.ResolutionFraction, p.PauseCritS, checks.ResolutionFraction*p.PauseCritS)}
	}
	return nil
}

// faultKinds is Params.Faults parsed: nil for the default (every kind),
// empty for none, the kinds of a list; nil for a fault file.
func (s Spec) faultKinds() ([]string, error) {
	f := s.Params.Faults
	if f == "" || strings.HasPrefix(f, record.FaultsFilePrefix) {
		return nil, nil
	}
	return scenario.ParseFaultKinds(f)
}

// faultFile is the fault file Params.Faults names, "" if none.
func (s Spec) faultFile() string {
	f, _ := strings.CutPrefix(s.Params.Faults, record.FaultsFilePrefix)
	if f == s.Params.Faults {
		return ""
	}
	return f
}

// CheckOut is the one check of an --out directory (run, sweep, reproduce),
// made before any work: empty, or naming an existing file, is a
// UsageError naming the flag and the path. A missing directory is fine: it
// is created when the run writes.
func CheckOut(out string) error {
	if out == "" {
		return Usagef("--out must name a directory")
	}
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return Usagef("--out %s is a file, want a directory", out)
	}
	return nil
}

// Exit codes of fiomig (docs/usage.md): one mapping from verdicts for
// every verb.
const (
	ExitPass         = 0
	ExitFail         = 1
	ExitUsage        = 2
	ExitInconclusive = 3
	ExitInterrupted  = 130
)

// ExitCode maps an overall verdict to fiomig's exit code: pass 0, fail 1,
// anything else (inconclusive) 3.
func ExitCode(verdict string) int {
	switch verdict {
	case record.Pass:
		return ExitPass
	case record.Fail:
		return ExitFail
	}
	return ExitInconclusive
}

// Worse is the worse of two exit codes of judged runs: a failure over an
// inconclusive verdict over a pass; any other code (usage, interrupted)
// over all three.
func Worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case ExitFail:
			return 2
		case ExitInconclusive:
			return 1
		case ExitPass:
			return 0
		}
		return 3
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
