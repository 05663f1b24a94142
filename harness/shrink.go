package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// Files of a shrink directory.
const (
	ShrinkFaultFile = "faults.yaml" // the minimal schedule, a fault file
	ShrinkCommand   = "command.txt" // the one command that reruns it
	ShrinkRecord    = "shrink.json" // every step tried
	ShrinkRunDir    = "run"         // the minimal schedule's failing run
)

// ShrinkStep is one rerun tried by Shrink.
type ShrinkStep struct {
	Try        string `json:"try"`
	Migrations int    `json:"migrations"`
	Faults     int    `json:"faults"`
	Verdict    string `json:"verdict"` // the check's verdict in the rerun
	Kept       bool   `json:"kept"`    // the candidate still fails and became the current schedule
}

// ShrinkResult is shrink.json.
type ShrinkResult struct {
	RunDir             string `json:"run_dir"`
	Check              string `json:"check"`
	OriginalMigrations int    `json:"original_migrations"`
	OriginalFaults     int    `json:"original_faults"`
	Migrations         int    `json:"migrations"`
	Faults             int    `json:"faults"`
	Command            string `json:"command"`
	// Detail is the check's detail in the minimal schedule's run.
	Detail      string       `json:"detail"`
	Steps       []ShrinkStep `json:"steps"`
	Interrupted bool         `json:"interrupted,omitempty"`

	// Dir is the shrink directory; Schedule the minimal schedule (not in
	// shrink.json: faults.yaml holds it).
	Dir      string             `json:"-"`
	Schedule []record.FaultSpec `json:"-"`
}

// ShrinkOptions: Check is the failing check to keep failing ("" = the
// run's first failing one, in summary.json order); Out the parent of the
// shrink directory ("" = the run directory's); Log receives one line per
// rerun.
type ShrinkOptions struct {
	Check string
	Out   string
	Log   io.Writer
	// Started, when set, is told what is shrunk once the shrink
	// directory exists.
	Started func(ShrinkResult)
}

// Errors of Shrink besides UsageErrors.
var (
	// ErrNotReproduced: the run's executed schedule, rerun, does not fail
	// the check again.
	ErrNotReproduced = errors.New("not reproduced")
	// ErrNotDeterministic: the minimal schedule failed the check once and
	// not when rerun.
	ErrNotDeterministic = errors.New("not deterministic")
)

// Shrink takes a failing run of fiomig run (runDir: its plan.json is the
// typed spec and the fault schedule as executed) and removes migrations
// and faults from the schedule while the same check still fails, rerunning
// the seed each time (on virtual time a rerun is exact): the executed
// schedule unchanged (it must fail again, else ErrNotReproduced); the
// fewest migrations by bisection (faults tied to a migration past the
// count go with it); each fault in schedule order, keeping every drop
// after which the check still fails, until a pass drops none
// (1-minimal); the migrations once more if a fault was dropped. It writes
// <out>/shrink-<run dir name>[-N]/ with the minimal schedule as a fault
// file, the command that reruns it, that run, and every step tried. A run
// that cannot be shrunk (not a run directory of fiomig run, real fio, did
// not fail, an unknown check) is a UsageError. A run fiomig report
// re-judged by other bounds (summary.json "rejudged") is rerun and judged
// by those bounds.
func Shrink(ctx context.Context, runDir string, o ShrinkOptions) (ShrinkResult, error) {
	if fi, err := os.Stat(runDir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("a file, not a directory")
		}
		return ShrinkResult{}, Usagef("%s is not a run directory (%v)", runDir, err)
	}
	plan, err := record.ReadPlan(filepath.Join(runDir, record.PlanFile))
	if err != nil {
		return ShrinkResult{}, Usagef("%s is not a run directory: %v", runDir, err)
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(runDir, record.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		return ShrinkResult{}, Usagef("%s has no readable %s (an interrupted run has none: nothing to shrink): %v", runDir, record.SummaryFile, err)
	}
	switch {
	case plan.Scenario != "migrations":
		return ShrinkResult{}, Usagef("%s: its plan.json scenario %q is not fiomig run's (shrink reruns fiomig run; fiomig reproduce runs are not supported)", runDir, plan.Scenario)
	case plan.Params.IsFio():
		return ShrinkResult{}, Usagef("%s ran real fio (--workload=%s) on the wall clock: a rerun is not the same run, so it cannot be shrunk", runDir, record.WorkloadFio)
	case plan.Backend == BackendKube:
		return ShrinkResult{}, Usagef("%s ran on a Kubernetes cluster: a rerun is not the same run, so it cannot be shrunk", runDir)
	}
	var failing []string
	for _, c := range sum.Checks {
		if c.Verdict == record.Fail {
			failing = append(failing, c.Name)
		}
	}
	if len(failing) == 0 {
		return ShrinkResult{}, Usagef("%s did not fail (verdict %s): nothing to shrink", runDir, sum.Verdict)
	}
	check := failing[0]
	if o.Check != "" {
		if !slices.Contains(failing, o.Check) {
			return ShrinkResult{}, Usagef("--check %s: not a failing check of %s (failing: %s)", o.Check, runDir, strings.Join(failing, ", "))
		}
		check = o.Check
	}
	out := o.Out
	if out == "" {
		out = filepath.Dir(filepath.Clean(runDir))
	}
	dir, err := record.CreateUniqueDir(out, "shrink-"+filepath.Base(filepath.Clean(runDir)), "shrink")
	if err != nil {
		return ShrinkResult{}, UsageError{err}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	orig := candidate{migrations: plan.Params.Migrations, faults: slices.Clone(plan.Faults)}
	res := ShrinkResult{RunDir: runDir, Check: check, OriginalMigrations: orig.migrations, OriginalFaults: len(orig.faults),
		Steps: []ShrinkStep{}, Dir: dir}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	if o.Started != nil {
		o.Started(res)
	}
	s := &shrinker{ctx: ctx, dir: dir, base: SpecFromPlan(plan), check: check, log: log, res: &res, seen: map[string]bool{}}
	if rj := sum.Rejudged; rj != nil {
		// The verdicts came from other bounds (fiomig report --pause-crit,
		// --freezes-allowed): the reruns are judged by those, and the
		// rerun command names them.
		s.base.Params.PauseCritS, s.base.Params.FreezesAllowed = rj.PauseCritS, rj.FreezesAllowed
		fmt.Fprintf(log, "shrink: judged by the bounds it was re-judged by: --pause-crit %s --freezes-allowed %d (%s)\n",
			record.FormatT(rj.PauseCritS), rj.FreezesAllowed, rj.Command)
	}

	if check == checks.CheckMigrationOutcomes {
		n, ends := notCompleted(sum, orig.migrations), faults.EndsByDesign(orig.faults)
		s.beyondDesign = n > ends
		if s.beyondDesign {
			fmt.Fprintf(log, "shrink: %s: %d migrations not completed, more than the %d its faults may end by design; a smaller schedule is taken only while that holds\n", check, n, ends)
		} else {
			fmt.Fprintf(log, "shrink: %s: %d migrations not completed, no more than the %d its faults may end by design: shrinking on the verdict alone\n", check, n, ends)
		}
	}
	cur := orig
	err = func() error {
		fails, err := s.try("the executed schedule, unchanged", orig, "")
		if err != nil {
			return err
		}
		if !fails {
			return ErrNotReproduced
		}
		if cur, err = s.migrationsPass(cur); err != nil {
			return err
		}
		n := len(cur.faults)
		if cur, err = s.faultsPass(cur); err != nil {
			return err
		}
		if len(cur.faults) < n {
			cur, err = s.migrationsPass(cur)
		}
		return err
	}()
	switch {
	case errors.Is(err, errInterrupted):
		res.Interrupted = true
	case err != nil:
		_ = record.WriteJSON(filepath.Join(dir, ShrinkRecord), res)
		return res, err
	}
	// The minimal schedule, its fault file at its final path, rerun once
	// more so that its run (and the command its plan.json records) is kept.
	res.Migrations, res.Faults, res.Schedule = cur.migrations, len(cur.faults), cur.faults
	faultFile := filepath.Join(dir, ShrinkFaultFile)
	res.Command = s.spec(cur, faultFile).Command()
	if err := faults.WriteFile(faultFile, cur.faults); err != nil {
		return res, err
	}
	if !res.Interrupted {
		fails, err := s.try("the minimal schedule, kept", cur, filepath.Join(dir, ShrinkRunDir))
		switch {
		case errors.Is(err, errInterrupted):
			res.Interrupted = true
		case err != nil:
			return res, err
		case !fails:
			return res, ErrNotDeterministic
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ShrinkCommand), []byte(res.Command+"\n"), 0o644); err != nil {
		return res, err
	}
	return res, record.WriteJSON(filepath.Join(dir, ShrinkRecord), res)
}

// errInterrupted ends a shrink on SIGINT/SIGTERM (ctx done).
var errInterrupted = errors.New("interrupted")

// candidate is a schedule: the first migrations migrations, and faults.
type candidate struct {
	migrations int
	faults     []record.FaultSpec
}

// key identifies a candidate's schedule.
func (c candidate) key() string {
	b, _ := json.Marshal(c.faults)
	return strconv.Itoa(c.migrations) + " " + string(b)
}

// shrinker reruns candidates of one run.
type shrinker struct {
	ctx   context.Context
	dir   string // the shrink directory
	base  Spec   // the run's spec (plan.json)
	check string
	log   io.Writer
	res   *ShrinkResult
	tries int
	// seen holds the check's verdict for every candidate already rerun
	// (key: candidate.key): a rerun is deterministic, so it is not repeated.
	seen map[string]bool
	// beyondDesign: migration-outcomes counts as still failing only while
	// more migrations are not completed than the candidate's faults may
	// end by design (faults.EndsByDesign) — else a minimum of one
	// migration and one fault that ends it "fails" by construction, and
	// the run's own cause is shrunk away.
	beyondDesign bool
}

// notCompleted counts the migrations of a run of n planned that did not
// complete (failed, aborted, timed out, still running or never started).
func notCompleted(sum record.Summary, n int) int {
	done := 0
	for _, m := range sum.Migrations {
		if m.Outcome == record.PhaseCompleted {
			done++
		}
	}
	return max(0, n-done)
}

// spec is the run's spec with candidate c's migrations and schedule; the
// schedule is recorded as the fault file faultFile (or none when empty).
func (s *shrinker) spec(c candidate, faultFile string) Spec {
	x := s.base
	x.Params.Migrations, x.Schedule = c.migrations, c.faults
	x.Params.Faults = record.FaultsFilePrefix + faultFile
	if len(c.faults) == 0 {
		x.Params.Faults, x.Schedule = record.FaultsNone, []record.FaultSpec{}
	}
	return x
}

// try reruns c and reports whether the check still fails. keepAs, when
// set, keeps the run's directory (with its reports) there, the schedule
// read from the fault file the command names (as a rerun reads it);
// otherwise only summary.json is written, in a directory removed
// afterwards.
func (s *shrinker) try(what string, c candidate, keepAs string) (bool, error) {
	if fails, ok := s.seen[c.key()]; ok && keepAs == "" {
		return fails, nil
	}
	s.tries++
	tmp := filepath.Join(s.dir, fmt.Sprintf(".try-%d", s.tries))
	defer os.RemoveAll(tmp)
	x := s.spec(c, filepath.Join(s.dir, ShrinkFaultFile))
	x.Out = tmp
	if keepAs != "" && len(c.faults) > 0 {
		x.Schedule = nil
	}
	r, err := Run(s.ctx, x, Options{SummaryOnly: keepAs == ""})
	switch {
	case r.Interrupted:
		return false, errInterrupted
	case err != nil:
		return false, fmt.Errorf("%s: %w", what, err)
	}
	verdict, detail := "absent", ""
	for _, ch := range r.Summary.Checks {
		if ch.Name == s.check {
			verdict, detail = ch.Verdict, ch.Detail
		}
	}
	fails := verdict == record.Fail
	if fails && s.beyondDesign {
		if n, ends := notCompleted(r.Summary, c.migrations), faults.EndsByDesign(c.faults); n <= ends {
			fails, verdict = false, fmt.Sprintf("fail only by design (%d not completed, %d fault(s) that may end one)", n, ends)
		}
	}
	s.seen[c.key()] = fails
	if keepAs != "" {
		s.res.Detail = detail
		if err := os.Rename(r.Dir, keepAs); err != nil {
			return false, fmt.Errorf("keep the minimal run: %w", err)
		}
	}
	s.res.Steps = append(s.res.Steps, ShrinkStep{Try: what, Migrations: c.migrations, Faults: len(c.faults), Verdict: verdict, Kept: fails})
	mark := verdict + ": not taken"
	if fails {
		mark = "still fails: taken"
	}
	fmt.Fprintf(s.log, "shrink: try %d: %s (%d migrations, %d faults): %s %s\n", s.tries, what, c.migrations, len(c.faults), s.check, mark)
	return fails, nil
}

// migrationsPass bisects the migration count of cur over [0, cur.migrations]
// for the fewest that still fails (cur itself fails). Every count it
// returns was seen failing.
func (s *shrinker) migrationsPass(cur candidate) (candidate, error) {
	lo, hi := -1, cur.migrations // hi fails; lo is not known to fail
	best := cur
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		c := candidate{migrations: mid, faults: WithinMigrations(best.faults, mid)}
		fails, err := s.try(fmt.Sprintf("--migrations=%d", mid), c, "")
		if err != nil {
			return best, err
		}
		if fails {
			hi, best = mid, c
		} else {
			lo = mid
		}
	}
	return best, nil
}

// faultsPass drops faults one at a time, in schedule order, until a whole
// pass drops none.
func (s *shrinker) faultsPass(cur candidate) (candidate, error) {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(cur.faults); {
			c := candidate{migrations: cur.migrations, faults: slices.Delete(slices.Clone(cur.faults), i, i+1)}
			fails, err := s.try("without "+DescribeFault(cur.faults[i]), c, "")
			if err != nil {
				return cur, err
			}
			if fails {
				cur, changed = c, true
				continue // the next fault is now at i
			}
			i++
		}
	}
	return cur, nil
}

// migrationOrdinal returns N for a migration reference "#N" (the N-th
// migration started), "#N+" (the N-th or any later one: none runs when
// fewer than N do) or a simulator id "mig-NNNN" (ids are numbered in the
// order migrations start).
func migrationOrdinal(ref string) (int, bool) {
	var num string
	switch {
	case strings.HasPrefix(ref, "#"):
		num = strings.TrimSuffix(ref[1:], "+")
	case strings.HasPrefix(ref, "mig-"):
		num = ref[4:]
	default:
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n > 0
}

// WithinMigrations keeps the faults that still have their trigger in a run
// of m migrations: a fault tied to migration N (Migration, or the Target of
// an aborted-validation) goes when N > m; faults triggered by time or by
// the first migration to enter a phase stay.
func WithinMigrations(fs []record.FaultSpec, m int) []record.FaultSpec {
	var out []record.FaultSpec
	for _, s := range fs {
		n, ok := migrationOrdinal(s.Migration)
		if !ok && s.Fault == faults.KindAbortedValidation {
			n, ok = migrationOrdinal(s.Target)
		}
		if ok && n > m {
			continue
		}
		out = append(out, s)
	}
	return out
}

// DescribeFault names a schedule entry in one line.
func DescribeFault(s record.FaultSpec) string {
	when := s.Phase
	if when == "" {
		when = "t=" + record.FormatT(s.AtS) + " s"
	}
	if s.Migration != "" {
		when += " of " + s.Migration
	}
	return fmt.Sprintf("%s on %s at %s", s.Fault, s.Target, when)
}
