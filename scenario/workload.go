package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/workload"
)

// FioSettleS is --workload=fio's default settle, seconds: the settle runs
// on the wall clock there, and the main job's 400 s (DefaultParams), which
// outlast every sourced repair, made a 3-migration fio run take 8 min. 90 s
// waits for what a host does on its own after the last migration and its
// faults (those last at most 15 s): reconnects, and the removal of
// controllers that cannot come back after ctrl_loss_tmo (60 s, the CSI
// driver's, docs/sources.md §7); and it covers served-after-cutover's 30 s
// attribution margin. It does not wait for sbcli's lvol monitor (up to
// 330 s, §4.7) nor for the CSI restore of what it re-creates (63.5 s
// more): a path or namespace they may still bring back is not judged
// (checks.RepairWindowS: path-completeness and leaked-controllers say
// inconclusive and name it), never passed or failed.
const FioSettleS = 90.0

// FioMinGapMs is the shortest fio gap listed per volume (summary.json
// fio.min_gap_s): a fifth of the agreement tolerance's 0.25 s floor, and
// five I/O intervals at the default 100 IOPS.
const FioMinGapMs = 50

// FioOptions are the knobs of the real-fio workload.
type FioOptions struct {
	// RateIOPS caps each volume's fio job, reads and writes together
	// (default workload.DefaultRateIOPS; rendered as fio's read,write split,
	// see fio.Job.RateIOPS).
	RateIOPS int
	// FioBinary is the fio executable (default "fio" from PATH).
	FioBinary string
	// StartTimeout bounds fio's start-up (default 60 s).
	StartTimeout time.Duration
	// StopGrace: how long fio may take to stop after the run before held
	// I/O is drained (default workload.DefaultStopGrace scaled by
	// workload.LoadFactor).
	StopGrace time.Duration
	// CorruptWrite, when > 0, stores the CorruptWrite-th write to
	// CorruptVolume (default: the first volume) after fio started corrupted
	// underneath fio (a test of the verify path: fio must report it as a
	// data integrity failure with its offset).
	CorruptVolume string
	CorruptWrite  int64
	// MountDir is the FUSE mount point (default: a fresh temporary
	// directory, removed afterwards).
	MountDir string
	// Debug logs every FUSE request to stderr.
	Debug bool
}

// FioNamespacesUnsupported says why --workload=fio refuses n > 1
// namespaces per volume: fio runs once per volume, on its first namespace
// (backend/sim NewFio), so namespaces 2..n would go unmeasured while the
// agreement check compares fio with the pause of every namespace.
func FioNamespacesUnsupported(n int) string {
	return fmt.Sprintf("--namespaces-per-volume %d with --workload=%s: fio runs one job per volume, on its first namespace only, so namespaces 2..%d would go unmeasured; use --workload=%s for namespaced volumes",
		n, record.WorkloadFio, n, record.WorkloadSim)
}

// RunFio runs cfg on the embedded simulator driven by the wall clock, with
// one real fio process per volume on a FUSE file that follows the
// simulated host's multipath head (backend/sim FioCluster), then judges the
// record as Run does and adds fio's measurements: summary.json "fio" (fio's
// longest I/O gap beside the ANA pause for every migration and volume) and
// the checks fio-pause-agreement, fio-data-integrity and fio-io-errors;
// report.md shows both measurements side by side.
//
// fio writes into a staging directory under cfg.OutDir while the run
// directory does not exist yet; after the run (interrupted or not) fio is
// stopped, the volumes unmounted, and the staging directory becomes
// <run-dir>/fio (record.FioDir) with record.FioWorkloadFile. Needs root,
// /dev/fuse and fio (workload.Available). seed and cfg.Plan.Params shape
// the world as SimCluster does (SimConfig, every model switch); more than
// one namespace per volume is an error (FioNamespacesUnsupported).
func RunFio(ctx context.Context, seed int64, cfg Config, fo FioOptions) (Result, error) {
	p := cfg.Plan.Params
	if n := p.Model.NamespacesPerVolume; n > 1 {
		return Result{}, fmt.Errorf("scenario: %s", FioNamespacesUnsupported(n))
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("scenario: %w", err)
	}
	staging, err := os.MkdirTemp(cfg.OutDir, ".fio-staging-")
	if err != nil {
		return Result{}, fmt.Errorf("scenario: %w", err)
	}
	cluster, err := simbackend.NewFio(ctx, SimConfig(seed, p), simbackend.FioConfig{
		OutDir: staging, RateIOPS: fo.RateIOPS, FioBinary: fo.FioBinary,
		StartTimeout: fo.StartTimeout, StopGrace: fo.StopGrace, MountDir: fo.MountDir, Debug: fo.Debug,
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			// Interrupted while fio started (NewFio stopped it): the
			// run directory still records the run, its empty timeline
			// and fio's output so far.
			return interruptedAtStart(cfg, staging)
		}
		os.RemoveAll(staging)
		return Result{}, fmt.Errorf("scenario: real fio workload: %w", err)
	}
	if fo.CorruptWrite > 0 {
		vol := fo.CorruptVolume
		if vol == "" {
			vol = cluster.FioVolumes()[0].Volume
		}
		if err := cluster.Workload().FS().CorruptWrite(vol, fo.CorruptWrite); err != nil {
			cluster.Close()
			return Result{}, fmt.Errorf("scenario: %w", err)
		}
	}
	rate := fo.RateIOPS
	if rate == 0 {
		rate = workload.DefaultRateIOPS
	}
	cfg.Plan.Params.Workload, cfg.Plan.Params.FioRateIOPS = record.WorkloadFio, rate

	res, runErr := Run(ctx, cluster, cfg)
	load, loadOK := workload.LoadAverage()
	closeErr := cluster.Close()

	wl := record.FioWorkload{EpochMs: cluster.EpochMs(), RateIOPS: rate}
	if loadOK {
		wl.Load = &record.MachineLoad{Avg1: load, CPUs: runtime.NumCPU()}
	}
	stop := cluster.StopReport()
	wl.Drained, wl.Killed, wl.Exited = stop.Drained, stop.Killed, stop.Exited
	for _, c := range cluster.Workload().FS().Corruptions() {
		wl.Corruptions = append(wl.Corruptions, record.FioBlock{Volume: c.Volume, Offset: c.Offset, Length: c.Length})
	}
	for _, v := range cluster.FioVolumes() {
		wv := record.FioWorkloadVolume{Volume: v.Volume, NQN: v.NQN, NSID: v.NSID, Host: v.Host,
			Dir: filepath.ToSlash(filepath.Join(record.FioDir, v.Volume)), ExitCode: -1}
		if pr, ok := cluster.Workload().Process(v.Volume); ok {
			wv.ExitCode = pr.ExitCode()
		}
		c := cluster.Workload().FS().Counters(v.Volume)
		wv.FUSECompleted, wv.FUSEErrors, wv.FUSEDrainErrors, wv.FUSEHeld = c.Completed, c.Errors, c.DrainErrors, c.Held
		wl.Volumes = append(wl.Volumes, wv)
	}

	fioDir := staging
	if res.Dir != "" {
		fioDir = filepath.Join(res.Dir, record.FioDir)
		if err := os.Rename(staging, fioDir); err != nil {
			return res, errors.Join(runErr, closeErr, fmt.Errorf("scenario: move fio's output into the run directory: %w (it is in %s)", err, staging))
		}
	}
	if err := record.WriteJSON(filepath.Join(fioDir, record.FioWorkloadFile), wl); err != nil {
		return res, errors.Join(runErr, closeErr, err)
	}
	if runErr != nil || closeErr != nil {
		if closeErr != nil {
			closeErr = fmt.Errorf("scenario: stopping the fio workload: %w", closeErr)
		}
		return res, errors.Join(runErr, closeErr)
	}
	if res.Interrupted {
		return res, nil
	}
	return FinishFio(res)
}

// FinishFio adds what a real-fio run's fio processes measured to its
// judged record — fio's checks (FioEvaluate) over the timeline read back
// from res.Dir — and rewrites its reports with fio's plots: the one
// pipeline after fio, for the simulator's --workload=fio and the kube
// backend's fio pods alike.
func FinishFio(res Result) (Result, error) {
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		return res, err
	}
	sum, err := FioEvaluate(res.Dir, res.Plan, lines, res.Summary)
	if err != nil {
		return res, err
	}
	if err := reports.WriteRun(res.Dir, reports.Input{Plan: res.Plan, Summary: sum, Timeline: lines, FioSeconds: FioSeconds(res.Dir)}); err != nil {
		return res, err
	}
	res.Summary = reports.WithStats(sum)
	return res, nil
}

// FioSeconds reads every volume's per-I/O latency log of run directory
// dir's fio workload (fio/workload.json) binned per second of the run
// (reports.ReadFioSeconds), for the report's fio plots. A volume whose log
// is missing or unreadable is left out: the fio checks already report it
// (FioEvaluate); nil without fio/workload.json.
func FioSeconds(dir string) []reports.FioSeconds {
	b, err := os.ReadFile(filepath.Join(dir, record.FioDir, record.FioWorkloadFile))
	if err != nil {
		return nil
	}
	var wl record.FioWorkload
	if json.Unmarshal(b, &wl) != nil {
		return nil
	}
	var out []reports.FioSeconds
	for _, wv := range wl.Volumes {
		files := workload.FilesIn(filepath.Join(dir, filepath.FromSlash(wv.Dir)))
		if fs, err := reports.ReadFioSeconds(files.LatLog, wl.EpochMs, wv); err == nil {
			out = append(out, fs)
		}
	}
	return out
}

// interruptedAtStart writes the run directory of a run interrupted before
// its cluster existed: plan.json (no topology), an empty timeline.jsonl,
// summary.json (InterruptedSummary) and fio's staging directory as fio/.
func interruptedAtStart(cfg Config, staging string) (Result, error) {
	dir, err := record.CreateRunDir(cfg.OutDir, cfg.StartUnix)
	if err != nil {
		return Result{}, err
	}
	res := Result{Dir: dir, Plan: cfg.Plan, Interrupted: true, Summary: InterruptedSummary(cfg.Plan, nil)}
	if res.Plan.Faults == nil {
		res.Plan.Faults = []record.FaultSpec{}
	}
	var errs []error
	if err := record.WriteJSON(filepath.Join(dir, record.PlanFile), res.Plan); err != nil {
		errs = append(errs, err)
	}
	if tl, err := record.CreateTimeline(filepath.Join(dir, record.TimelineFile)); err != nil {
		errs = append(errs, err)
	} else if err := tl.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := record.WriteJSON(filepath.Join(dir, record.SummaryFile), res.Summary); err != nil {
		errs = append(errs, err)
	}
	if err := os.Rename(staging, filepath.Join(dir, record.FioDir)); err != nil {
		errs = append(errs, fmt.Errorf("scenario: move fio's output into the run directory: %w (it is in %s)", err, staging))
	}
	return res, errors.Join(errs...)
}

// FioEvaluate adds to sum (checks.Evaluate of plan and lines) what the fio
// processes of run directory dir measured: it reads fio/workload.json and
// each volume's fio files, analyses every per-I/O log over the run (first
// to last sample, placed with workload.json's epoch), puts fio's gaps beside
// the ANA pauses (checks.CompareFio) and appends the fio checks
// (checks.FioChecks), replacing earlier fio checks; the verdict is
// recomputed. A volume whose directory or files are missing or truncated
// is reported in its Problems, not as an error, and the fio checks leave it
// not judged (checks.FioMissingEvidence). Without fio/ or fio/workload.json
// the fio checks are all inconclusive (checks.FioGone) and sum.Fio is nil.
// The error is for a workload.json that cannot be read or parsed.
func FioEvaluate(dir string, plan record.Plan, lines []record.Line, sum record.Summary) (record.Summary, error) {
	wpath := filepath.Join(dir, record.FioDir, record.FioWorkloadFile)
	b, err := os.ReadFile(wpath)
	if errors.Is(err, fs.ErrNotExist) {
		what := record.FioDir + "/" + record.FioWorkloadFile
		if _, derr := os.Stat(filepath.Join(dir, record.FioDir)); errors.Is(derr, fs.ErrNotExist) {
			what = record.FioDir + "/"
		}
		return withFioChecks(sum, nil, checks.FioGone(what+" missing: the fio evidence of this --workload=fio run is gone")), nil
	}
	if err != nil {
		return sum, fmt.Errorf("scenario: %w", err)
	}
	var wl record.FioWorkload
	if err := json.Unmarshal(b, &wl); err != nil {
		return sum, fmt.Errorf("scenario: parse %s: %w", wpath, err)
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		if l.Kind == record.KindSample {
			first, last = math.Min(first, l.T), math.Max(last, l.T)
		}
	}
	if math.IsInf(first, 1) {
		first, last = 0, 0
	}
	toMs := func(s float64) int64 { return wl.EpochMs + int64(math.Round(s*1000)) }
	toS := func(ms int64) float64 { return float64(ms-wl.EpochMs) / 1000 }
	gap := func(volume string, g fio.Gap) record.FioGap {
		return record.FioGap{Volume: volume, StartS: toS(g.StartMs), EndS: toS(g.EndMs), LengthS: g.Seconds(), Open: g.Open}
	}
	fsum := record.FioSummary{ToleranceS: checks.FioToleranceS(plan), MinGapS: FioMinGapMs / 1000.0,
		Volumes: []record.FioVolume{}, Unattributed: []record.FioGap{}}
	for _, wv := range wl.Volumes {
		vdir := filepath.Join(dir, filepath.FromSlash(wv.Dir))
		vr := workload.ReadResult(wv.Volume, workload.FilesIn(vdir),
			fio.GapOptions{Window: true, StartMs: toMs(first), EndMs: toMs(last), MinGapMs: FioMinGapMs})
		if _, err := os.Stat(vdir); errors.Is(err, fs.ErrNotExist) {
			// one problem, not one per file of a directory that is gone
			vr.Problems = []string{wv.Dir + " missing: this volume's fio evidence is gone"}
		}
		a := vr.Analysis
		v := record.FioVolume{Volume: wv.Volume, NQN: wv.NQN, Host: wv.Host, Dir: wv.Dir, ExitCode: wv.ExitCode,
			Completions: a.Gaps.Completions, ZeroSeconds: a.Gaps.ZeroSeconds, DrainErrors: wv.FUSEDrainErrors,
			TotalErr: a.TotalErr, ExitError: int(a.ExitError), Problems: vr.Problems,
			Gaps: []record.FioGap{}, Errors: []record.FioErrno{}, VerifyFailures: []record.FioVerifyFailure{}}
		if a.Gaps.Completions > 0 || a.Gaps.LongestGap.Open {
			v.LongestGap = gap("", a.Gaps.LongestGap)
		}
		for _, g := range a.Gaps.Gaps {
			v.Gaps = append(v.Gaps, gap("", g))
		}
		for _, e := range a.Errors {
			v.Errors = append(v.Errors, record.FioErrno{Errno: int(e.Errno), Name: e.Name, Class: string(e.Class), Count: e.Count})
		}
		for _, f := range a.VerifyFailures {
			v.VerifyFailures = append(v.VerifyFailures, record.FioVerifyFailure{Offset: f.Offset, Length: f.Length, Kind: f.Kind, Reason: f.Reason})
		}
		fsum.Volumes = append(fsum.Volumes, v)
	}
	fsum.Comparisons, fsum.Unattributed = checks.CompareFio(plan, sum.Migrations, fsum.Volumes)
	if g := checks.FioNoiseFloor(sum, fsum.Volumes); g != nil {
		fsum.NoiseFloorS, fsum.NoiseGap = g.LengthS, g
	}
	fsum.Load = wl.Load
	if fsum.Comparisons == nil {
		fsum.Comparisons = []record.FioComparison{}
	}
	return withFioChecks(sum, &fsum, checks.FioChecks(plan, fsum)), nil
}

// withFioChecks sets sum.Fio to fsum, replaces sum's fio checks by fc and
// recomputes the verdict.
func withFioChecks(sum record.Summary, fsum *record.FioSummary, fc []record.CheckResult) record.Summary {
	sum.Fio = fsum
	kept := sum.Checks[:0:0]
	for _, c := range sum.Checks {
		if !strings.HasPrefix(c.Name, "fio-") {
			kept = append(kept, c)
		}
	}
	sum.Checks = append(kept, fc...)
	sum.Verdict = checks.Overall(sum.Checks)
	return sum
}
