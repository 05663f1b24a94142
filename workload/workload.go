package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/fio"
)

// DefaultVolumeSize is each volume's size: the migration workload's 1 GiB
// region (the backing files are sparse: only what fio writes takes space).
const DefaultVolumeSize = int64(fio.GiB)

// Config is a workload: the volumes, what their heads do, and fio's knobs.
type Config struct {
	// Volumes to expose; Size 0 means DefaultVolumeSize.
	Volumes []Volume
	// Paths decides every I/O (nil serves everything).
	Paths Paths
	// OutDir receives one directory per volume (<OutDir>/<volume>/) with
	// fio's job file, JSON+ result, stderr and latency log.
	OutDir string
	// MountDir and BackingDir default to fresh temporary directories, which
	// Stop removes.
	MountDir, BackingDir string
	// RateIOPS caps each fio job, reads and writes together (default
	// DefaultRateIOPS; see FioSpec.RateIOPS; negative =
	// uncapped); Runtime bounds it (default DefaultRuntime).
	RateIOPS int
	Runtime  time.Duration
	// FioBinary is the fio executable (default "fio" from PATH).
	FioBinary string
	// Debug logs every FUSE request to stderr.
	Debug bool
}

// Workload is a mounted set of volumes with one fio process on each.
type Workload struct {
	cfg     Config
	owned   *ledger
	fs      *FS
	procs   []*FioProcess
	byName  map[string]*FioProcess
	tmpDirs []string
	stopped bool
	report  StopReport
}

// Start checks the tools, mounts the volumes (see Mount) and starts one fio
// per volume (see StartFio). On error everything started is stopped and
// unmounted again.
func Start(cfg Config) (*Workload, error) {
	if _, err := FioBinary(cfg.FioBinary); err != nil {
		return nil, err
	}
	if cfg.OutDir == "" {
		return nil, errors.New("workload: OutDir is required")
	}
	w := &Workload{cfg: cfg, byName: map[string]*FioProcess{}}
	var err error
	// The ledger first: whatever follows is recorded before it exists.
	if w.owned, err = openLedger(cfg.OutDir); err != nil {
		return nil, err
	}
	fail := func(err error) (*Workload, error) {
		w.removeTmp()
		w.owned.close()
		return nil, err
	}
	for _, d := range []struct {
		dst     *string
		pattern string
	}{{&w.cfg.MountDir, "fiomig-mnt-"}, {&w.cfg.BackingDir, "fiomig-backing-"}} {
		if *d.dst != "" {
			continue
		}
		if *d.dst, err = os.MkdirTemp("", d.pattern); err != nil {
			return fail(fmt.Errorf("workload: %w", err))
		}
		w.tmpDirs = append(w.tmpDirs, *d.dst)
		abs, _ := filepath.Abs(*d.dst)
		if err := w.owned.add(OwnedEntry{Kind: OwnedTmpDir, Path: abs}); err != nil {
			return fail(err)
		}
	}
	absMount, err := filepath.Abs(w.cfg.MountDir)
	if err != nil {
		return fail(fmt.Errorf("workload: %w", err))
	}
	if err := w.owned.add(OwnedEntry{Kind: OwnedMount, Path: absMount}); err != nil {
		return fail(err)
	}
	vols := make([]Volume, len(cfg.Volumes))
	for i, v := range cfg.Volumes {
		if v.Size == 0 {
			v.Size = DefaultVolumeSize
		}
		vols[i] = v
	}
	w.fs, err = Mount(MountOptions{Dir: w.cfg.MountDir, BackingDir: w.cfg.BackingDir, Paths: cfg.Paths, Debug: cfg.Debug}, vols)
	if err != nil {
		return fail(err)
	}
	for _, v := range vols {
		p, err := StartFio(FioSpec{
			Name: v.Name, Filename: w.fs.Path(v.Name), Dir: filepath.Join(cfg.OutDir, v.Name),
			Size: v.Size, RateIOPS: cfg.RateIOPS, Runtime: cfg.Runtime, Binary: cfg.FioBinary,
			Marker: w.owned.marker,
		})
		if err == nil {
			w.procs = append(w.procs, p)
			w.byName[v.Name] = p
			if st, serr := ProcStartTicks(p.Pid()); serr == nil {
				err = w.owned.add(OwnedEntry{Kind: OwnedFio, Pid: p.Pid(), StartTicks: st, Volume: v.Name})
			}
		}
		if err != nil {
			w.Stop(StopOptions{Grace: time.Second, KillAfter: time.Second})
			return nil, err
		}
	}
	return w, nil
}

// Marker is the value of MarkerEnv in the environment of this workload's
// fio processes and their job processes.
func (w *Workload) Marker() string { return w.owned.marker }

// FS is the mounted volumes.
func (w *Workload) FS() *FS { return w.fs }

// Processes are the fio processes, in volume order.
func (w *Workload) Processes() []*FioProcess { return append([]*FioProcess(nil), w.procs...) }

// Process is the fio process of volume name.
func (w *Workload) Process(name string) (*FioProcess, bool) {
	p, ok := w.byName[name]
	return p, ok
}

// WaitIO waits until every volume has completed at least n I/Os through the
// FUSE layer: fio is past its start-up and doing the job's I/O. It fails
// when a fio exits first (naming its stderr), when timeout passes, or when
// ctx ends.
func (w *Workload) WaitIO(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready := true
		for _, p := range w.procs {
			if p.Exited() {
				return fmt.Errorf("workload: fio %s exited before doing I/O (%v); see %s", p.Spec.Name, p.Err(), p.Files.Stderr)
			}
			if w.fs.Counters(p.Spec.Name).Completed < n {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workload: fio did not complete %d I/O(s) on every volume within %v", n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// StopOptions order the stop.
type StopOptions struct {
	// Tick, when set, is called about every 20 ms while fio shuts down, so
	// that whoever decides Paths (the simulator's driver) keeps the world
	// moving and held I/O can complete the honest way.
	Tick func()
	// Grace is how long fio may take to exit after SIGINT before held I/O
	// is drained (failed with DrainErrno; default DefaultStopGrace, scaled
	// by LoadFactor).
	Grace time.Duration
	// KillAfter is how long after draining fio is killed (SIGKILL; default
	// DefaultKillAfter, scaled by LoadFactor). A killed fio leaves a
	// truncated result.
	KillAfter time.Duration
}

// Stop's default deadlines. fio answers SIGINT by finishing its in-flight
// I/O and writing its JSON+ result, which takes well under a second on an
// idle machine; the deadlines are generous and scaled by LoadFactor, since
// a drain or a kill costs the run its clean fio result.
const (
	DefaultStopGrace = 5 * time.Second
	DefaultKillAfter = 10 * time.Second
	// ReapTimeout bounds the wait for a SIGKILLed process to be reaped.
	ReapTimeout = 5 * time.Second
)

// StopReport says how the stop went.
type StopReport struct {
	// Drained is true when held I/O had to be released with DrainErrno.
	Drained bool `json:"drained"`
	// Killed lists the volumes whose fio had to be killed.
	Killed []string `json:"killed,omitempty"`
	// Exited lists the volumes whose fio had exited before Stop (it died).
	Exited []string `json:"exited_early,omitempty"`
	// Stragglers are the pids of processes carrying the workload's marker
	// (fio job processes, each in a session of its own) still alive after
	// every fio main process had exited; Stop killed them.
	Stragglers []int `json:"stragglers,omitempty"`
}

// Stop ends the workload: SIGINT to every fio (fio stops its jobs and writes
// its JSON+ result and logs), Tick while waiting; after Grace the mount
// drains; after KillAfter fio is killed; then the mount is unmounted, the
// backing files closed and the temporary directories removed. What fio
// wrote stays in OutDir. Idempotent. The error joins what failed — a mount
// left behind among them.
func (w *Workload) Stop(opts StopOptions) (StopReport, error) {
	if w.stopped {
		return w.report, nil
	}
	w.stopped = true
	defer w.owned.close()
	if opts.Grace <= 0 {
		opts.Grace = scaled(DefaultStopGrace)
	}
	if opts.KillAfter <= 0 {
		opts.KillAfter = scaled(DefaultKillAfter)
	}
	var errs []error
	for _, p := range w.procs {
		if p.Exited() {
			w.report.Exited = append(w.report.Exited, p.Spec.Name)
			continue
		}
		if err := p.Signal(syscall.SIGINT); err != nil {
			errs = append(errs, fmt.Errorf("workload: SIGINT fio %s: %w", p.Spec.Name, err))
		}
	}
	start := time.Now()
	allExited := func() bool {
		for _, p := range w.procs {
			if !p.Exited() {
				return false
			}
		}
		return true
	}
	for !allExited() {
		el := time.Since(start)
		if el > opts.Grace && w.fs != nil && !w.fs.draining() {
			w.report.Drained = true
			w.fs.Drain()
		}
		if el > opts.Grace+opts.KillAfter {
			for _, p := range w.procs {
				if !p.Exited() {
					w.report.Killed = append(w.report.Killed, p.Spec.Name)
					p.Signal(syscall.SIGKILL)
				}
			}
			for _, p := range w.procs {
				select {
				case <-p.Done():
				case <-time.After(scaled(ReapTimeout)):
					errs = append(errs, fmt.Errorf("workload: fio %s (pid %d) survived SIGKILL", p.Spec.Name, p.Pid()))
				}
			}
			break
		}
		if opts.Tick != nil {
			opts.Tick()
		}
		time.Sleep(20 * time.Millisecond)
	}
	// fio's job processes run in sessions of their own: a killed (or
	// crashed) fio main process leaves them behind, still holding files
	// of the mount. They carry the marker.
	if w.owned != nil {
		pids, err := killMarked(w.owned.marker)
		w.report.Stragglers = pids
		if err != nil {
			errs = append(errs, fmt.Errorf("workload: kill fio's job processes: %w", err))
		}
		waitGone(pids, scaled(ReapTimeout))
	}
	if w.fs != nil {
		if err := w.fs.Unmount(); err != nil {
			errs = append(errs, err)
		}
	}
	w.removeTmp()
	return w.report, errors.Join(errs...)
}

// waitGone waits until none of pids is a live process (zombies of another
// parent count as gone), or timeout.
func waitGone(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for processRunning(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (w *Workload) removeTmp() {
	for _, d := range w.tmpDirs {
		if m, err := Mounted(d); err == nil && m {
			continue // never remove below a live mount
		}
		os.RemoveAll(d)
	}
}

// VolumeResult is what one volume's fio measured, read back from its files.
type VolumeResult struct {
	Volume string   `json:"volume"`
	Files  FioFiles `json:"files"`
	// ExitCode is fio's exit status (-1: killed by a signal).
	ExitCode int `json:"exit_code"`
	// Analysis joins fio's JSON+ result, its stderr report and the gap
	// analysis of its per-I/O log (times in Unix epoch ms).
	Analysis fio.JobAnalysis `json:"analysis"`
	// FUSE is the FUSE layer's own count of the volume's I/O.
	FUSE Counters `json:"fuse"`
	// Problems are what could not be read or parsed (a truncated JSON
	// result means fio was killed), one sentence each.
	Problems []string `json:"problems,omitempty"`
}

// Results reads back every volume's fio output (after Stop): the JSON+
// result, stderr and the per-I/O latency log, analysed with gopts (Unix
// epoch ms). Problems are reported per volume, not as an error.
func (w *Workload) Results(gopts fio.GapOptions) []VolumeResult {
	out := make([]VolumeResult, 0, len(w.procs))
	for _, p := range w.procs {
		vr := ReadResult(p.Spec.Name, p.Files, gopts)
		vr.ExitCode = p.ExitCode()
		if w.fs != nil {
			vr.FUSE = w.fs.Counters(p.Spec.Name)
		}
		out = append(out, vr)
	}
	return out
}

// ReadResult reads one fio process's files (see FilesIn) for job name, its
// log analysed with gopts (log_unix_epoch: Unix epoch ms). ExitCode is left
// -1 and FUSE zero: only the files are read.
func ReadResult(name string, files FioFiles, gopts fio.GapOptions) VolumeResult {
	vr := VolumeResult{Volume: name, Files: files, ExitCode: -1}
	var jr *fio.JobResult
	res, err := fio.ParseResultFile(files.Output)
	if err != nil {
		if errors.Is(err, fio.ErrTruncated) {
			vr.Problems = append(vr.Problems, fmt.Sprintf("fio's JSON result is truncated (fio was killed): %v", err))
		} else {
			vr.Problems = append(vr.Problems, fmt.Sprintf("fio's JSON result: %v", err))
		}
	}
	if res != nil {
		if j, ok := res.Job(name); ok {
			jr = j
		} else {
			vr.Problems = append(vr.Problems, fmt.Sprintf("fio's JSON result %s has no job %s", files.Output, name))
		}
	}
	rep, err := fio.ParseStderrFile(files.Stderr)
	if err != nil {
		vr.Problems = append(vr.Problems, fmt.Sprintf("fio's stderr: %v", err))
	}
	ga, err := fio.AnalyzeLogFile(files.LatLog, gopts)
	if err != nil {
		vr.Problems = append(vr.Problems, fmt.Sprintf("fio's per-I/O log: %v", err))
	}
	// One job per fio process: every error and verify report is this job's.
	vr.Analysis = fio.AnalyzeJob(name, "", jr, ga, rep)
	return vr
}
