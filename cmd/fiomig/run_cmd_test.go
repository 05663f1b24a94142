package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/scenario"
)

func runDirOf(t *testing.T, out string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(out, "fio-mig-*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("want one run directory under %s, got %v (%v)", out, dirs, err)
	}
	return dirs[0]
}

func TestRunLongCutoverExitsOneAndNamesThePauses(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"run", "--out", out, "--migrations", "3", "--settle", "35", "--cutover-pause", "7", "--faults", "none"}, &stdout, &stderr)
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitCheckFailed, stdout.String(), stderr.String())
	}
	// One line of shape and the rerun command naming what differs from the
	// defaults, not a dump of every flag (issue 27 item 9).
	if first := "fiomig run: seed 1, 3 migrations of 10 volumes on 3 hosts (sim backend); every parameter in plan.json\n" +
		"  reproduce with: fiomig run --cutover-pause=7 --faults=none --migrations=3 --settle=35\n"; !strings.HasPrefix(stdout.String(), first) {
		t.Errorf("the run does not start with its shape and rerun command:\n%s", stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(runDirOf(t, out), "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Every migration is named over the bound, with a host and measured seconds.
	for _, id := range []string{"mig-0001", "mig-0002", "mig-0003"} {
		re := regexp.MustCompile(id + `[^\n]*worker-\d[^\n]*\b[5-9](\.\d+)? s`) // "7 s" is a whole 7 s
		if !re.Match(md) {
			t.Errorf("report.md does not name %s with a host and its pause in seconds over the bound:\n%s", id, md)
		}
	}
}

func TestRunUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--migrations", "-1"},
		{"run", "--sample-interval", "0"},
		{"run", "--consumers-per-volume", "4"},
		{"run", "--cutover-pause", "abc"},
		{"run", "stray"},
		{"run", "--pause-crit", "Inf"},
		{"run", "--settle", "NaN"},
		{"run", "--settle", "1e300"},
		{"run", "--gap", "Inf"},
		{"run", "--attribution-margin", "-1"},
		{"run", "--sample-interval", "1e-7"},
		{"run", "--settle-sample-interval", "NaN"},
		{"run", "--settle", "86400", "--sample-interval", "0.01", "--settle-sample-interval", "0"},
		{"run", "--migrations", "100000000"},
		{"run", "--migrations", "100000"},                            // ~15M samples per host
		{"run", "--migrations", "100", "--sample-interval", "0.001"}, // ~1.5M samples per host
		{"run", "--out", "run_cmd_test.go"},
		{"run", "--faults", "node-crash,target-reboot"},
		{"run", "--control-plane", "sbcli2"},
		{"run", "--swap-readd-fail", "1.5"},
		{"run", "--swap-readd-fail", "NaN"},
		{"run", "--fault-file", "no-such-file.yaml"},
		{"run", "--workload", "fio", "--namespaces-per-volume", "2"},
		{"nosuchcommand"},
	} {
		if args[0] == "run" && !slices.Contains(args, "--out") {
			// A case that stops being a usage error runs a whole job: keep
			// its run directory out of the source tree.
			args = append(args, "--out", t.TempDir())
		}
		var stdout, stderr bytes.Buffer
		if code := dispatch(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if stderr.Len() == 0 {
			t.Errorf("%v: no message on stderr", args)
		}
	}
}

func TestRunHelpTeaches(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"run", "--help"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"--pause-crit", "CUTOVER_PAUSE_CRIT_S", "Exit codes", "pause-bound", "--seed"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run --help does not mention %q on stdout", want)
		}
	}
}

func TestPauseCritFromEnvironmentFlagWins(t *testing.T) {
	var f harness.Spec
	fs := newRunFlagSet(&f, &bytes.Buffer{})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CUTOVER_PAUSE_CRIT_S": "4.5", "CUTOVER_FREEZES_ALLOWED": "2"}
	if err := harness.EnvDefaults(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if f.Params.PauseCritS != 4.5 || f.Params.FreezesAllowed != 2 {
		t.Errorf("from environment: pause-crit %v freezes %v, want 4.5 and 2", f.Params.PauseCritS, f.Params.FreezesAllowed)
	}

	fs = newRunFlagSet(&f, &bytes.Buffer{})
	if err := fs.Parse([]string{"--pause-crit", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := harness.EnvDefaults(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if f.Params.PauseCritS != 3 {
		t.Errorf("flag --pause-crit 3 with CUTOVER_PAUSE_CRIT_S=4.5: got %v, want the flag's 3", f.Params.PauseCritS)
	}

	fs = newRunFlagSet(&f, &bytes.Buffer{})
	_ = fs.Parse(nil)
	if err := harness.EnvDefaults(fs, func(k string) string { return map[string]string{"CUTOVER_PAUSE_CRIT_S": "five"}[k] }); err == nil || !strings.Contains(err.Error(), "CUTOVER_PAUSE_CRIT_S") {
		t.Errorf("bad CUTOVER_PAUSE_CRIT_S: error %v, want one naming the variable", err)
	}
}

// The control plane's optional switches teach their source and say they
// are off by default for want of a source that they happened.
func TestRunSwitchesHelpCitesSources(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"run", "--help"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("--help exit %d", code)
	}
	help := strings.Join(strings.Fields(stdout.String()), " ")
	for flag, cite := range map[string]string{
		"-listener-race":   "migration_controller.py create_migration :1180 → :1197 → :1204",
		"-swap-readd-fail": "tasks_runner_batch_migration.py :509",
		"-nsid-divergence": "lvol_controller.py:1264-1276",
	} {
		i := strings.Index(help, flag)
		if i < 0 {
			t.Errorf("--help has no %s", flag)
			continue
		}
		text := help[i:min(len(help), i+600)]
		for _, want := range []string{cite, "off by default: no source says this happened in the incident"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s help lacks %q:\n%s", flag, want, text)
			}
		}
	}
}

// --nsid-divergence reaches the simulator: on a batch-migrated volume the
// kernel refuses the diverged namespaces (timeline kernel lines, and the
// plan records the switch); without it, no refusal.
func TestRunNSIDDivergenceReachesTheKernel(t *testing.T) {
	for _, on := range []bool{false, true} {
		out := t.TempDir()
		args := []string{"run", "--out", out, "--migrations", "2", "--volumes", "1", "--namespaces-per-volume", "3",
			"--consumers-per-volume", "3", "--settle", "35", "--faults", "none"}
		if on {
			args = append(args, "--nsid-divergence")
		}
		var stdout, stderr bytes.Buffer
		code := dispatch(args, &stdout, &stderr)
		if code == exitUsage {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
		dir := runDirOf(t, out)
		tl, err := os.ReadFile(filepath.Join(dir, "timeline.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := os.ReadFile(filepath.Join(dir, "plan.json"))
		if err != nil {
			t.Fatal(err)
		}
		refused := bytes.Count(tl, []byte("IDs don't match for shared namespace"))
		if on != (refused > 0) {
			t.Errorf("--nsid-divergence=%v: %d kernel refusals in the timeline", on, refused)
		}
		if want := fmt.Sprintf(`"nsid_divergence": %v`, on); !bytes.Contains(plan, []byte(want)) {
			t.Errorf("plan.json lacks %s", want)
		}
	}
}

// --workload=fio builds its world through the same scenario.SimConfig as
// --workload=sim, from the spec the flags bind, so every model switch
// given to `fiomig run` reaches the simulator; namespaced volumes, which
// fio would measure on their first namespace only, are a usage error
// naming the flag.
func TestRunFioHonoursModelSwitches(t *testing.T) {
	var f harness.Spec
	fs := newRunFlagSet(&f, io.Discard)
	if err := fs.Parse([]string{"--workload", "fio", "--lvol-monitor=false", "--csi-restore", "ip", "--listener-race",
		"--swap-readd-fail", "0.25", "--nsid-divergence", "--control-plane", "fixed-cancel", "--release-sources"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	got := scenario.SimConfig(7, f.Params)
	if got.LvolMonitor || got.CSIRestore != "ip" || !got.ListenerRace || got.SwapReaddFail != 0.25 || !got.NSIDDivergence ||
		got.ControlPlane != "fixed-cancel" || !got.ReleaseSources || got.NamespacesPerVolume != 1 || got.Seed != 7 {
		t.Errorf("simulator config from the run flags: %+v", got)
	}
	// The defaults reach it too: lvol monitor on, CSI restore ip-port.
	var d harness.Spec
	if err := newRunFlagSet(&d, io.Discard).Parse([]string{"--workload", "fio"}); err != nil {
		t.Fatal(err)
	}
	if got := scenario.SimConfig(1, d.Params); !got.LvolMonitor || got.CSIRestore != "ip-port" {
		t.Errorf("default run flags: lvol monitor %v, CSI restore %q; want true, ip-port", got.LvolMonitor, got.CSIRestore)
	}

	var stdout, stderr bytes.Buffer
	args := []string{"run", "--workload", "fio", "--namespaces-per-volume", "4", "--out", t.TempDir()}
	if code := dispatch(args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--namespaces-per-volume 4 with --workload=fio") {
		t.Errorf("%v: exit %d, stderr %q; want exit %d naming --namespaces-per-volume", args, code, stderr.String(), exitUsage)
	}
}

// TestRunFioSettleDefault (issue 24 item 5): --workload=fio settles
// scenario.FioSettleS (90 s) by default, on the wall clock, instead of the
// main job's 400 s (a 3-migration fio run took 8 min); the reproduce
// command names it; a given --settle wins; the simulator keeps 400 s.
func TestRunFioSettleDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want float64
	}{
		{[]string{"--workload", "fio"}, scenario.FioSettleS},
		{[]string{"--workload", "fio", "--settle", "400"}, 400},
		{nil, 400},
	} {
		s, _, code, stop := bindRun("fiomig run", tc.args, io.Discard, io.Discard, nil)
		if stop {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		named := strings.Contains(s.Command(), fmt.Sprintf("--settle=%g", tc.want))
		if s.Params.SettleS != tc.want || named != (tc.want != 400) {
			t.Errorf("%v: settle %v, reproduce command %q; want %v, named unless the default", tc.args, s.Params.SettleS, s.Command(), tc.want)
		}
	}
}

// TestMistypedFlagSaysDidYouMean (issue 27 item 9): a mistyped flag of any
// verb is one line on stderr naming the nearest flag, and nothing on
// stdout before it; a name near none gets no guess.
func TestMistypedFlagSaysDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--migratons", "5"}, "fiomig run: flag provided but not defined: -migratons; did you mean --migrations? (see fiomig run --help)\n"},
		{[]string{"sweep", "--seds", "1-3"}, "fiomig sweep: flag provided but not defined: -seds; did you mean --seeds? (see fiomig sweep --help)\n"},
		{[]string{"report", "x", "--pause-cirt", "3"}, "fiomig report: flag provided but not defined: -pause-cirt; did you mean --pause-crit? (see fiomig report --help)\n"},
		{[]string{"inspect", "--nqm", "x"}, "fiomig inspect: flag provided but not defined: -nqm; did you mean --nqn? (see fiomig inspect --help)\n"},
		{[]string{"run", "--zzzzzz", "1"}, "fiomig run: flag provided but not defined: -zzzzzz (see fiomig run --help)\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(c.args, &stdout, &stderr); code != exitUsage || stderr.String() != c.want || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2, %q and nothing", c.args, code, stderr.String(), stdout.String(), c.want)
		}
	}
}

// The seed harness's thresholds are checked before any work, by the rules
// the record's reader applies to plan.json: a value it refuses (a fraction
// outside [0, 1], a negative or NaN duration, a negative count) is a usage
// error naming the flag, and no run directory is left behind. Before, a
// NaN failed only when plan.json was written (an empty run directory was
// left), and --min-completed 2 ran and recorded a run that fiomig report
// then refused to read.
func TestRunThresholdErrorsBeforeAnyRecord(t *testing.T) {
	for _, c := range []struct{ flag, value string }{
		{"--min-completed", "2"},
		{"--min-completed", "-0.5"},
		{"--min-completed", "NaN"},
		{"--max-timed-out", "-1"},
		{"--max-timed-out", "NaN"},
		{"--migration-timeout", "NaN"},
		{"--migration-timeout", "-1"},
		{"--outage", "-1"},
		{"--outage", "Inf"},
		{"--verify-lag", "NaN"},
		{"--max-net-controllers", "-1"},
		{"--max-reconnects", "-5"},
		{"--max-ctrl-loss-tmo", "-1"},
		{"--max-paths", "-1"},
		{"--max-not-allowed", "-1"},
	} {
		out := t.TempDir()
		args := []string{"run", "--out", out, "--migrations", "1", "--faults", "none", "--settle", "35", c.flag, c.value}
		var stdout, stderr bytes.Buffer
		if code := dispatch(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%s %s: exit %d, want %d\nstderr: %s", c.flag, c.value, code, exitUsage, stderr.String())
		}
		if msg := stderr.String(); !strings.Contains(msg, c.flag+" must be") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
			t.Errorf("%s %s: want one line naming the flag, got %q", c.flag, c.value, msg)
		}
		if dirs, _ := filepath.Glob(filepath.Join(out, "fio-mig-*")); len(dirs) != 0 {
			t.Errorf("%s %s: a usage error left run directories %v", c.flag, c.value, dirs)
		}
	}
}
