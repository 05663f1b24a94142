package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

func TestReproduceUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"reproduce"}, exitUsage, "name the incident"},
		{[]string{"reproduce", "fio-mig-1"}, exitUsage, "unknown incident"},
		{[]string{"reproduce", scenario.IncidentID, "extra"}, exitUsage, "unexpected argument"},
		{[]string{"reproduce", scenario.IncidentID, "--operator", "nightly"}, exitUsage, "--operator"},
		{[]string{"reproduce", "--reconnect-reset", "sometimes", scenario.IncidentID}, exitUsage, "--reconnect-reset"},
		{[]string{"reproduce", scenario.IncidentID, "--kernel-dnr", "maybe"}, exitUsage, "--kernel-dnr"},
		{[]string{"reproduce", scenario.IncidentID, "--seed", "x"}, exitUsage, "invalid value"},
		{[]string{"reproduce", "--help"}, exitPass, "Usage: fiomig reproduce " + scenario.IncidentID},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, stderr.String())
		}
		if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: output does not mention %q:\n%s%s", tc.args, tc.want, stdout.String(), stderr.String())
		}
	}
}

// TestReproduceFixed runs the whole incident with the fixed operator (flags
// after and before the incident name): exit 0 when it shows its expected
// shape — no leaked controller, no leak-caused failure — with a normal run
// directory plus reproduce.md, and the side-by-side table on stdout.
func TestReproduceFixed(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"reproduce", "--seed", "2", scenario.IncidentID, "--operator", "fixed", "--out", out}, &stdout, &stderr)
	if code != exitPass {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	s := stdout.String()
	for _, want := range []string{
		"migrations failed on path validation", "controllers at the end / expected", "leaked controllers",
		"CONNECT rejections/min at the end", "pods killed", "longest pause", "expected shape: yes",
		"--operator=fixed --seed=2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("stdout lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`leaked controllers\s+0 \(`).MatchString(s) {
		t.Errorf("fixed leaked controllers is not 0:\n%s", s)
	}
	dir := runDirOf(t, out)
	for _, f := range []string{record.PlanFile, record.TimelineFile, record.SummaryFile, "report.md", scenario.ReproduceReportFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Faults) == 0 || plan.Params.Extra["operator"] != "fixed" || plan.Params.SettleS != 9000 ||
		plan.Params.SettleSampleIntervalS != 10 || plan.Params.Migrations != 23 {
		t.Errorf("plan.json: faults %+v, params %+v; want the incident's schedule and parameters", plan.Faults, plan.Params)
	}
}
