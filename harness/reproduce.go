package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fiomig/fiomig/analysis"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/sim"
)

// LoadIncident is analysis.LoadIncident with the file's fault schedules
// checked as a run checks them (checkIncidentFaults).
func LoadIncident(name string, dirs ...string) (incidents.Incident, error) {
	inc, err := analysis.LoadIncident(name, dirs...)
	if err != nil {
		return inc, err
	}
	return inc, checkIncidentFaults(inc)
}

// checkIncidentFaults checks every scheduled fault of inc (faults, and
// each hypothesis alternative's) as the Injector will (faults.FromSpec),
// so that a param its kind does not read, a bad phase or target is an
// error at load naming the file, the line and the entry
// ("faults.scheduled[1]"), before any run (incidents cannot import
// faults).
func checkIncidentFaults(inc incidents.Incident) error {
	check := func(field string, fs *incidents.Faults) error {
		if fs == nil {
			return nil
		}
		for i, s := range fs.Scheduled {
			if _, err := faults.FromSpec(s); err != nil {
				f := fmt.Sprintf("%s.scheduled[%d]", field, i)
				if n := inc.Line(f); n > 0 {
					return fmt.Errorf("%s: line %d: %s: %w", inc.File, n, f, err)
				}
				return fmt.Errorf("%s: %s: %w", inc.File, f, err)
			}
		}
		return nil
	}
	if err := check("faults", &inc.Faults); err != nil {
		return err
	}
	for i, u := range inc.Hypotheses {
		for j, a := range u.Alternatives {
			if err := check(fmt.Sprintf("hypotheses[%d].alternatives[%d].faults", i, j), a.Faults); err != nil {
				return err
			}
		}
	}
	return nil
}

// IncidentParams are an incident's run parameters: its pacing over
// fiomig's default thresholds, and the world it simulates with operator
// (incidents.Incident.World, defaults filled in).
func IncidentParams(inc incidents.Incident, operator string) (record.Params, error) {
	p := scenario.DefaultParams()
	pc := inc.Pacing
	p.Migrations, p.SampleIntervalS = pc.Migrations, pc.SampleIntervalS
	p.SettleS, p.SettleSampleIntervalS = pc.SettleS, pc.SettleSampleIntervalS
	p.GapS, p.MigrationWaitS = pc.GapS, pc.MigrationTimeoutS
	if pc.MigrationTimeoutS > 0 {
		p.Seed.MigrationTimeoutS = pc.MigrationTimeoutS
	}
	p.Faults, p.Incident, p.FaultSchedule = "", inc.Name, "incident"
	m, err := inc.World(operator)
	if err != nil {
		return p, fmt.Errorf("%s: %w", inc.File, err)
	}
	p.Model = sim.ModelDefaults(m)
	return p, nil
}

// IncidentSchedule is an incident's fault schedule for seed: the explicit
// entries, then the seeded family drawn over its migrations and nodes (the
// same for every operator variant).
func IncidentSchedule(inc incidents.Incident, seed int64, nodes []string) ([]record.FaultSpec, error) {
	sched := slices.Clone(inc.Faults.Scheduled)
	if s := inc.Faults.Seeded; s != nil {
		o := faults.SeededOptions{Count: s.Count, Kinds: s.Kinds, Phase: s.Phase, AfterS: s.AfterS, ForS: s.ForS, Nodes: nodes}
		for i := s.FirstMigration; i <= s.LastMigration; i++ {
			o.Migrations = append(o.Migrations, fmt.Sprintf("mig-%04d", i))
		}
		drawn, err := faults.Seeded(seed, o)
		if err != nil {
			return nil, fmt.Errorf("%s: faults.seeded: %w", inc.File, err)
		}
		sched = append(sched, drawn...)
	}
	return sched, nil
}

// Reproduction is what fiomig reproduce runs: an incident, the operator
// variants, the model flags that override the incident's world, and where.
type Reproduction struct {
	Incident incidents.Incident
	// Name is the incident as named on the command line (a catalogue name
	// or a path), Catalog the --catalog directory: for rerun commands.
	Name, Catalog string
	// Operators are the variants to run ("prefix", "fixed").
	Operators []string
	// Flags are model flags given as --name=value (ModelFlags' names:
	// --reconnect-reset=partial, --release-sources, ...): each overrides the
	// incident's world for every operator, and every rerun command repeats
	// them.
	Flags []string
	// NoFaults drops the incident's seeded and scheduled faults (fiomig
	// reproduce --faults none): the run shows what the sourced model does
	// with no fault at all (docs/incidents.md). plan.json's params
	// "fault_schedule" says so.
	NoFaults bool
	// Hypothesis is the ID of the combination of the incident's
	// hypotheses whose world Incident is (incidents.Combination;
	// fiomig reproduce --hypothesis), "" for the file as written: for
	// rerun commands and the model's name.
	Hypothesis string
	// Params, when set, replace the incident's pacing and thresholds (the
	// world stays the incident's); Schedule its fault schedule (tests).
	Params   *record.Params
	Schedule []record.FaultSpec
	// Out is the directory under which run directories are created;
	// StartUnix names them (0 = now).
	Out       string
	StartUnix int64
}

// Command is the command that reruns one operator's run of seed.
func (r Reproduction) Command(op string, seed int64) string {
	return r.CommandWith("--operator="+op, "--seed="+strconv.FormatInt(seed, 10))
}

// CommandWith is fiomig reproduce of r with flags (--operator, --seed or
// --seeds), then r's catalog, faults and model flags.
func (r Reproduction) CommandWith(flags ...string) string {
	if r.Catalog != "" {
		flags = append(flags, "--catalog="+r.Catalog)
	}
	if r.NoFaults {
		flags = append(flags, "--faults="+record.FaultsNone)
	}
	if r.Hypothesis != "" {
		flags = append(flags, "--hypothesis="+r.Hypothesis)
	}
	return CommandLine("fiomig reproduce "+r.Name, append(flags, r.Flags...))
}

// Model names the model r runs, for the symptom tables: the incident
// file's as written, or changed by a hypothesis, --faults none or model
// flags.
func (r Reproduction) Model() string {
	var changes []string
	if r.Hypothesis != "" {
		changes = append(changes, "hypothesis "+r.Hypothesis)
	}
	if r.NoFaults {
		changes = append(changes, "--faults="+record.FaultsNone)
	}
	changes = append(changes, r.Flags...)
	if len(changes) == 0 {
		return "the model as the incident file writes it"
	}
	return "the incident file's model with " + strings.Join(changes, ", ")
}

// params are one operator's run parameters: the incident's (or
// r.Params'), the world the incident sets for op with r.Flags over it.
func (r Reproduction) params(op string) (record.Params, error) {
	p, err := IncidentParams(r.Incident, op)
	if err != nil {
		return p, UsageError{err}
	}
	if r.Params != nil {
		m := p.Model
		p = *r.Params
		p.Model, p.Incident, p.FaultSchedule = m, r.Incident.Name, "incident"
	}
	if p.Model, err = applyModelFlags(p.Model, r.Flags); err != nil {
		return p, err
	}
	p.Model = sim.ModelDefaults(p.Model)
	if r.NoFaults {
		p.FaultSchedule = "none (the incident's seeded and scheduled faults dropped)"
	}
	return p, nil
}

// applyModelFlags sets flags (--name=value, ModelFlags' names) on m.
func applyModelFlags(m record.Model, flags []string) (record.Model, error) {
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	var x record.Model
	ModelFlags(fs, &x)
	x = m
	for _, f := range flags {
		name, v, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if err := fs.Set(name, v); err != nil {
			return m, Usagef("--%s: %v", name, err)
		}
	}
	return x, nil
}

// ReproduceResult is one operator's run.
type ReproduceResult struct {
	Dir     string
	Plan    record.Plan
	Summary record.Summary
	// Run is the incident analysis of the record: figures, bands, shape.
	analysis.Run
	// FaultErrors are injections or recoveries that failed (also in the timeline).
	FaultErrors []error
	Interrupted bool
}

// ReproduceOne runs the incident once, with one operator and seed,
// through scenario.Run into out (a normal run directory: plan.json with
// the fault schedule as executed, timeline.jsonl, summary.json, report.md;
// with summaryOnly only plan.json and summary.json), computes the
// incident's figures from the lines it wrote and judges the incident's
// expectations on them; reproduce.md is Reproduce's to write.
func ReproduceOne(ctx context.Context, r Reproduction, op string, seed int64, out string, progress io.Writer) (ReproduceResult, error) {
	return reproduceOne(ctx, r, op, seed, out, progress, false)
}

func reproduceOne(ctx context.Context, r Reproduction, op string, seed int64, out string, progress io.Writer, summaryOnly bool) (ReproduceResult, error) {
	inc := r.Incident
	if inc.Name == "" {
		return ReproduceResult{}, errors.New("reproduce: no incident")
	}
	if op != record.OperatorPrefix && op != record.OperatorFixed {
		return ReproduceResult{}, Usagef("reproduce: operator %q: want prefix or fixed", op)
	}
	p, err := r.params(op)
	if err != nil {
		return ReproduceResult{}, err
	}
	cluster, err := simbackend.New(simbackend.Config{Seed: seed, Model: p.Model})
	if err != nil {
		return ReproduceResult{}, Usagef("reproduce %s: simulator: %v", inc.File, err)
	}
	sched := r.Schedule
	if r.NoFaults {
		sched = []record.FaultSpec{}
	}
	if sched == nil {
		var nodes []string
		for _, n := range cluster.Topology().Nodes {
			nodes = append(nodes, n.Name)
		}
		if sched, err = IncidentSchedule(inc, seed, nodes); err != nil {
			return ReproduceResult{}, UsageError{err}
		}
	}
	inj, err := faults.NewInjector(cluster, sched)
	if err != nil {
		return ReproduceResult{}, UsageError{err}
	}
	defer inj.Close()
	start := r.StartUnix
	if start == 0 {
		start = time.Now().Unix()
	}
	scen := "reproduce " + inc.Name
	if r.Hypothesis != "" {
		scen += " under hypothesis " + r.Hypothesis
	}
	plan := record.Plan{Tool: "fiomig", Scenario: scen, Seed: seed, Command: r.Command(op, seed),
		Params: p, Faults: sched}
	// Run recovers what is still injected (recording its lines) and writes
	// the schedule as executed into plan.json.
	var kept analysis.IncidentKeeper // the lines the figures need, kept as written
	res, err := scenario.Run(ctx, inj, scenario.Config{Plan: plan, OutDir: out, StartUnix: start, Progress: progress, OnLine: kept.Add,
		SummaryOnly: summaryOnly})
	x := ReproduceResult{Dir: res.Dir, Interrupted: res.Interrupted, Summary: res.Summary, Plan: res.Plan}
	x.FaultErrors = inj.Errors()
	if err != nil || res.Interrupted {
		return x, err
	}
	x.Run = analysis.Analyse(inc, res.Plan, kept.Lines(), x.Summary)
	return x, nil
}

// Reproduce runs every operator of r on one seed at once (each its own
// simulated world: the same bytes as one after the other), into r.Out, and
// writes each run's reproduce.md with every operator side by side. Each
// operator starts once the one before it has created its run directory,
// so that the first keeps fio-mig-<start> and the next fio-mig-<start>-2.
// Progress is never interleaved: the first operator's lines go out as
// they come, each later one's are held until every operator before it has
// ended and then follow as they come; with more than one operator each
// line is tagged with its operator. An error of any run is returned
// (after every run ended).
func Reproduce(ctx context.Context, r Reproduction, seed int64, progress io.Writer) ([]ReproduceResult, error) {
	if r.StartUnix == 0 {
		r.StartUnix = time.Now().Unix()
	}
	ops := r.Operators
	results := make([]ReproduceResult, len(ops))
	errs := make([]error, len(ops))
	out := &lockedWriter{w: progress}
	started := make([]chan struct{}, len(ops)+1)
	// shown[i] closes once operator i has ended and its lines are out.
	shown := make([]chan struct{}, len(ops)+1)
	for i := range started {
		started[i], shown[i] = make(chan struct{}), make(chan struct{})
	}
	close(started[0])
	close(shown[0])
	forEach(context.Background(), len(ops), len(ops), func(i int) bool {
		<-started[i]
		p := &opProgress{w: out, started: started[i+1], live: shown[i]}
		if len(ops) > 1 {
			p.tag = fmt.Sprintf("%-*s| ", len("prefix "), ops[i])
		}
		defer close(shown[i+1])
		defer p.flush()
		defer p.start()
		results[i], errs[i] = ReproduceOne(ctx, r, ops[i], seed, r.Out, p)
		if errs[i] != nil {
			errs[i] = fmt.Errorf("%s: %w", ops[i], errs[i])
		}
		return false
	})
	if err := errors.Join(errs...); err != nil {
		return results, err
	}
	return results, writeReproduce(r.Model(), results)
}

// writeReproduce writes every run's reproduce.md, all runs side by side;
// model names the model run.
func writeReproduce(model string, results []ReproduceResult) error {
	for _, x := range results {
		if x.Interrupted {
			return nil
		}
	}
	for _, x := range results {
		if err := reports.WriteReproduce(x.Dir, model, x.Run, Runs(results)); err != nil {
			return err
		}
	}
	return nil
}

// Runs are the analysed runs of results.
func Runs(results []ReproduceResult) []analysis.Run {
	out := make([]analysis.Run, len(results))
	for i, x := range results {
		out[i] = x.Run
	}
	return out
}

// BandsExitCode is one seed's runs' exit code, from the bands: 1 when an
// expectation does not hold in a run whose faults all left evidence, else
// 3 when a run's fault left none (that run proves nothing either way),
// else 0.
func BandsExitCode(runs []analysis.Run) int {
	code := ExitPass
	for _, r := range runs {
		switch {
		case r.Figures.FaultsCheck.Verdict == record.Inconclusive:
			code = Worse(code, ExitInconclusive)
		case !r.Shape.OK:
			code = Worse(code, ExitFail)
		}
	}
	return code
}

// CompareExitCode is the exit code of compare expectations judged over
// seeds: 3 when one that does not hold came out inconclusive or not
// exercised (nothing the fix removes occurred: a pass would be vacuous),
// 1 when one does not hold otherwise or came out not exercised with
// intervals that alone fail (BandResult.Refuted: a measured finding),
// else 0 (not judged counts as holding).
func CompareExitCode(bands []analysis.BandResult) int {
	code := ExitPass
	for _, b := range bands {
		switch {
		case b.Got == analysis.NotExercised && b.Refuted:
			code = Worse(code, ExitFail)
		case b.Got == analysis.NotExercised:
			code = Worse(code, ExitInconclusive)
		case !b.Judged || b.OK:
		case b.Got == record.Inconclusive:
			code = Worse(code, ExitInconclusive)
		default:
			code = Worse(code, ExitFail)
		}
	}
	return code
}

// opProgress is one operator's progress writer: every line indented by
// two spaces and tag; the first Write (or start) closes started. Until
// live is closed (the operators before it have ended and shown their
// lines) the lines are held; after, each Write is one write to w, the
// held lines first. flush waits for live and writes what is held.
type opProgress struct {
	w       io.Writer
	tag     string
	started chan struct{}
	live    <-chan struct{}
	once    sync.Once
	mu      sync.Mutex
	held    []byte
}

func (o *opProgress) start() { o.once.Do(func() { close(o.started) }) }

func (o *opProgress) Write(p []byte) (int, error) {
	o.start()
	s := strings.TrimRight(string(p), "\n")
	pre := "  " + o.tag
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = append(o.held, pre+strings.ReplaceAll(s, "\n", "\n"+pre)+"\n"...)
	select {
	case <-o.live:
	default:
		return len(p), nil
	}
	_, err := o.w.Write(o.held)
	o.held = o.held[:0]
	return len(p), err
}

// flush waits until the operators before this one have shown their lines
// and writes the lines still held.
func (o *opProgress) flush() {
	<-o.live
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.held) > 0 {
		o.w.Write(o.held)
		o.held = nil
	}
}

// lockedWriter serialises writes to w (nil: discard).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}

// SeedsResult is a reproduction over seeds: its directory, each seed's
// runs (those that finished), the comparison over them, and the exit code.
type SeedsResult struct {
	Dir    string
	Seeds  []analysis.SeedRuns
	Report string // the top reproduce.md
	// Markdown is the top reproduce.md's text.
	Markdown []byte
	ExitCode int
	// Errors are the seeds' runs that could not be made.
	Errors []error
}

// ReproduceSeeds runs every seed (each with every operator, one after
// another; jobs seeds at once) into <r.Out>/reproduce-<name>-<unix>/seed-N,
// writes each seed's reproduce.md, then the seeds table with, with both
// operators, the incident's compare expectation judged over all the seeds
// (analysis.JudgeCompare) in the top reproduce.md. The exit code is the
// worst of the seeds' bands and the comparison; 2 when a run could not be
// made; 130 when ctx ended first. log gets one line per seed done.
func ReproduceSeeds(ctx context.Context, r Reproduction, seeds []int64, jobs int, command string, log io.Writer) (SeedsResult, error) {
	start := r.StartUnix
	if start == 0 {
		start = time.Now().Unix()
	}
	dir, err := record.CreateUniqueDir(r.Out, "reproduce-"+r.Incident.Name+"-"+strconv.FormatInt(start, 10), "reproduce")
	if err != nil {
		return SeedsResult{}, UsageError{err}
	}
	r.StartUnix = start
	type outcome struct {
		runs             analysis.SeedRuns
		err              error
		ran, interrupted bool
	}
	results := make([]outcome, len(seeds))
	var mu sync.Mutex
	done := 0
	forEach(ctx, len(seeds), jobs, func(i int) bool {
		o := outcome{runs: analysis.SeedRuns{Seed: seeds[i]}, ran: true}
		x := r
		x.Out = filepath.Join(dir, fmt.Sprintf("seed-%d", seeds[i]))
		var all []ReproduceResult
		for _, op := range r.Operators {
			res, err := ReproduceOne(ctx, x, op, seeds[i], x.Out, nil)
			if err != nil {
				o.err = fmt.Errorf("seed %d, %s: %w", seeds[i], op, err)
				break
			}
			if res.Interrupted {
				o.interrupted = true
				break
			}
			all = append(all, res)
		}
		if o.err == nil && !o.interrupted {
			o.runs.Runs = Runs(all)
			o.err = writeReproduce(r.Model(), all)
		}
		mu.Lock()
		defer mu.Unlock()
		results[i] = o
		done++
		fmt.Fprintf(log, "reproduce: seed %d %s — %d/%d done\n", seeds[i], seedStatus(o.runs, o.err, o.interrupted), done, len(seeds))
		return false
	})
	out := SeedsResult{Dir: dir, ExitCode: ExitPass}
	for _, o := range results {
		switch {
		case !o.ran || o.interrupted:
			out.ExitCode = ExitInterrupted
		case o.err != nil:
			out.Errors = append(out.Errors, o.err)
			if out.ExitCode != ExitInterrupted {
				out.ExitCode = ExitUsage
			}
		default:
			out.Seeds = append(out.Seeds, o.runs)
			if out.ExitCode != ExitInterrupted && out.ExitCode != ExitUsage {
				out.ExitCode = Worse(out.ExitCode, BandsExitCode(o.runs.Runs))
			}
		}
	}
	bands, cmps := analysis.JudgeCompare(r.Incident, analysis.Pairs(out.Seeds))
	if out.ExitCode != ExitInterrupted && out.ExitCode != ExitUsage {
		out.ExitCode = Worse(out.ExitCode, CompareExitCode(bands))
	}
	out.Markdown = reports.SeedsMarkdown(r.Incident, r.Model(), command, out.Seeds, bands, cmps)
	out.Report = filepath.Join(dir, reports.ReproduceFile)
	return out, os.WriteFile(out.Report, out.Markdown, 0o644)
}

// seedStatus says how one seed's runs ended, for the progress line.
func seedStatus(s analysis.SeedRuns, err error, interrupted bool) string {
	switch {
	case err != nil:
		return "error"
	case interrupted:
		return "interrupted"
	}
	st := "every expectation holds"
	if !s.OK() {
		st = "an expectation does not hold"
	}
	if p := analysis.PairOf(s.Runs); p != nil {
		st += fmt.Sprintf(", validation failures prefix %d, fixed %d", p.Prefix.Total, p.Fixed.Total)
	}
	return st
}

// CheckHypotheses checks that fiomig reproduce --hypotheses or
// --hypothesis can run r: its incident declares hypotheses and lists
// symptoms to compare them with, r runs the operator the incident ran, and
// no model flag of r sets a switch an alternative sets (the flag would
// override the hypothesis). Errors are UsageErrors naming the file.
func (r Reproduction) CheckHypotheses() error {
	inc := r.Incident
	switch {
	case len(inc.Hypotheses) == 0:
		return Usagef("%s declares no hypotheses", inc.File)
	case inc.Symptoms == nil:
		return Usagef("%s lists no symptoms to compare the hypotheses with", inc.File)
	case !slices.Contains(r.Operators, inc.Symptoms.Operator):
		return Usagef("the incident ran the %s operator (symptoms.operator): --operator must include it", inc.Symptoms.Operator)
	}
	sw := inc.HypothesisSwitches()
	for _, fl := range r.Flags {
		name, _, _ := strings.Cut(strings.TrimPrefix(fl, "--"), "=")
		if k := strings.ReplaceAll(name, "-", "_"); slices.Contains(sw, k) || slices.Contains(sw, k+"_s") {
			return Usagef("%s: a hypothesis of %s sets that switch; drop the flag", fl, inc.File)
		}
	}
	return nil
}

// Describe is r's world in one line for a person (its first operator's):
// the shape, pods, migrations and settle, with the sources of the
// incident's topology, pacing and faults.
func (r Reproduction) Describe() (string, error) {
	p, err := IncidentParams(r.Incident, r.Operators[0])
	if err != nil {
		return "", err
	}
	t, inc := p.Model, r.Incident
	return fmt.Sprintf("%d nodes, %d hosts (hosts are nodes: %t), %d volumes x %d namespace(s), %d consumer(s) each, pods %t; %d migrations, settle %.0f s sampled every %.0f s [topology: %s; pacing: %s; faults: %s]",
		t.Nodes, t.Hosts, t.HostsAreNodes, t.Volumes, t.NamespacesPerVolume, t.ConsumersPerVolume, t.Pods, p.Migrations, p.SettleS, p.SettleSampleIntervalS,
		inc.Topology.Source, inc.Pacing.Source, orDefault(string(inc.Faults.Source), "none")), nil
}
