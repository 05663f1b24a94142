package reports

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// FioView is the fio section of report.md and report.html (runs with
// --workload=fio): both measurements of every migration's stall side by
// side, fio's stalls outside every migration, and what each volume's fio
// saw. Strings are formatted already.
type FioView struct {
	AgreementVerdict, AgreementClass string
	IntegrityVerdict, IntegrityClass string
	ErrorsVerdict, ErrorsClass       string
	Note                             string
	// VolumesNote explains the per-volume table: what Zero seconds counts,
	// what fio's exit status means, and that result.json holds fio's raw
	// output with a text preamble the parser skips.
	VolumesNote    string
	Rows           []FioRow
	Unattributed   []FioGapRow
	Volumes        []FioVolumeRow
	VerifyFailures []string
}

// FioRow is one migration and volume: the ANA pause and fio's gap.
type FioRow struct {
	Migration, Volume, Host string
	Pause, Gap, GapWindow   string
	Diff                    string
	// PauseOver/GapOver: over CUTOVER_PAUSE_CRIT_S. Disagree: the pair
	// fails the agreement check; WithinNoise: off by more than the
	// tolerance but within tolerance + noise floor, so the check calls it
	// inconclusive (both from checks.FioPairs).
	PauseOver, GapOver, Disagree, WithinNoise bool
	// NotJudged: why the pair is left out of the agreement check ("" when
	// judged; checks.FioPair.Why).
	NotJudged string
}

// FioGapRow is one fio stall outside every migration.
type FioGapRow struct{ Volume, Window, Length string }

// FioVolumeRow is one volume's fio.
type FioVolumeRow struct {
	Volume, Host, Completions, LongestGap string
	ZeroSeconds                           int
	Errors, Verify, Exit, Problems        string
}

// FioSection builds the fio section from sum.Fio; nil when the run had no
// real fio workload.
func FioSection(plan record.Plan, sum record.Summary) *FioView {
	fs := sum.Fio
	if fs == nil {
		return nil
	}
	verdicts := checksByName(sum)
	crit := plan.Params.PauseCritS
	v := &FioView{
		Note: fmt.Sprintf("Two independent measurements of each migration's stall: the longest pause window from the hosts' ANA samples (every %s) and the longest gap between completions in fio's own per-I/O log (real fio on the volume's FUSE file, which follows that host's multipath head). They agree when they differ by at most max(2 × sample interval, 0.25 s) = %s; fio gaps under %s are not listed (shown as 0).",
			secs(plan.Params.SampleIntervalS), secs(fs.ToleranceS), secs(fs.MinGapS)),
	}
	rate := ""
	if n := fioRate(plan); n > 0 {
		rate = fmt.Sprintf(" (at %d I/Os per second, every second outside a pause should hold completions)", n)
	}
	v.VolumesNote = fmt.Sprintf("Zero seconds: whole seconds of the run (first to last sample) in which fio logged no completion%s. fio exit: %d when fio stopped on a signal — fiomig stops every fio with SIGINT at the end of the run, so 128 is the expected status; -1 when fio had to be killed. fio's result.json is kept as fio wrote it, which after that SIGINT starts with the line \"fio: terminating on signal 2\" before the JSON; the parser skips that preamble.",
		rate, fioExitSignalled)
	v.AgreementVerdict = verdictOf(verdicts, checks.CheckFioPauseAgreement)
	v.IntegrityVerdict = verdictOf(verdicts, checks.CheckFioDataIntegrity)
	v.ErrorsVerdict = verdictOf(verdicts, checks.CheckFioIOErrors)
	v.AgreementClass, v.IntegrityClass, v.ErrorsClass = verdictClass(v.AgreementVerdict), verdictClass(v.IntegrityVerdict), verdictClass(v.ErrorsVerdict)
	for _, c := range checks.FioPairs(*fs) {
		r := FioRow{Migration: c.Migration, Volume: c.Volume, Host: c.Host, Pause: secs(c.PauseS), Gap: secs(c.FioGapS),
			GapWindow: "—", Diff: signedSecs(c.DiffS), PauseOver: c.PauseS > crit, GapOver: c.FioGapS > crit,
			Disagree: c.Class == checks.FioPairDisagree, WithinNoise: c.Class == checks.FioPairWithinNoise}
		if c.FioGap != nil {
			r.GapWindow = windows([][2]float64{{c.FioGap.StartS, c.FioGap.EndS}})
			if c.FioGap.Open {
				r.GapWindow += " (open)"
			}
		}
		if c.Why != "" {
			r.Diff, r.NotJudged = "—", c.Why
		}
		v.Rows = append(v.Rows, r)
	}
	for _, g := range fs.Unattributed {
		v.Unattributed = append(v.Unattributed, FioGapRow{Volume: g.Volume, Window: windows([][2]float64{{g.StartS, g.EndS}}), Length: secs(g.LengthS)})
	}
	for _, vol := range fs.Volumes {
		row := FioVolumeRow{Volume: vol.Volume, Host: vol.Host, Completions: fmt.Sprint(vol.Completions),
			LongestGap: secs(vol.LongestGap.LengthS), ZeroSeconds: vol.ZeroSeconds, Errors: "none", Verify: "none",
			Exit: fioExit(vol.ExitCode), Problems: strings.Join(vol.Problems, "; ")}
		if vol.LongestGap.LengthS > 0 {
			row.LongestGap += " at " + windows([][2]float64{{vol.LongestGap.StartS, vol.LongestGap.EndS}})
		}
		var errs []string
		for _, e := range vol.Errors {
			name := e.Name
			if name == "" {
				name = fmt.Sprintf("errno %d", e.Errno)
			}
			errs = append(errs, fmt.Sprintf("%d × %s (%s)", e.Count, name, e.Class))
		}
		if vol.DrainErrors > 0 {
			errs = append(errs, fmt.Sprintf("of which %d ENOTCONN from draining fio after the run", vol.DrainErrors))
		}
		if len(errs) > 0 {
			row.Errors = strings.Join(errs, ", ")
		}
		if n := len(vol.VerifyFailures); n > 0 {
			row.Verify = fmt.Sprintf("%d corrupted block(s)", n)
		}
		for _, f := range vol.VerifyFailures {
			s := fmt.Sprintf("%s: data integrity failure — %s verify failed at offset %d (0x%x), %d bytes", vol.Volume, f.Kind, f.Offset, f.Offset, f.Length)
			if f.Reason != "" {
				s += ": " + f.Reason
			}
			v.VerifyFailures = append(v.VerifyFailures, s)
		}
		v.Volumes = append(v.Volumes, row)
	}
	return v
}

// FioMarkdown renders the fio section of report.md ("" without sum.Fio).
func FioMarkdown(plan record.Plan, sum record.Summary) []byte {
	v := FioSection(plan, sum)
	if v == nil {
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n## fio beside the ANA samples — %s\n\n%s\n\n", v.AgreementVerdict, v.Note)
	if len(v.Rows) == 0 {
		b.WriteString("No migration of a volume that fio ran on.\n")
	} else {
		b.WriteString("| Migration | Volume | Host | ANA pause | fio longest gap | fio gap at | fio − ANA | Agree |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range v.Rows {
			agree := "yes"
			switch {
			case r.NotJudged != "":
				agree = "not judged: " + r.NotJudged
			case r.Disagree:
				agree = "**no**"
			case r.WithinNoise:
				agree = "inconclusive: within tolerance + noise floor"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(r.Migration), cell(r.Volume), cell(r.Host),
				boldIf(r.Pause, r.PauseOver), boldIf(r.Gap, r.GapOver), cell(r.GapWindow), r.Diff, agree)
		}
	}
	b.WriteString("\n### fio stalls outside every migration (reported, not judged)\n\n")
	if len(v.Unattributed) == 0 {
		b.WriteString("None at or above the tolerance.\n")
	} else {
		b.WriteString("| Volume | Gap | Length |\n|---|---|---|\n")
		for _, g := range v.Unattributed {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(g.Volume), g.Window, g.Length)
		}
	}
	fmt.Fprintf(&b, "\n### fio per volume — I/O errors %s, data integrity %s\n\n%s\n\n", v.ErrorsVerdict, v.IntegrityVerdict, v.VolumesNote)
	b.WriteString("| Volume | Host | Completions | Longest gap | Zero seconds | I/O errors | Verify | fio exit | Problems |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range v.Volumes {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", cell(r.Volume), cell(r.Host), r.Completions,
			cell(r.LongestGap), r.ZeroSeconds, cell(r.Errors), cell(r.Verify), r.Exit, cell(r.Problems))
	}
	if len(v.VerifyFailures) > 0 {
		b.WriteString("\nData integrity failures (from fio's verify report):\n\n")
		for _, s := range v.VerifyFailures {
			b.WriteString("- " + s + "\n")
		}
	}
	b.WriteString("\nfio's job file, JSON+ result, stderr and per-I/O log of each volume are in `fio/<volume>/`.\n")
	return b.Bytes()
}

// fioExitSignalled is fio's exit status after it terminated on SIGINT or
// SIGTERM in order (fio backend.c sig_int: "terminating on signal",
// exit_value 128; workload.ExitSignalled).
const fioExitSignalled = 128

// fioExit renders fio's exit status with its reason: 128 is fiomig's own
// SIGINT at the end of the run, -1 a fio that had to be killed.
func fioExit(code int) string {
	switch code {
	case fioExitSignalled:
		return fmt.Sprintf("%d (stopped by fiomig, SIGINT)", code)
	case -1:
		return "-1 (killed, no exit status)"
	}
	return fmt.Sprint(code)
}

// fioRate is the run's fio rate cap in I/Os per second, reads and writes
// together (plan.params.fio_rate_iops; 0 when absent).
func fioRate(plan record.Plan) int { return plan.Params.FioRateIOPS }

func boldIf(s string, bold bool) string {
	if bold {
		return "**" + s + "**"
	}
	return s
}

func signedSecs(s float64) string {
	if s > 0 {
		return "+" + secs(s)
	}
	return secs(s)
}
