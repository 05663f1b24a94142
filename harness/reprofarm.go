package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/record"
)

// reproduceSettings are a farm of fiomig reproduce's own settings
// (farmSettings.Reproduce): the incident file itself, which the pods
// cannot read, and what fiomig reproduce was given — what its pods run
// (ReproduceShard) and what --attach rebuilds the reproduction from.
type reproduceSettings struct {
	// Name and Catalog are the incident as the command line named it (for
	// rerun commands); File is where it was read from, Incident the file's
	// text, gzipped.
	Name     string `json:"name"`
	Catalog  string `json:"catalog,omitempty"`
	File     string `json:"file"`
	Incident []byte `json:"incident"`
	// Operators, Flags and NoFaults are Reproduction's.
	Operators []string `json:"operators"`
	Flags     []string `json:"flags,omitempty"`
	NoFaults  bool     `json:"no_faults,omitempty"`
}

// reproduction is the reproduction set describes, into out, and its
// seeds; errors are UsageErrors.
func (set farmSettings) reproduction(out string) (Reproduction, []int64, error) {
	rs := set.Reproduce
	text, err := gunzip(rs.Incident)
	if err != nil {
		return Reproduction{}, nil, Usagef("the farm's incident file %s: %v", rs.File, err)
	}
	inc, err := analysis.ParseIncident(rs.File, text)
	if err == nil {
		err = checkIncidentFaults(inc)
	}
	if err != nil {
		return Reproduction{}, nil, UsageError{err}
	}
	seeds, err := ParseSeeds(set.SeedsArg)
	if err != nil {
		return Reproduction{}, nil, UsageError{err}
	}
	return Reproduction{Incident: inc, Name: rs.Name, Catalog: rs.Catalog, Operators: rs.Operators, Flags: rs.Flags,
		NoFaults: rs.NoFaults, Out: out, StartUnix: set.StartUnix}, seeds, nil
}

// ReproduceShard is what a pod of a farm of fiomig reproduce --hypotheses
// runs (fiomig reproduce --shard SETTINGS): settings are the farm's (as
// its Job's annotation holds them: the incident file's text, the
// operators, model flags and seeds), and the pod runs shard index of
// them (runShard). Position p of the runs is operator p mod
// len(operators) of outcome p / len(operators) — combination k /
// len(seeds) on seed k mod len(seeds), the local run's order — and each
// runs through the same call as a local --hypotheses (reproduceOne,
// summary only); its line carries the run's incident figures, plan.json
// and summary.json, raw (never an aggregate), or the error that kept the
// run from being made. out holds the runs while they are read.
func ReproduceShard(ctx context.Context, settings string, index int, out string, w io.Writer) error {
	var set farmSettings
	if err := json.Unmarshal([]byte(settings), &set); err != nil || set.Reproduce == nil {
		return Usagef("--shard: not the settings of a farm of fiomig reproduce (%v)", err)
	}
	r, seeds, err := set.reproduction(out)
	if err != nil {
		return err
	}
	dir, err := shardDir(out, set.Shards, index)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	h := &hypRun{r: r, combos: r.Incident.Combinations(), seeds: seeds}
	ops := r.Operators
	n := len(h.combos) * len(seeds) * len(ops)
	return runShard(ctx, n, make([]bool, n), set.Shards, index, w, func(t farmTask) (farmLine, error) {
		c, seed := h.task(t.pos / len(ops))
		res, err := reproduceOne(ctx, h.world(c), ops[t.pos%len(ops)], seed, dir, nil, true)
		if res.Dir != "" {
			defer os.RemoveAll(res.Dir)
		}
		switch {
		case res.Interrupted:
			return farmLine{}, context.Canceled
		case err != nil:
			return farmLine{Err: err.Error()}, nil
		}
		l := farmLine{Figures: &res.Run.Figures}
		l.Plan, l.Summary, l.Sum, err = shipRun(res.Dir)
		return l, err
	})
}

// FarmHypotheses is Hypotheses on a farm (fiomig reproduce --hypotheses
// --on kube; docs/farm.md): one Indexed Job of f.Image whose pods run
// ReproduceShard, every (combination, seed, operator) of r over seeds,
// f.Parallelism pods at once; the harness follows their logs, writes each
// run's plan.json and summary.json where the local run writes them,
// judges each run's figures on its combination's incident with the same
// call (analysis.JudgeRun), and finishes as Hypotheses does: the same
// reproduce.md and HypothesesResult, byte for byte. farm.json beside it
// says where everything ran. With f.Attach, the reproduction, seeds and
// command come from the farm's Job (r gives only Out). A run that arrives
// twice (an index retried) with another summary.json is an error naming
// it (exit 2). The Job, its pods and Lease are removed at the end, on an
// error and on ctx's end (SIGINT: the report covers the combinations
// whose every run arrived, exit 130).
func FarmHypotheses(ctx context.Context, r Reproduction, seeds []int64, command string, f FarmOptions, log io.Writer) (HypothesesResult, error) {
	if f.Attach == "" {
		switch {
		case f.Parallelism < 1:
			return HypothesesResult{}, Usagef("--parallelism must be >= 1, got %d", f.Parallelism)
		case f.Image == "":
			return HypothesesResult{}, Usagef("--on kube needs the fiomig image (--helper-image)")
		case r.Params != nil || r.Schedule != nil || r.Hypothesis != "" || len(r.Incident.Text) == 0:
			return HypothesesResult{}, errors.New("farm: a reproduction with overridden params, schedule or hypothesis, or without its file's text, cannot be sent to pods")
		}
	}
	fc, err := openFarm(ctx, &f, DefaultSpec().Kube.Namespace)
	if err != nil {
		return HypothesesResult{}, err
	}
	var set farmSettings
	if f.Attach != "" {
		if set, err = attachedSettings(ctx, fc, true); err == nil {
			r, seeds, err = set.reproduction(r.Out)
		}
		if err != nil {
			return HypothesesResult{}, err
		}
		command = set.Command
	} else if set, err = hypFarmSettings(&r, seeds, command, f); err != nil {
		return HypothesesResult{}, err
	}
	h, err := newHypotheses(r, seeds, log, f.Attach != "")
	if err != nil {
		return HypothesesResult{}, err
	}
	m := &hypMerge{h: h, got: map[int][]*farmLine{}}
	b, _ := json.Marshal(set)
	rep, ferr := driveFarm(ctx, fc, f, set, []string{"reproduce", "--shard=" + string(b), "--out=/work"}, "reproduce", log, m.take)
	if rep == nil {
		return HypothesesResult{Dir: h.dir}, ferr
	}
	res, err := h.finish(command)
	if len(m.twice) > 0 {
		res.Errors = append(res.Errors, m.twice...)
		if res.ExitCode != ExitInterrupted {
			res.ExitCode = ExitUsage
		}
	}
	if werr := record.WriteJSON(filepath.Join(h.dir, FarmFile), rep); err == nil {
		err = werr
	}
	return res, errors.Join(ferr, err)
}

// hypFarmSettings are the settings of a new farm of r over seeds (the
// Job's annotation; its pods' --shard); r.StartUnix is set (0 = now).
func hypFarmSettings(r *Reproduction, seeds []int64, command string, f FarmOptions) (farmSettings, error) {
	if r.StartUnix == 0 {
		r.StartUnix = time.Now().Unix()
	}
	text, err := gzipBytes(r.Incident.Text)
	if err != nil {
		return farmSettings{}, err
	}
	list := make([]string, len(seeds))
	for i, s := range seeds {
		list[i] = strconv.FormatInt(s, 10)
	}
	set := farmSettings{SeedsArg: strings.Join(list, ","), Command: command, FarmCommand: f.Command, StartUnix: r.StartUnix,
		Parallelism: f.Parallelism, Image: f.Image, Reproduce: &reproduceSettings{Name: r.Name, Catalog: r.Catalog,
			File: r.Incident.File, Incident: text, Operators: r.Operators, Flags: r.Flags, NoFaults: r.NoFaults}}
	set.Shards = farmShards(len(r.Incident.Combinations())*len(seeds)*len(r.Operators), f)
	return set, nil
}

// hypMerge takes a farm's lines into a hypRun: once every operator's run
// of an outcome arrived, it writes them in operator order, as the local
// run makes them, and records the outcome.
type hypMerge struct {
	h *hypRun
	// got are the lines of each outcome so far, by operator; an outcome
	// recorded keeps only their SHA-256 and error, to compare a retried
	// index's lines with.
	got   map[int][]*farmLine
	twice []error
}

func (m *hypMerge) take(l farmLine) (bool, error) {
	h, ops := m.h, m.h.r.Operators
	k, i := l.Pos/len(ops), l.Pos%len(ops)
	if l.Pos < 0 || k >= len(h.combos)*len(h.seeds) || (l.Figures == nil && l.Err == "") {
		return false, fmt.Errorf("a farm pod printed a result for position %d that is not this reproduction's (another image?)", l.Pos)
	}
	c, seed := h.task(k)
	if f := l.Figures; f != nil && (f.Seed != seed || f.Operator != ops[i]) {
		return false, fmt.Errorf("a farm pod printed seed %d, %s for position %d, which is %s seed %d, %s (another image?)", f.Seed, f.Operator, l.Pos, c.ID, seed, ops[i])
	}
	got := m.got[k]
	if got == nil {
		got = make([]*farmLine, len(ops))
		m.got[k] = got
	}
	if prev := got[i]; prev != nil {
		if prev.Sum != l.Sum || prev.Err != l.Err {
			m.twice = append(m.twice, fmt.Errorf("%s seed %d, %s ran twice (an index retried) and gave summary.json sha256 %q and %q, errors %q and %q: the run is not deterministic",
				c.ID, seed, ops[i], prev.Sum, l.Sum, prev.Err, l.Err))
		}
		return false, nil
	}
	got[i] = &l
	for _, g := range got {
		if g == nil {
			return false, nil
		}
	}
	o, err := m.outcome(k, got)
	if err != nil {
		return false, err
	}
	for j, g := range got {
		got[j] = &farmLine{Sum: g.Sum, Err: g.Err}
	}
	h.done(k, o)
	return false, nil
}

// outcome writes outcome k's runs from their lines and judges them.
func (m *hypMerge) outcome(k int, lines []*farmLine) (hypOutcome, error) {
	h := m.h
	c, seed := h.task(k)
	o := hypOutcome{runs: analysis.SeedRuns{Seed: seed}, ran: true}
	out := h.seedDir(c, seed)
	if err := os.RemoveAll(out); err != nil { // an attached farm's, written before
		return o, err
	}
	for i, op := range h.r.Operators {
		l := lines[i]
		if l.Err != "" {
			o.err = hypError(c, seed, op, errors.New(l.Err))
			break
		}
		plan, err := gunzip(l.Plan)
		if err != nil {
			return o, fmt.Errorf("%s seed %d, %s: plan.json: %w", c.ID, seed, op, err)
		}
		b, err := gunzip(l.Summary)
		var sum record.Summary
		if err == nil {
			err = json.Unmarshal(b, &sum)
		}
		if err != nil {
			return o, fmt.Errorf("%s seed %d, %s: summary.json: %w", c.ID, seed, op, err)
		}
		dir, err := record.CreateRunDir(out, h.r.StartUnix)
		if err != nil {
			return o, err
		}
		if err := errors.Join(os.WriteFile(filepath.Join(dir, record.PlanFile), plan, 0o644),
			os.WriteFile(filepath.Join(dir, record.SummaryFile), b, 0o644)); err != nil {
			return o, err
		}
		o.runs.Runs = append(o.runs.Runs, analysis.JudgeRun(c.Incident, *l.Figures, sum))
	}
	return o, nil
}
