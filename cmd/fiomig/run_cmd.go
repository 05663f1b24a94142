package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fiomig/fiomig/ci"
	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

func init() {
	register(command{name: "run", summary: "run migrations on the embedded simulator and write a report", run: runCmd})
}

// help holds each verb's usage text (help/<verb>.txt), printed above its
// flags.
//
//go:embed help/*.txt
var help embed.FS

// helpText is help/<verb>.txt without its last newline.
func helpText(verb string) string {
	b, err := help.ReadFile("help/" + verb + ".txt")
	if err != nil {
		panic(err) // embedded at build time
	}
	return strings.TrimSuffix(string(b), "\n")
}

// newRunFlagSet binds fiomig run's flags to s (harness.RegisterFlags).
func newRunFlagSet(s *harness.Spec, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	harness.RegisterFlags(fs, s)
	fs.String("artifacts", "", "also write the CI outputs (docs/ci.md) into this `directory` (default $ARTIFACTS; $GITHUB_STEP_SUMMARY gets the step summary)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), helpText("run"))
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), harness.KubeFaultHelp())
	}
	return fs
}

// bindRun parses fiomig run's flags (and sweep's: extra registers them)
// into a spec with the environment's defaults, and checks it; code and
// stop as parseFlags.
func bindRun(name string, args []string, stdout, stderr io.Writer, extra func(*flag.FlagSet)) (s harness.Spec, fs *flag.FlagSet, code int, stop bool) {
	fs = newRunFlagSet(&s, stderr)
	fs.Init(name, flag.ContinueOnError)
	if extra != nil {
		extra(fs)
	}
	if code, stop = parseFlags(fs, args, stdout, stderr); stop {
		return s, fs, code, stop
	}
	given := harness.Given(fs)
	err := harness.EnvDefaults(fs, os.Getenv)
	if err == nil && given["faults"] && given["fault-file"] {
		err = usagef("give --faults or --fault-file, not both (the file's schedule replaces --faults)")
	}
	if err == nil && s.Backend == harness.BackendKube && !given["sample-interval"] {
		// Every sample is one pod-proxy GET per host: 0.5 s unless asked.
		s.Params.SampleIntervalS = harness.KubeSampleIntervalS
		if !given["settle-sample-interval"] {
			s.Params.SettleSampleIntervalS = 0
		}
	}
	if err == nil && s.Params.Workload == record.WorkloadFio && !given["settle"] {
		// fio runs on the wall clock: its own settle (scenario.FioSettleS),
		// which Command then names.
		s.Params.SettleS = scenario.FioSettleS
	}
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return s, fs, exitUsage, true
	}
	return s, fs, 0, false
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	// SIGINT and SIGTERM are caught from the first instant: the run then
	// stops in order (fio stopped, volumes unmounted) and exits 130 with
	// its run directory (interruptContext).
	ctx, stop := interruptContext(stderr, "fiomig run")
	defer stop()
	s, fs, code, done := bindRun("fiomig run", args, stdout, stderr, nil)
	if done {
		return code
	}
	for _, w := range s.Warnings() {
		fmt.Fprintf(stderr, "fiomig run: warning: %s\n", w)
	}
	m := s.Params.Model // every parameter is in plan.json; the command names those not the defaults
	fmt.Fprintf(stdout, "fiomig run: seed %d, %d migrations of %d volumes on %d hosts (%s backend); every parameter in plan.json\n  reproduce with: %s\n",
		s.Seed, s.Params.Migrations, m.Volumes, m.Hosts, s.Backend, s.Command())
	res, err := harness.Run(ctx, s, harness.Options{Progress: stdout, Warn: stderr})
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "fiomig run: %v\n", err)
		if res.Dir != "" {
			fmt.Fprintf(stderr, "fiomig run: what was recorded is in %s\n", res.Dir)
		}
		if res.Interrupted {
			return exitInterrupted
		}
		return exitUsage
	case res.Interrupted && res.Dir == "":
		fmt.Fprintln(stderr, "fiomig run: interrupted before the run started; nothing was recorded")
		return exitInterrupted
	case res.Interrupted:
		hint := "summary.json says interrupted; fiomig report " + res.Dir + " writes a report of it"
		if res.Summary.Coverage == nil { // nothing was sampled: fio was still starting
			hint = "interrupted before the first sample: nothing to report"
		}
		fmt.Fprintf(stderr, "fiomig run: interrupted; the timeline recorded so far is in %s (%s)\n",
			filepath.Join(res.Dir, record.TimelineFile), hint)
		if res.Summary.Coverage != nil {
			publishCI(fs, res.Dir, stderr) // finished.json says ABORTED
		}
		return exitInterrupted
	}
	return harness.Worse(printVerdicts(stdout, res.Dir, res.Summary), publishCI(fs, res.Dir, stderr))
}

// publishCI writes the CI outputs of dir when --artifacts, $ARTIFACTS or
// $GITHUB_STEP_SUMMARY asks (docs/ci.md); exit 2 when it could not.
func publishCI(fs *flag.FlagSet, dir string, stderr io.Writer) int {
	if err := ci.PublishEnv(dir, fs.Lookup("artifacts").Value.String(), os.Getenv); err != nil {
		return fail(stderr, fs.Name()[len("fiomig "):]+": CI outputs", usagef("%v", err))
	}
	return exitPass
}

// printVerdicts prints each check's verdict and the report path, and maps
// the overall verdict to the exit code.
func printVerdicts(w io.Writer, dir string, sum record.Summary) int {
	fmt.Fprintln(w, "checks:")
	for _, c := range sum.Checks {
		fmt.Fprintf(w, "  %-22s %-12s %s\n", c.Name, c.Verdict, c.Detail)
	}
	fmt.Fprintf(w, "verdict: %s\nreport:  %s\n", sum.Verdict, filepath.Join(dir, "report.md"))
	return harness.ExitCode(sum.Verdict)
}

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM, and says on stderr that the command is stopping; later signals
// are absorbed while it cleans up (every cleanup deadline is bounded; a
// kill -9 leaves what "fiomig janitor" removes). stop restores the default
// signal handling.
func interruptContext(stderr io.Writer, name string) (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-done: // stop() cancelled it: no signal
			default:
				fmt.Fprintf(stderr, "%s: interrupted: stopping in order (a real workload's fio stopped and its volumes unmounted) and keeping the record so far\n", name)
			}
		case <-done:
		}
	}()
	return ctx, func() { close(done); stop() }
}
