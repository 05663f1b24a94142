package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/history"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{
		name:    "compare",
		summary: "compare two runs or sweeps (a PR's against the nightly baseline): markdown, exit 1 on a regression",
		run:     runCompare,
	})
}

func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := reports.DefaultCompareOptions
	pause := fs.Float64("pause-threshold", def.PauseThresholdS, "regression when the 95 % interval of the p95 pause difference (new − base) lies wholly above this many `seconds`")
	leaks := fs.Float64("leak-threshold", def.LeakThreshold, "regression when leaked controllers per run grow by more than this (mean over runs)")
	churn := fs.Float64("churn-threshold", def.ChurnThreshold, "regression when controllers created per run grow by more than this (mean over runs); negative: reported only")
	resamples := fs.Int("resamples", def.Resamples, "bootstrap resamples (>= 100)")
	seed := fs.Uint64("bootstrap-seed", def.Seed, "seed of the bootstrap's resampling")
	hist := fs.String("history", "", "compare <new> with the last --last runs of this history `store` (fiomig history --db) instead of a base directory")
	last := fs.Int("last", 10, "with --history: the base is this many `runs` of the history before <new>")
	pos, code, ok := parseSubcommand("compare", helpText("compare"), fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if *hist != "" {
		pos = append([]string{"--history=" + *hist + " --last=" + fmt.Sprint(*last)}, pos...)
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "fiomig compare: want a base (or --history) and a new directory, got %d argument(s) (see fiomig compare --help)\n", len(pos))
		return exitUsage
	}
	switch {
	case math.IsNaN(*pause) || *pause < 0:
		fmt.Fprintf(stderr, "fiomig compare: --pause-threshold must be >= 0 seconds, got %v\n", *pause)
		return exitUsage
	case math.IsNaN(*leaks) || *leaks < 0:
		fmt.Fprintf(stderr, "fiomig compare: --leak-threshold must be >= 0, got %v\n", *leaks)
		return exitUsage
	case *resamples < 100:
		fmt.Fprintf(stderr, "fiomig compare: --resamples must be >= 100, got %d\n", *resamples)
		return exitUsage
	}
	base, err := reports.LoadRunSet(pos[0])
	if *hist != "" {
		base, err = history.CompareBase(context.Background(), *hist, *last, history.Filter{}, pos[1])
	}
	if err != nil {
		fmt.Fprintf(stderr, "fiomig compare: base: %v\n", err)
		return exitUsage
	}
	nw, err := reports.LoadRunSet(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "fiomig compare: new: %v\n", err)
		return exitUsage
	}
	opts := reports.CompareOptions{PauseThresholdS: *pause, LeakThreshold: *leaks, ChurnThreshold: *churn, Resamples: *resamples, Seed: *seed}
	c := reports.Compare(base, nw, opts)
	rerun := strings.Join([]string{"fiomig compare", pos[0], pos[1],
		"--pause-threshold", record.FormatT(*pause), "--leak-threshold", record.FormatT(*leaks),
		"--churn-threshold", record.FormatT(*churn), "--resamples", fmt.Sprint(*resamples), "--bootstrap-seed", fmt.Sprint(*seed)}, " ")
	if _, err := stdout.Write(reports.CompareMarkdown(c, rerun)); err != nil {
		fmt.Fprintf(stderr, "fiomig compare: %v\n", err)
		return exitUsage
	}
	return harness.ExitCode(c.Verdict()) // 1 a regression, 3 the new side judged less
}
