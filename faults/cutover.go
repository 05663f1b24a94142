package faults

import (
	"fmt"
	"strconv"
)

// KindRetriedCutover: a migration's cutover is rolled back and retried
// until it froze the subsystem params.freezes times, and params.lost_blocks
// writes of the volume are lost, found by fio's verify params.detect_after_s
// seconds after the last cutover window. Target: the migration. No source
// says why a real cutover retried (fiomig-1787171993: exactly the
// migrations that froze more than once lost writes): this fault is that
// unsourced trigger, labelled as such. It is not among Kinds (the main
// job's seeded schedule); schedules and incident files name it.
const KindRetriedCutover = "retried-cutover"

// CutoverRetrier arms a migration's cutover to be retried (sim only).
type CutoverRetrier interface {
	// RetryCutover arms migration id; no evidence (nil) when its cutover
	// already started.
	RetryCutover(id string, freezes int, lostBlocks int64, detectAfterS float64) (map[string]string, error)
	// CutoverRetryReport reports the windows opened so far; once armed
	// the retries run their course.
	CutoverRetryReport(id string) map[string]string
}

// RetriedCutover is the fault KindRetriedCutover.
type RetriedCutover struct {
	Migration    string
	Freezes      int
	LostBlocks   int64
	DetectAfterS float64
}

// Kind implements Fault.
func (f *RetriedCutover) Kind() string { return KindRetriedCutover }

// Target implements Fault.
func (f *RetriedCutover) Target() string { return f.Migration }

// Inject implements Fault: arm the retries. Evidence: what was armed.
func (f *RetriedCutover) Inject(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(CutoverRetrier)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot retry a cutover", KindRetriedCutover, env.Cluster.Name())
	}
	return r.RetryCutover(f.Migration, f.Freezes, f.LostBlocks, f.DetectAfterS)
}

// Recover implements Fault: report the windows opened so far; the retries
// of an armed cutover run their course (a control plane's retry in flight
// cannot be called back), so there is nothing to undo. Idempotent.
func (f *RetriedCutover) Recover(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(CutoverRetrier)
	if !ok {
		return nil, nil
	}
	return r.CutoverRetryReport(f.Migration), nil
}

// retriedCutoverFromParams reads params freezes (>= 2), lost_blocks (>= 0,
// default 0) and detect_after_s (>= 0, default 3).
func retriedCutoverFromParams(target string, p map[string]string) (*RetriedCutover, error) {
	f := &RetriedCutover{Migration: target, DetectAfterS: 3}
	n, err := strconv.Atoi(p["freezes"])
	if err != nil || n < 2 {
		return nil, fmt.Errorf("params freezes %q: want an integer >= 2 (the cutover windows, the first included)", p["freezes"])
	}
	f.Freezes = n
	if v, ok := p["lost_blocks"]; ok {
		if f.LostBlocks, err = strconv.ParseInt(v, 10, 64); err != nil || f.LostBlocks < 0 {
			return nil, fmt.Errorf("params lost_blocks %q: want an integer >= 0", v)
		}
	}
	if v, ok := p["detect_after_s"]; ok {
		if f.DetectAfterS, err = strconv.ParseFloat(v, 64); err != nil || f.DetectAfterS < 0 {
			return nil, fmt.Errorf("params detect_after_s %q: want seconds >= 0", v)
		}
	}
	return f, nil
}
