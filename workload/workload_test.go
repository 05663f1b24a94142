package workload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/internal/tooltest"
)

// gate is a Paths whose state the test sets.
type gate struct {
	mu      sync.Mutex
	state   IOState
	changed chan struct{}
}

func newGate() *gate { return &gate{changed: make(chan struct{})} }

func (g *gate) State(string) (IOState, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state, g.changed
}

func (g *gate) set(s IOState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.state = s
	close(g.changed)
	g.changed = make(chan struct{})
}

// startSmall starts a workload of one 64 MiB volume at 200 IOPS.
func startSmall(t *testing.T, paths Paths) (*Workload, string) {
	t.Helper()
	tooltest.Require(t, Available())
	out := t.TempDir()
	w, err := Start(Config{
		Volumes: []Volume{{Name: "vol-a", Size: 64 << 20}}, Paths: paths, OutDir: out, RateIOPS: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop(StopOptions{Grace: time.Second, KillAfter: time.Second})
		if m, _ := Mounted(w.FS().Dir()); m {
			t.Errorf("%s still mounted after the test", w.FS().Dir())
		}
	})
	if err := w.WaitIO(context.Background(), 20, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return w, out
}

func TestFioThroughFUSEServes(t *testing.T) {
	w, out := startSmall(t, nil)
	mnt := w.FS().Dir()
	if m, err := Mounted(mnt); err != nil || !m {
		t.Fatalf("Mounted(%s) = %v, %v; want the FUSE mount in %s", mnt, m, err, MountInfoFile)
	}
	time.Sleep(time.Second)
	rep, err := w.Stop(StopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drained || len(rep.Killed) > 0 || len(rep.Exited) > 0 {
		t.Errorf("stop report %+v: want fio to stop on SIGINT alone", rep)
	}
	if m, err := Mounted(mnt); err != nil || m {
		t.Errorf("after Stop: Mounted(%s) = %v, %v", mnt, m, err)
	}
	if _, err := os.Stat(mnt); !os.IsNotExist(err) {
		t.Errorf("temporary mount point %s not removed: %v", mnt, err)
	}
	res := w.Results(fio.GapOptions{MinGapMs: 50})
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	r := res[0]
	t.Logf("fio: exit %d, %d completions, FUSE %+v, longest gap %.3f s, problems %v",
		r.ExitCode, r.Analysis.Gaps.Completions, r.FUSE, r.Analysis.Gaps.LongestGap.Seconds(), r.Problems)
	if len(r.Problems) > 0 {
		t.Errorf("problems reading fio's files: %v", r.Problems)
	}
	if !CleanExit(r.ExitCode) {
		t.Errorf("fio exit code %d; stderr in %s", r.ExitCode, r.Files.Stderr)
	}
	// fio's log and the FUSE layer counted the same I/Os: every I/O fio
	// completed went through the FUSE file (fio may have had a few more in
	// flight at SIGINT that it did not log, and none of its own).
	if c, f := r.Analysis.Gaps.Completions, r.FUSE.Completed; c == 0 || c > f || f-c > 5 {
		t.Errorf("fio logged %d completions, the FUSE layer served %d", c, f)
	}
	if r.Analysis.IOErrors != 0 || r.Analysis.TotalErr != 0 || len(r.Analysis.VerifyFailures) != 0 {
		t.Errorf("a served volume had errors: %+v", r.Analysis)
	}
	for _, f := range []string{JobFileName, OutputFileName, StderrFileName, fio.LatLogName(LogPrefix, 1)} {
		if _, err := os.Stat(filepath.Join(out, "vol-a", f)); err != nil {
			t.Errorf("fio output: %v", err)
		}
	}
}

// A held path stalls fio for as long as the gate says Wait; fio's own log
// shows the gap, placed where the gate held it.
func TestHeldIOShowsAsFioGap(t *testing.T) {
	g := newGate()
	w, _ := startSmall(t, g)
	time.Sleep(300 * time.Millisecond)
	holdAt := time.Now().UnixMilli()
	g.set(Wait)
	time.Sleep(1500 * time.Millisecond)
	if c := w.FS().Counters("vol-a"); c.Waiting != 1 {
		t.Errorf("while held: %d I/O(s) waiting, want 1 (iodepth 1)", c.Waiting)
	}
	releaseAt := time.Now().UnixMilli()
	g.set(Serve)
	time.Sleep(500 * time.Millisecond)
	if _, err := w.Stop(StopOptions{}); err != nil {
		t.Fatal(err)
	}
	r := w.Results(fio.GapOptions{MinGapMs: 50})[0]
	g0 := r.Analysis.Gaps.LongestGap
	held := releaseAt - holdAt
	t.Logf("held [%d, %d] = %d ms; longest gap %+v = %d ms; FUSE %+v", holdAt, releaseAt, held, g0, g0.EndMs-g0.StartMs, r.FUSE)
	// The completion before the gap precedes the hold by at most one I/O
	// interval (10 ms at 100 IOPS) plus log/clock slack; the one after it
	// follows the release. A loaded machine schedules fio late: the slack
	// scales with LoadFactor (40 ms idle, at most 160 ms against a 1.5 s
	// hold).
	slackMs := int64(40 * LoadFactor())
	if g0.StartMs > holdAt+slackMs || g0.StartMs < holdAt-slackMs || g0.EndMs < releaseAt-slackMs || g0.EndMs > releaseAt+slackMs {
		t.Errorf("longest gap %+v does not match the hold [%d, %d]", g0, holdAt, releaseAt)
	}
	if r.FUSE.Held < 1 || r.Analysis.IOErrors != 0 {
		t.Errorf("FUSE %+v, %d I/O errors: want a held I/O and no error", r.FUSE, r.Analysis.IOErrors)
	}
}

// A failing head fails I/O with EIO; fio keeps running (EIO is ignored by
// the migration workload) and reports the errors by errno.
func TestFailedPathGivesEIO(t *testing.T) {
	g := newGate()
	w, _ := startSmall(t, g)
	g.set(Fail)
	time.Sleep(300 * time.Millisecond)
	g.set(Serve)
	time.Sleep(300 * time.Millisecond)
	if _, err := w.Stop(StopOptions{}); err != nil {
		t.Fatal(err)
	}
	r := w.Results(fio.GapOptions{MinGapMs: 50})[0]
	var eio int64
	for _, e := range r.Analysis.Errors {
		if e.Errno == fio.EIO {
			eio = e.Count
		}
	}
	t.Logf("errors %+v, FUSE %+v", r.Analysis.Errors, r.FUSE)
	if eio == 0 || eio != r.FUSE.Errors {
		t.Errorf("fio reported %d EIO, the FUSE layer failed %d I/Os: want equal and > 0", eio, r.FUSE.Errors)
	}
	if !CleanExit(r.ExitCode) {
		t.Errorf("fio did not survive the errors: exit %d", r.ExitCode)
	}
}

// A block corrupted underneath fio (in the FUSE write path) is found by
// fio's verify and reported as a data-integrity failure with its offset.
func TestCorruptedWriteIsAVerifyFailure(t *testing.T) {
	w, _ := startSmall(t, nil)
	if err := w.FS().CorruptWrite("vol-a", 3); err != nil {
		t.Fatal(err)
	}
	// verify_backlog=64 at 200 IOPS with 30 % writes: the backlog is read
	// back within about a second.
	deadline := time.Now().Add(20 * time.Second)
	for len(w.FS().Corruptions()) == 0 || time.Now().Before(deadline.Add(-17*time.Second)) {
		if time.Now().After(deadline) {
			t.Fatal("no write corrupted within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := w.Stop(StopOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := w.FS().Corruptions()
	r := w.Results(fio.GapOptions{MinGapMs: 50})[0]
	if len(cs) != 1 {
		t.Fatalf("corruptions %v, want exactly 1", cs)
	}
	if !r.Analysis.DataIntegrityFailure() {
		b, _ := os.ReadFile(r.Files.Stderr)
		t.Fatalf("corrupted block at %d not reported by fio's verify; analysis %+v\nstderr:\n%s", cs[0].Offset, r.Analysis, b)
	}
	v := r.Analysis.VerifyFailures[0]
	if v.Offset != cs[0].Offset || v.Length != cs[0].Length || v.Kind != "md5" {
		t.Errorf("verify failure %+v, want md5 at offset %d length %d", v, cs[0].Offset, cs[0].Length)
	}
	if n := r.Analysis.ErrorsByClass[fio.ClassIntegrity]; n != 1 {
		t.Errorf("%d data-integrity failures, want 1", n)
	}
}

// Stopping while fio is stuck on a held path drains it (ENOTCONN), fio
// still writes its result, and nothing stays mounted.
func TestStopWhileHeldDrainsAndUnmounts(t *testing.T) {
	g := newGate()
	w, _ := startSmall(t, g)
	g.set(Wait)
	time.Sleep(300 * time.Millisecond)
	rep, err := w.Stop(StopOptions{Grace: 500 * time.Millisecond, KillAfter: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Drained || len(rep.Killed) > 0 {
		t.Errorf("stop report %+v: want drained, not killed", rep)
	}
	if m, err := Mounted(w.FS().Dir()); err != nil || m {
		t.Errorf("Mounted = %v, %v after Stop", m, err)
	}
	r := w.Results(fio.GapOptions{MinGapMs: 50})[0]
	if r.FUSE.DrainErrors < 1 {
		t.Errorf("FUSE %+v: want the held I/O failed by the drain", r.FUSE)
	}
	for _, p := range r.Problems {
		if strings.Contains(p, "truncated") {
			t.Errorf("fio's result truncated after a drain: %s", p)
		}
	}
}

func TestMountFailsCleanlyOnBadVolume(t *testing.T) {
	if _, err := Mount(MountOptions{Dir: t.TempDir(), BackingDir: t.TempDir()}, []Volume{{Name: "a/b", Size: 1}}); err == nil {
		t.Error("a volume name with a slash was accepted")
	}
	if _, err := Mount(MountOptions{Dir: t.TempDir(), BackingDir: t.TempDir()}, nil); err == nil {
		t.Error("no volume was accepted")
	}
}

var _ = syscall.EIO
