package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestForcedCutoverAnatomy is the acceptance of the pause anatomy: a run
// with a forced 7 s cutover has, for every pause window, its steps in
// summary.json — the source path lost at the window's start, the target
// controller live, the target's ANA accessible at the window's end — and
// its report.md and report.html show the worst one's steps.
func TestForcedCutoverAnatomy(t *testing.T) {
	dir := runOnce(t, t.TempDir(), "--seed", "4", "--cutover-pause", "7")
	sum := readSummary(t, dir)
	windows := 0
	for _, m := range sum.Migrations {
		for h, hp := range m.Hosts {
			if len(hp.Anatomy) != len(hp.Windows) {
				t.Errorf("%s on %s: %d windows, %d anatomies", m.ID, h, len(hp.Windows), len(hp.Anatomy))
				continue
			}
			for i, a := range hp.Anatomy {
				windows++
				w := hp.Windows[i]
				if a.Window != w || a.EndedBy != "target" || len(a.Steps) != 3 {
					t.Errorf("%s on %s: anatomy %+v of window %v", m.ID, h, a, w)
					continue
				}
				lost, live, acc := a.Steps[0], a.Steps[1], a.Steps[2]
				if lost.Step != record.StepSourceLost || *lost.AtS != w[0] || *lost.AfterS >= w[0] {
					t.Errorf("%s on %s: %+v", m.ID, h, lost)
				}
				if live.Step != record.StepTargetLive || live.AtS == nil || *live.AtS > w[0] {
					t.Errorf("%s on %s: the target controller should be live before the cutover (connected while Validating): %+v", m.ID, h, live)
				}
				if acc.Step != record.StepTargetAccessible || *acc.AtS != w[1] || *acc.SinceStartS != record.RoundT(w[1]-w[0]) || *acc.SinceStartS < 5 {
					t.Errorf("%s on %s: %+v (window %v)", m.ID, h, acc, w)
				}
			}
		}
	}
	if windows == 0 {
		t.Fatal("a 7 s cutover left no pause window")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, s := range []string{"**Pause anatomy** of its longest window on ", "| 1. source path lost |", "| 2. target controller live |", "| 3. target ANA accessible |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(html), `<table id="anatomy">`) || !strings.Contains(string(html), "3. target ANA accessible") {
		t.Error("report.html has no anatomy table")
	}
}
