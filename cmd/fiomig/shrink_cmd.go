package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

func init() {
	register(command{name: "shrink", summary: "remove faults and migrations from a failing run's schedule while the same check still fails", run: shrinkCmd})
}

// Files of a shrink directory.
const (
	shrinkFaultFile = "faults.yaml" // the minimal schedule, a fault file
	shrinkCommand   = "command.txt" // the one command that reruns it
	shrinkRecord    = "shrink.json" // every step tried
	shrinkRunDir    = "run"         // the minimal schedule's failing run
)

type shrinkFlags struct {
	check string
	out   string
}

func newShrinkFlagSet(f *shrinkFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig shrink", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.check, "check", "", "the failing `check` to keep failing (default: the run's first failing check, in summary.json order)")
	fs.StringVar(&f.out, "out", "", "`directory` under which shrink-<run directory name>[-N]/ is created (default: the run directory's parent)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fiomig shrink RUNDIR [--check NAME] [--out DIR]

Takes a failing run of "fiomig run" (RUNDIR: its plan.json holds the command,
the seed and the fault schedule as executed) and removes migrations and
faults from its schedule while the same check still fails, rerunning the
seed each time (on virtual time a rerun is exact):

  1. rerun the executed schedule unchanged: it must fail the check again;
  2. migrations: find the fewest --migrations M that still fails, by
     bisection over [0, M] (a migration is removed by lowering the count,
     from the last one: migrations run one after another, each volume
     drawn from the seed, so the first M migrations of a run with
     --migrations M are those of the original run; faults tied to a
     migration past M go with it);
  3. faults: drop each fault in schedule order, one at a time, keeping
     every drop after which the check still fails, until a whole pass
     drops none (the result is 1-minimal: removing any single fault left
     makes the check pass);
  4. if step 3 dropped any fault, step 2 once more.

Each step is deterministic and printed on stderr. It writes
<out>/shrink-<run directory name>/ with
  faults.yaml   the minimal schedule as a fault file (fiomig run --fault-file)
  command.txt   the one command that reruns it
  run/          that command's run, failing the check
  shrink.json   the original and minimal schedule sizes and every step tried

Exit codes: 0 a minimal schedule that fails the check was found (it may be
the original one when nothing could be removed); 1 the run's executed
schedule, rerun, does not fail the check again (not reproducible: nothing
to shrink); 2 bad usage (RUNDIR is not a run directory of fiomig run, the
run did not fail, or --check names no failing check); 130 interrupted.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// shrinkStep is one rerun tried by fiomig shrink.
type shrinkStep struct {
	Try        string `json:"try"`
	Migrations int    `json:"migrations"`
	Faults     int    `json:"faults"`
	Verdict    string `json:"verdict"` // the check's verdict in the rerun
	Kept       bool   `json:"kept"`    // the candidate still fails and became the current schedule
}

// shrinkResult is shrink.json.
type shrinkResult struct {
	RunDir             string `json:"run_dir"`
	Check              string `json:"check"`
	OriginalMigrations int    `json:"original_migrations"`
	OriginalFaults     int    `json:"original_faults"`
	Migrations         int    `json:"migrations"`
	Faults             int    `json:"faults"`
	Command            string `json:"command"`
	// Detail is the check's detail in the minimal schedule's run.
	Detail      string       `json:"detail"`
	Steps       []shrinkStep `json:"steps"`
	Interrupted bool         `json:"interrupted,omitempty"`
}

// candidate is a schedule: the first migrations migrations, and faults.
type candidate struct {
	migrations int
	faults     []record.FaultSpec
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

// withinMigrations keeps the faults that still have their trigger in a run
// of m migrations: a fault tied to migration N (Migration, or the Target of
// an aborted-validation) goes when N > m; faults triggered by time or by
// the first migration to enter a phase stay.
func withinMigrations(fs []record.FaultSpec, m int) []record.FaultSpec {
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

// describeFault names a schedule entry in one line.
func describeFault(s record.FaultSpec) string {
	when := s.Phase
	if when == "" {
		when = "t=" + record.FormatT(s.AtS) + " s"
	}
	if s.Migration != "" {
		when += " of " + s.Migration
	}
	return fmt.Sprintf("%s on %s at %s", s.Fault, s.Target, when)
}

// runCommandArgs splits plan.json's command ("fiomig run --a=b ...", as
// reproduceCommand writes it: every flag as --name=value) into run's
// arguments. A token not starting with "--" continues the value before it
// (a value with a space in it).
func runCommandArgs(cmd string) ([]string, error) {
	rest, ok := strings.CutPrefix(cmd, "fiomig run")
	if !ok || (rest != "" && rest[0] != ' ') {
		return nil, fmt.Errorf("its plan.json command %q is not a fiomig run (shrink reruns fiomig run; fiomig reproduce runs are not supported)", cmd)
	}
	var args []string
	for _, tok := range strings.Split(strings.TrimSpace(rest), " ") {
		switch {
		case tok == "":
		case strings.HasPrefix(tok, "--") || len(args) == 0:
			args = append(args, tok)
		default:
			args[len(args)-1] += " " + tok
		}
	}
	return args, nil
}

// scheduleArgs are the run flags that set a rerun's fault schedule: the
// fault file at path, or --faults=none for an empty schedule. The recorded
// command's own --faults and --fault-file are dropped first (overriddenFlags):
// fiomig run takes one or the other.
func scheduleArgs(path string, n int) []string {
	if n == 0 {
		return []string{"--faults=none"}
	}
	return []string{"--fault-file=" + path}
}

// overriddenFlags are the recorded command's flags that shrink sets itself.
var overriddenFlags = []string{"faults", "fault-file", "migrations", "out"}

// withoutFlags drops the --name=value arguments of the named flags.
func withoutFlags(args []string, names []string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && slices.Contains(names, name) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// createShrinkDir creates parent/shrink-<name>, or -2, -3, ... when taken.
func createShrinkDir(parent, name string) (string, error) {
	return record.CreateUniqueDir(parent, "shrink-"+name, "shrink")
}

// errInterrupted ends a shrink on SIGINT/SIGTERM.
var errInterrupted = errors.New("interrupted")

// shrinker reruns candidates of one run.
type shrinker struct {
	dir    string   // the shrink directory
	base   []string // the recorded command's run arguments
	check  string
	stderr io.Writer
	res    *shrinkResult
	tries  int
	// seen holds the check's verdict for every candidate already rerun
	// (key: candidate.key): a rerun is deterministic, so it is not repeated.
	seen map[string]bool
}

// key identifies a candidate's schedule.
func (c candidate) key() string {
	b, _ := json.Marshal(c.faults)
	return strconv.Itoa(c.migrations) + " " + string(b)
}

// try reruns c (its schedule written to a fault file) and reports whether
// the check still fails. keepAs, when set, keeps the run directory there
// and takes the fault file path from faultFile (the final run); otherwise
// the run directory is removed.
func (s *shrinker) try(what string, c candidate, faultFile, keepAs string) (bool, error) {
	if fails, ok := s.seen[c.key()]; ok && keepAs == "" {
		return fails, nil
	}
	s.tries++
	tmp := filepath.Join(s.dir, fmt.Sprintf(".try-%d", s.tries))
	defer os.RemoveAll(tmp)
	if faultFile == "" {
		faultFile = filepath.Join(tmp, shrinkFaultFile)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return false, err
	}
	if err := faults.WriteFile(faultFile, c.faults); err != nil {
		return false, err
	}
	args := append(s.args(c, faultFile), "--out="+filepath.Join(tmp, "out"))
	var out, errOut strings.Builder
	code := runCmd(args, &out, &errOut)
	if code == exitInterrupted {
		return false, errInterrupted
	}
	if code != exitPass && code != exitCheckFailed && code != exitInconclusive {
		return false, fmt.Errorf("%s: fiomig run exited %d: %s", what, code, strings.TrimSpace(errOut.String()))
	}
	runDirs, _ := filepath.Glob(filepath.Join(tmp, "out", "fio-mig-*"))
	if len(runDirs) != 1 {
		return false, fmt.Errorf("%s: fiomig run left %d run directories, want 1", what, len(runDirs))
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(runDirs[0], record.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %s: %w", what, record.SummaryFile, err)
	}
	verdict, detail := "absent", ""
	for _, c := range sum.Checks {
		if c.Name == s.check {
			verdict, detail = c.Verdict, c.Detail
		}
	}
	fails := verdict == record.Fail
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[c.key()] = fails
	if keepAs != "" {
		s.res.Detail = detail
		if err := os.Rename(runDirs[0], keepAs); err != nil {
			return false, fmt.Errorf("keep the minimal run: %w", err)
		}
	}
	step := shrinkStep{Try: what, Migrations: c.migrations, Faults: len(c.faults), Verdict: verdict, Kept: fails}
	s.res.Steps = append(s.res.Steps, step)
	mark := verdict + ": not taken"
	if fails {
		mark = "still fails: taken"
	}
	fmt.Fprintf(s.stderr, "shrink: try %d: %s (%d migrations, %d faults): %s %s\n", s.tries, what, c.migrations, len(c.faults), s.check, mark)
	return fails, nil
}

// args are the run arguments of candidate c with its schedule in faultFile.
func (s *shrinker) args(c candidate, faultFile string) []string {
	args := append(slices.Clone(s.base), "--migrations="+strconv.Itoa(c.migrations))
	return append(args, scheduleArgs(faultFile, len(c.faults))...)
}

// migrationsPass bisects the migration count of cur over [0, cur.migrations]
// for the fewest that still fails (cur itself fails). Every count it
// returns was seen failing.
func (s *shrinker) migrationsPass(cur candidate) (candidate, error) {
	lo, hi := -1, cur.migrations // hi fails; lo is not known to fail
	best := cur
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		c := candidate{migrations: mid, faults: withinMigrations(best.faults, mid)}
		fails, err := s.try(fmt.Sprintf("--migrations=%d", mid), c, "", "")
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
			fails, err := s.try("without "+describeFault(cur.faults[i]), c, "", "")
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

func shrinkCmd(args []string, stdout, stderr io.Writer) int {
	var f shrinkFlags
	fs := newShrinkFlagSet(&f)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return exitPass
		}
		fmt.Fprintf(stderr, "fiomig shrink: %v (see fiomig shrink --help)\n", err)
		return exitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fiomig shrink: "+format+"\n", a...)
		return exitUsage
	}
	switch len(pos) {
	case 0:
		return usage("name the failing run directory: fiomig shrink RUNDIR (see --help)")
	case 1:
	default:
		return usage("unexpected argument %q (one run directory only)", pos[1])
	}
	runDir := pos[0]
	if fi, err := os.Stat(runDir); err != nil || !fi.IsDir() {
		return usage("%s is not a run directory (%v)", runDir, errOrFile(err))
	}
	plan, err := record.ReadPlan(filepath.Join(runDir, record.PlanFile))
	if err != nil {
		return usage("%s is not a run directory: %v", runDir, err)
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(runDir, record.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		return usage("%s has no readable %s (an interrupted run has none: nothing to shrink): %v", runDir, record.SummaryFile, err)
	}
	base, err := runCommandArgs(plan.Command)
	if err != nil {
		return usage("%s: %v", runDir, err)
	}
	if slices.Contains(base, "--workload="+scenario.WorkloadFio) {
		return usage("%s ran real fio (--workload=%s) on the wall clock: a rerun is not the same run, so it cannot be shrunk", runDir, scenario.WorkloadFio)
	}
	base = withoutFlags(base, overriddenFlags)
	var failing []string
	for _, c := range sum.Checks {
		if c.Verdict == record.Fail {
			failing = append(failing, c.Name)
		}
	}
	if len(failing) == 0 {
		return usage("%s did not fail (verdict %s): nothing to shrink", runDir, sum.Verdict)
	}
	check := failing[0]
	if f.check != "" {
		if !slices.Contains(failing, f.check) {
			return usage("--check %s: not a failing check of %s (failing: %s)", f.check, runDir, strings.Join(failing, ", "))
		}
		check = f.check
	}
	out := f.out
	if out == "" {
		out = filepath.Dir(filepath.Clean(runDir))
	}
	dir, err := createShrinkDir(out, filepath.Base(filepath.Clean(runDir)))
	if err != nil {
		return usage("%v", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}

	orig := candidate{migrations: plan.Params.Migrations, faults: slices.Clone(plan.Faults)}
	res := &shrinkResult{RunDir: runDir, Check: check, OriginalMigrations: orig.migrations, OriginalFaults: len(orig.faults), Steps: []shrinkStep{}}
	s := &shrinker{dir: dir, base: base, check: check, stderr: stderr, res: res}
	fmt.Fprintf(stdout, "fiomig shrink %s: check %s, %d migrations, %d faults; into %s\n", runDir, check, orig.migrations, len(orig.faults), dir)

	// runCmd watches SIGINT/SIGTERM for each rerun; this keeps a signal
	// between reruns from killing the process before shrink.json is written.
	_, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cur := orig
	err = func() error {
		fails, err := s.try("the executed schedule, unchanged", orig, "", "")
		if err != nil {
			return err
		}
		if !fails {
			return errNotReproduced
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
	case errors.Is(err, errNotReproduced):
		fmt.Fprintf(stderr, "fiomig shrink: %s's executed schedule, rerun, does not fail %s again: not reproducible, nothing to shrink (steps in %s)\n", runDir, check, filepath.Join(dir, shrinkRecord))
		_ = record.WriteJSON(filepath.Join(dir, shrinkRecord), res)
		return exitCheckFailed
	case errors.Is(err, errInterrupted):
		res.Interrupted = true
		fmt.Fprintf(stderr, "fiomig shrink: interrupted; the smallest failing schedule so far (%d migrations, %d faults) is written, not known to be minimal\n", cur.migrations, len(cur.faults))
	case err != nil:
		fmt.Fprintf(stderr, "fiomig shrink: %v\n", err)
		_ = record.WriteJSON(filepath.Join(dir, shrinkRecord), res)
		return exitUsage
	}

	// The minimal schedule, its fault file at its final path, rerun once
	// more so that its run (and the command plan.json records) is kept.
	res.Migrations, res.Faults = cur.migrations, len(cur.faults)
	faultFile := filepath.Join(dir, shrinkFaultFile)
	// The command is built here rather than taken from the run's plan.json:
	// the recorded command's --faults and --fault-file are replaced.
	cmd := "fiomig run " + strings.Join(s.args(cur, faultFile), " ")
	if !res.Interrupted {
		fails, err := s.try("the minimal schedule, kept", cur, faultFile, filepath.Join(dir, shrinkRunDir))
		switch {
		case errors.Is(err, errInterrupted):
			res.Interrupted = true
		case err != nil:
			fmt.Fprintf(stderr, "fiomig shrink: %v\n", err)
			return exitUsage
		case !fails:
			fmt.Fprintf(stderr, "fiomig shrink: the minimal schedule failed %s once and not when rerun: the run is not deterministic\n", check)
			return exitCheckFailed
		}
	}
	if res.Interrupted {
		if err := faults.WriteFile(faultFile, cur.faults); err != nil {
			fmt.Fprintf(stderr, "fiomig shrink: %v\n", err)
			return exitUsage
		}
	}
	res.Command = cmd
	if err := os.WriteFile(filepath.Join(dir, shrinkCommand), []byte(cmd+"\n"), 0o644); err != nil {
		fmt.Fprintf(stderr, "fiomig shrink: %v\n", err)
		return exitUsage
	}
	if err := record.WriteJSON(filepath.Join(dir, shrinkRecord), res); err != nil {
		fmt.Fprintf(stderr, "fiomig shrink: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "minimal: %d of %d migrations, %d of %d faults still fail %s (%d reruns)\n",
		cur.migrations, orig.migrations, len(cur.faults), len(orig.faults), check, s.tries)
	for _, x := range cur.faults {
		fmt.Fprintf(stdout, "  fault: %s\n", describeFault(x))
	}
	if res.Detail != "" {
		fmt.Fprintf(stdout, "check:   %s: %s\n", check, res.Detail)
	}
	fmt.Fprintf(stdout, "faults:  %s\nrerun:   %s\n", faultFile, cmd)
	if res.Interrupted {
		return exitInterrupted
	}
	return exitPass
}

var errNotReproduced = errors.New("not reproduced")

func errOrFile(err error) error {
	if err != nil {
		return err
	}
	return errors.New("a file, not a directory")
}
