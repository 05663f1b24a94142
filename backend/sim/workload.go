package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/sim"
	"github.com/fiomig/fiomig/workload"
)

// FioConfig is the real-fio workload run against a simulated cluster
// (fiomig run --workload=fio).
type FioConfig struct {
	// OutDir receives one directory per volume with what its fio wrote.
	OutDir string
	// RateIOPS caps each fio job (default workload.DefaultRateIOPS).
	RateIOPS int
	// FioBinary is the fio executable (default "fio" from PATH).
	FioBinary string
	// StartTimeout bounds fio's start-up: every volume must have completed
	// some I/O by then (default 60 s).
	StartTimeout time.Duration
	// IOIntervalS is the interval of the io timeline lines, seconds of
	// cluster time (default 1).
	IOIntervalS float64
	// StopGrace is how long fio may take to stop after SIGINT while the
	// world keeps running before held I/O is drained (default
	// workload.DefaultStopGrace scaled by workload.LoadFactor).
	StopGrace time.Duration
	// MountDir is the FUSE mount point (default: a fresh temporary
	// directory, removed on Close).
	MountDir string
	// Debug logs every FUSE request to stderr.
	Debug bool
}

// FioCluster is the simulated cluster driven by the wall clock with one
// real fio process per volume, each on a FUSE file whose reads and writes
// follow the multipath head of the volume's first consumer host
// (sim.Host.HeadIO). It implements backend.Cluster and workload.Paths, and
// offers every fault knob of the embedded Cluster (faults.go), so a fault
// schedule runs on it as on virtual time, with the same evidence.
//
// Concurrency: the world is single-goroutine. FUSE requests (other
// goroutines) only read it, under mu; the driving goroutine holds mu
// whenever it changes the world — inside AdvanceTo, StartMigration and
// every fault knob (Cluster.changing) — and the wall clock releases mu
// while it sleeps until the next event, so held I/O is decided at once.
// Each release wakes held I/O to look again. World is for reading only.
type FioCluster struct {
	*Cluster
	mu  sync.Mutex
	clk *gateClock
	wl  *workload.Workload
	cfg FioConfig

	heads   map[string]fioHead // by volume name
	volumes []string           // volume names, in world order

	pending  []record.Line // lines from the catch-up before the first AdvanceTo
	nextIO   float64
	lastSeen map[string]workload.Counters
	exited   map[string]bool
	closed   bool
	closeErr error
	stop     workload.StopReport
}

// fioHead is where a volume's I/O goes: its first consumer host's head.
type fioHead struct {
	host *sim.Host
	nqn  string
	nsid int
}

var (
	_ backend.Cluster = (*FioCluster)(nil)
	_ workload.Paths  = (*FioCluster)(nil)
)

// NewFio builds the simulated world on a wall clock (cfg.Clock and
// cfg.Pods are overridden: real fio replaces the modelled pods), mounts one
// FUSE file per volume (1 GiB, sparse), starts one fio per volume (the
// fio package's migration workload at fc.RateIOPS) and waits until each has
// completed I/O, then lets the world catch up with the wall clock. Nothing
// is left mounted or running on error. Needs root, /dev/fuse and fio
// (workload.Available).
func NewFio(ctx context.Context, cfg Config, fc FioConfig) (*FioCluster, error) {
	if fc.StartTimeout <= 0 {
		fc.StartTimeout = 60 * time.Second
	}
	if fc.IOIntervalS <= 0 {
		fc.IOIntervalS = 1
	}
	f := &FioCluster{cfg: fc, heads: map[string]fioHead{}, lastSeen: map[string]workload.Counters{}, exited: map[string]bool{}}
	f.clk = newGateClock(&f.mu)
	cfg.Clock = f.clk
	cfg.Pods = false
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	c.gate = f.clk
	f.Cluster = c
	hosts := c.w.Hosts()
	var vols []workload.Volume
	for _, v := range c.w.Volumes() {
		if len(v.Consumers) == 0 || len(v.NSIDs) == 0 {
			continue
		}
		f.heads[v.Name] = fioHead{host: hosts[v.Consumers[0]], nqn: v.NQN, nsid: v.NSIDs[0]}
		f.volumes = append(f.volumes, v.Name)
		vols = append(vols, workload.Volume{Name: v.Name})
	}
	f.wl, err = workload.Start(workload.Config{
		Volumes: vols, Paths: f, OutDir: fc.OutDir, MountDir: fc.MountDir, RateIOPS: fc.RateIOPS, FioBinary: fc.FioBinary, Debug: fc.Debug,
	})
	if err != nil {
		return nil, err
	}
	if err := f.wl.WaitIO(ctx, 10, fc.StartTimeout); err != nil {
		f.Close()
		return nil, err
	}
	// Catch the world up with the wall clock fio has been running on, so
	// that world time and fio's clock agree from the first step on.
	lines, err := f.advance(f.clk.Now())
	if err != nil {
		f.Close()
		return nil, err
	}
	f.pending = lines
	f.nextIO = f.Now() + fc.IOIntervalS
	for _, name := range f.volumes {
		f.lastSeen[name] = f.wl.FS().Counters(name)
	}
	return f, nil
}

// State implements workload.Paths: what volume's head does with an I/O now
// (HeadIO: served -> Serve; requeued or hung on an unanswering path ->
// Wait; failed -> Fail), and the channel closed at the world's next change.
func (f *FioCluster) State(volume string) (workload.IOState, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.heads[volume]
	if !ok {
		return workload.Fail, f.clk.changed
	}
	switch h.host.HeadIO(h.nqn, h.nsid) {
	case sim.IOServed:
		return workload.Serve, f.clk.changed
	case sim.IOFail:
		return workload.Fail, f.clk.changed
	}
	return workload.Wait, f.clk.changed
}

// advance runs the world to t holding mu (released while the clock sleeps).
func (f *FioCluster) advance(t float64) ([]record.Line, error) {
	f.mu.Lock()
	f.clk.owned = true
	defer func() {
		f.clk.owned = false
		f.clk.broadcast()
		f.mu.Unlock()
	}()
	return f.Cluster.AdvanceTo(t)
}

// AdvanceTo implements backend.Cluster: the world runs to t in wall time;
// the lines are the world's plus one io line per volume per IOIntervalS
// (completions and errors the FUSE layer counted in the interval, I/O held
// now, the fio process as the pod "fio-<volume>", "running" or "exited"
// with its exit status once it ended). The counts are read when the step
// reaches the interval's end, so they may include a step's worth more.
func (f *FioCluster) AdvanceTo(t float64) ([]record.Line, error) {
	lines, err := f.advance(t)
	if err != nil {
		return nil, err
	}
	if len(f.pending) > 0 {
		lines = append(f.pending, lines...)
		f.pending = nil
	}
	for f.nextIO <= t+1e-9 {
		lines = append(lines, f.ioLines(f.nextIO)...)
		f.nextIO += f.cfg.IOIntervalS
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].T < lines[j].T })
	return lines, nil
}

func (f *FioCluster) ioLines(t float64) []record.Line {
	var out []record.Line
	for _, name := range f.volumes {
		if f.exited[name] {
			continue
		}
		h := f.heads[name]
		cur := f.wl.FS().Counters(name)
		prev := f.lastSeen[name]
		f.lastSeen[name] = cur
		l := record.Line{T: t, Kind: record.KindIO, Volume: name, NQN: h.nqn, Host: h.host.Name,
			Completed: record.Int64(cur.Completed - prev.Completed),
			Errors:    record.Int64(cur.Errors - prev.Errors),
			Queued:    record.Int64(cur.Waiting),
			Pod:       "fio-" + name, PodState: "running"}
		if p, ok := f.wl.Process(name); ok && p.Exited() {
			f.exited[name] = true
			l.PodState = "exited"
			l.Reason = fmt.Sprintf("fio exited with status %d before the run ended (%v)", p.ExitCode(), p.Err())
		}
		out = append(out, l)
	}
	return out
}

// Workload is the FUSE volumes and fio processes (for CorruptWrite and
// counters).
func (f *FioCluster) Workload() *workload.Workload { return f.wl }

// EpochMs is the run's t = 0 as Unix epoch ms: where fio's log_unix_epoch
// timestamps put it.
func (f *FioCluster) EpochMs() int64 { return f.clk.start.UnixMilli() }

// FioVolume is one volume's fio as the cluster placed it.
type FioVolume struct {
	Volume, NQN, Host string
	NSID              int
	Files             workload.FioFiles
}

// FioVolumes lists the volumes fio runs on, in world order.
func (f *FioCluster) FioVolumes() []FioVolume {
	var out []FioVolume
	for _, name := range f.volumes {
		h := f.heads[name]
		fv := FioVolume{Volume: name, NQN: h.nqn, Host: h.host.Name, NSID: h.nsid}
		if p, ok := f.wl.Process(name); ok {
			fv.Files = p.Files
		}
		out = append(out, fv)
	}
	return out
}

// StopReport says how fio was stopped (valid after Close).
func (f *FioCluster) StopReport() workload.StopReport { return f.stop }

// Close implements backend.Cluster: it stops every fio (SIGINT; the world
// keeps running on the wall clock meanwhile so that held I/O completes as
// the world decides; after FioConfig.StopGrace held I/O is drained) and
// unmounts the volumes. What fio wrote stays in FioConfig.OutDir.
// Idempotent; the error says what was left behind, if anything.
func (f *FioCluster) Close() error {
	if f.closed {
		return f.closeErr
	}
	f.closed = true
	if f.wl == nil {
		return nil
	}
	var tickErr error
	rep, err := f.wl.Stop(workload.StopOptions{
		Grace: f.cfg.StopGrace,
		Tick: func() {
			if tickErr == nil {
				_, tickErr = f.advance(f.clk.Now())
			}
		},
	})
	f.stop = rep
	f.closeErr = errors.Join(err, tickErr)
	return f.closeErr
}

// gateClock is the wall clock of a FioCluster: like WallClock, but it
// releases the world's lock while it sleeps (when the driver holds it:
// owned), and broadcast wakes I/O held on the world's state.
type gateClock struct {
	start time.Time
	mu    *sync.Mutex
	// owned is set by the driver while it holds mu inside the world.
	owned bool
	// changed is closed and replaced (under mu) whenever the world may
	// have changed.
	changed chan struct{}
}

func newGateClock(mu *sync.Mutex) *gateClock {
	return &gateClock{start: time.Now(), mu: mu, changed: make(chan struct{})}
}

// Now implements sim.Clock: seconds since the clock was made.
func (c *gateClock) Now() float64 { return time.Since(c.start).Seconds() }

// WaitUntil implements sim.Clock: it sleeps until Now() >= t, with the
// world's lock released (and held I/O woken) when the driver holds it.
func (c *gateClock) WaitUntil(t float64) {
	if c.Now() >= t {
		return
	}
	owned := c.owned
	if owned {
		c.broadcast()
		c.mu.Unlock()
	}
	for d := t - c.Now(); d > 0; d = t - c.Now() {
		time.Sleep(time.Duration(d * float64(time.Second)))
	}
	if owned {
		c.mu.Lock()
	}
}

// broadcast wakes every I/O waiting on the world's state; mu must be held
// (or no FUSE request can run yet).
func (c *gateClock) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}
