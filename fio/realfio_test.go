package fio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/google/go-cmp/cmp"
)

// These tests run real fio (skipped with a reason when it is missing,
// failing under FIOMIG_REQUIRE_TOOLS=1) on small temp files and parse what
// it wrote in this very run. They check the parsers against fio's own
// numbers: the per-I/O log and the JSON result are two independent outputs
// of one run and must agree exactly.

// realMigrationRun runs the default migration workload, shrunk to a 16 MiB
// file and 1 s, and returns its run directory and job.
func realMigrationRun(t *testing.T) (dir string, job Job) {
	t.Helper()
	tooltest.Command(t, "fio")
	dir = t.TempDir()
	job = MigrationWorkload("vol-0", filepath.Join(dir, "vol:0.img"), filepath.Join(dir, "vol-0"), time.Second)
	job.Size = 16 * MiB
	jf := writeJobFile(t, dir, "job.fio", JobFile{Jobs: []Job{job}})
	stderr, err := runFio(t, dir, Args(jf, filepath.Join(dir, "out.json"))...)
	if err != nil {
		t.Fatalf("fio: %v\nstderr: %s", err, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "stderr.txt"), stderr, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, job
}

func TestRealFioJSONAndLogAgree(t *testing.T) {
	dir, job := realMigrationRun(t)
	res, err := ParseResultFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.FioVersion, "fio-3.") || res.Documents != 1 || len(res.Jobs) != 1 {
		t.Fatalf("version %q, %d documents, %d jobs; want fio-3.x, 1, 1", res.FioVersion, res.Documents, len(res.Jobs))
	}
	jr, ok := res.Job("vol-0")
	if !ok {
		t.Fatalf("no job vol-0 in %+v", res.Jobs)
	}
	if jr.Error != 0 || jr.TotalErr != 0 {
		t.Errorf("error %v, total_err %d; want a clean run", jr.Error, jr.TotalErr)
	}
	if got := res.JobFile(jr); got != job.Filename {
		t.Errorf("JobFile = %q, want %q (':' unescaped)", got, job.Filename)
	}
	for _, d := range []struct {
		name string
		r    DirResult
	}{{"read", jr.Read}, {"write", jr.Write}} {
		if d.r.TotalIOs == 0 {
			t.Fatalf("%s: no I/O", d.name)
		}
		if d.r.Clat.N != d.r.TotalIOs || d.r.Clat.BinsTotal() != d.r.Clat.N || d.r.Lat.N != d.r.TotalIOs {
			t.Errorf("%s: total_ios %d, clat N %d, json+ bins hold %d, lat N %d; want all equal", d.name, d.r.TotalIOs, d.r.Clat.N, d.r.Clat.BinsTotal(), d.r.Lat.N)
		}
		if len(d.r.Clat.Percentiles) == 0 || !slices.IsSortedFunc(d.r.Clat.Percentiles, func(a, b Percentile) int { return int(a.Ns - b.Ns) }) {
			t.Errorf("%s: clat percentiles missing or not monotonic: %v", d.name, d.r.Clat.Percentiles)
		}
		if p99, ok := d.r.Clat.Percentile(99); !ok || p99 < d.r.Clat.MinNs || p99 > d.r.Clat.MaxNs {
			t.Errorf("%s: p99 %d (ok %v) outside [min %d, max %d]", d.name, p99, ok, d.r.Clat.MinNs, d.r.Clat.MaxNs)
		}
	}

	// The per-I/O total-latency log: one line per completed I/O, value =
	// the same total latency the JSON's lat_ns summarises.
	f, err := os.Open(filepath.Join(dir, LatLogName("vol-0", 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := NewLogReader(f, f.Name())
	var n [3]int64
	minV := [3]int64{1 << 62, 1 << 62, 1 << 62}
	var maxV [3]int64
	var minT, maxT int64 = 1 << 62, 0
	for lr.Scan() {
		e := lr.Entry()
		n[e.Dir]++
		minV[e.Dir], maxV[e.Dir] = min(minV[e.Dir], e.Value), max(maxV[e.Dir], e.Value)
		minT, maxT = min(minT, e.TimeMs), max(maxT, e.TimeMs)
		if e.BlockSize != 4096 || e.Offset < 0 || e.Offset%4096 != 0 || e.Offset >= int64(job.Size) {
			t.Fatalf("line %d: %+v: want 4 KiB I/O at an aligned offset inside the 16 MiB region", lr.Line(), e)
		}
	}
	if err := lr.Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		dir Direction
		r   DirResult
	}{{Read, jr.Read}, {Write, jr.Write}} {
		if n[d.dir] != d.r.TotalIOs || minV[d.dir] != d.r.Lat.MinNs || maxV[d.dir] != d.r.Lat.MaxNs {
			t.Errorf("%v: log has %d I/Os, latency [%d, %d] ns; JSON has %d, lat_ns [%d, %d]", d.dir, n[d.dir], minV[d.dir], maxV[d.dir], d.r.TotalIOs, d.r.Lat.MinNs, d.r.Lat.MaxNs)
		}
	}
	// log_unix_epoch: completion times are absolute and precede the moment
	// fio wrote its result, within the job's elapsed time (50 ms slack: fio
	// stamps log times as its start epoch plus its own elapsed clock, which
	// can drift from the gettimeofday of timestamp_ms in a VM).
	if maxT > res.TimestampMs+50 || minT < res.TimestampMs-(jr.ElapsedS+2)*1000 {
		t.Errorf("log times [%d, %d] ms not within the job's run ending at %d ms (elapsed %d s)", minT, maxT, res.TimestampMs, jr.ElapsedS)
	}

	// The gap analysis sees every line.
	ga, err := AnalyzeLogFile(f.Name(), GapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var perSecond int64
	for _, c := range ga.PerSecond {
		perSecond += int64(c)
	}
	if ga.Completions != n[0]+n[1]+n[2] || perSecond != ga.Completions || ga.ByDir != n || ga.FirstMs != minT || ga.LastMs != maxT {
		t.Errorf("analysis: %d completions (%d per second, by dir %v), [%d, %d]; log: %v, [%d, %d]", ga.Completions, perSecond, ga.ByDir, ga.FirstMs, ga.LastMs, n, minT, maxT)
	}
	if ga.LongestGap.Seconds() > float64(maxT-minT)/1000 {
		t.Errorf("longest gap %v longer than the log", ga.LongestGap)
	}

	rep, err := ParseStderrFile(filepath.Join(dir, "stderr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ja := AnalyzeJob("vol-0", job.Filename, jr, ga, rep)
	if ja.IOErrors != 0 || ja.DataIntegrityFailure() || ja.Unreported != 0 {
		t.Errorf("clean run analysed as %+v (stderr other lines %q)", ja, rep.Other)
	}
}

// A truncated copy of a real result is reported as truncated at every cut,
// and a cut inside the second of two documents still returns the first.
func TestRealFioJSONTruncated(t *testing.T) {
	dir, _ := realMigrationRun(t)
	full, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 1, len(full) / 3, len(full) / 2, len(full) - 3} {
		res, err := ParseResult(bytes.NewReader(full[:cut]), "out.json")
		var te *TruncatedError
		if !errors.Is(err, ErrTruncated) || !errors.As(err, &te) || res != nil {
			t.Errorf("cut at %d of %d: res %v, err %v; want nil and a TruncatedError", cut, len(full), res != nil, err)
			continue
		}
		if te.Name != "out.json" || (cut > 0 && te.Line < 1) {
			t.Errorf("cut at %d: %+v does not name file and line", cut, te)
		}
	}
	two := append(append(append([]byte{}, full...), full...), full[:len(full)/2]...)
	res, err := ParseResult(bytes.NewReader(two), "status.json")
	if !errors.Is(err, ErrTruncated) || res == nil || res.Documents != 2 {
		t.Errorf("2.5 documents: res %+v, err %v; want the 2nd document and ErrTruncated", res, err)
	}
}

// SIGSTOP freezes fio (thread=1: jobs are threads of the one process) for a
// known time while it does I/O; the log's longest completion gap must cover
// that freeze.
func TestRealFioStallShowsAsGap(t *testing.T) {
	fio := tooltest.Command(t, "fio")
	dir := t.TempDir()
	job := Job{
		Name: "stall", Filename: filepath.Join(dir, "stall.img"), IOEngine: "psync", RW: "randrw", BlockSize: 4 * KiB,
		Size: 4 * MiB, TimeBased: true, Runtime: 5 * time.Second, RateIOPS: 1000, Thread: true,
		WriteLatLog: filepath.Join(dir, "stall"), LogUnixEpoch: true, LogOffset: true,
	}
	// The file exists at full size, so fio does not lay it out: the reads
	// counted in /proc/PID/io are the job's.
	if err := os.WriteFile(job.Filename, make([]byte, job.Size), 0o644); err != nil {
		t.Fatal(err)
	}
	jf := writeJobFile(t, dir, "stall.fio", JobFile{Jobs: []Job{job}})
	cmd := exec.Command(fio, append([]string{"--status-interval=1"}, Args(jf, filepath.Join(dir, "out.json"))...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // no-op once it exited
	// Freeze only once fio has read 1 MiB (≈ 0.5 s of the job's reads at
	// 1000 IOPS, 50 % reads; its start-up reads are ~60 KiB): the freeze
	// must fall inside the I/O phase even on a loaded machine.
	deadline := time.Now().Add(30 * time.Second)
	for rchar(t, cmd.Process.Pid) < 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("fio read less than 1 MiB in 30 s; stderr: %s", stderr.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopAt := time.Now().UnixMilli()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2200 * time.Millisecond)
	contAt := time.Now().UnixMilli()
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fio: %v\n%s", err, stderr.Bytes())
	}
	ga, err := AnalyzeLogFile(filepath.Join(dir, LatLogName("stall", 1)), GapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := ga.LongestGap
	frozen := contAt - stopAt
	t.Logf("froze fio for %d ms [%d, %d]; longest gap %+v = %.3f s; zero seconds %d; %d completions", frozen, stopAt, contAt, g, g.Seconds(), ga.ZeroSeconds, ga.Completions)
	// The completion before the gap came before SIGSTOP and the one after it
	// after SIGCONT. Slack: log times are truncated to ms, and fio stamps
	// them as its start epoch plus its own elapsed clock (clocksource, TSC
	// by default on x86), which drifts from CLOCK_REALTIME by a few ms.
	const slackMs = 20
	if g.StartMs > stopAt+slackMs || g.EndMs < contAt-slackMs || g.EndMs-g.StartMs < frozen-slackMs {
		t.Errorf("longest gap %+v (%.3f s) does not cover the %d ms freeze [%d, %d]", g, g.Seconds(), frozen, stopAt, contAt)
	}
	if ga.ZeroSeconds < 1 {
		t.Errorf("a %d ms freeze holds a whole second, but ZeroSeconds = %d", frozen, ga.ZeroSeconds)
	}
	if !slices.Contains(ga.Gaps, g) {
		t.Errorf("Gaps %v lacks the longest gap %v", ga.Gaps, g)
	}
	// --status-interval wrote several JSON documents; the last is the final
	// result.
	res, err := ParseResultFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents < 2 {
		t.Errorf("%d JSON documents with --status-interval=1 over 5 s, want several", res.Documents)
	}
	if jr, ok := res.Job("stall"); !ok || jr.Read.TotalIOs+jr.Write.TotalIOs != ga.Completions {
		t.Errorf("final document: %+v; want the final totals (%d completions in the log)", jr, ga.Completions)
	}
}

// A block corrupted between fio's write and its verify is reported from
// fio's verify report, with its offset — and classified as a data-integrity
// failure, not a generic error.
func TestRealFioVerifyFailureWithOffset(t *testing.T) {
	tooltest.Command(t, "fio")
	dir := t.TempDir()
	file := filepath.Join(dir, "verify.img")
	write := Job{Name: "verify", Filename: file, IOEngine: "psync", RW: "write", BlockSize: 4 * KiB, Size: 256 * KiB,
		Verify: "md5", DoVerify: boolPtr(false), VerifyStateSave: boolPtr(false)}
	wf := writeJobFile(t, dir, "write.fio", JobFile{Jobs: []Job{write}})
	if stderr, err := runFio(t, dir, Args(wf, filepath.Join(dir, "write.json"))...); err != nil {
		t.Fatalf("write phase: %v\n%s", err, stderr)
	}
	// Corrupt data inside block 12 and the header of block 20.
	fh, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(bytes.Repeat([]byte{'X'}, 32), 12*4096+100); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("YYYYYYYY"), 20*4096); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	verify := write
	verify.VerifyOnly, verify.DoVerify, verify.ContinueOnError = true, nil, "all"
	vf := writeJobFile(t, dir, "verify.fio", JobFile{Jobs: []Job{verify}})
	stderr, err := runFio(t, dir, Args(vf, filepath.Join(dir, "verify.json"))...)
	if err != nil {
		t.Fatalf("verify phase: %v\n%s", err, stderr)
	}
	rep, err := ParseStderr(bytes.NewReader(stderr), "verify.stderr")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseResultFile(filepath.Join(dir, "verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	jr, _ := res.Job("verify")
	ja := AnalyzeJob("verify", file, jr, GapAnalysis{}, rep)
	type found struct {
		Kind   string
		Offset int64
		Length int64
		CRCs   bool
	}
	var got []found
	for _, v := range ja.VerifyFailures {
		got = append(got, found{v.Kind, v.Offset, v.Length, v.ExpectedCRC != "" && v.ReceivedCRC != "" && v.ExpectedCRC != v.ReceivedCRC})
	}
	want := []found{{"md5", 12 * 4096, 4096, true}, {"verify", 20 * 4096, 4096, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verify failures (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
	if len(ja.VerifyFailures) == 2 && !strings.Contains(ja.VerifyFailures[1].Reason, "bad magic header") {
		t.Errorf("header failure reason %q, want fio's bad magic header", ja.VerifyFailures[1].Reason)
	}
	if !ja.DataIntegrityFailure() || ja.ErrorsByClass[ClassIntegrity] != 2 || ja.IOErrors != 0 {
		t.Errorf("analysis %+v: want 2 data-integrity failures and no I/O errors", ja)
	}
	if ja.ExitError != EILSEQ || ja.TotalErr != 2 || ja.Unreported != 0 {
		t.Errorf("fio JSON: error %v, total_err %d, unreported %d; want EILSEQ, 2, 0", ja.ExitError, ja.TotalErr, ja.Unreported)
	}
}

// Writes to /dev/full fail with ENOSPC: a real errno for the classifier.
// With error_dump=1 every error has a line; without it fio hides the
// ignored ones and they show as Unreported.
func TestRealFioIOErrorsClassified(t *testing.T) {
	tooltest.Command(t, "fio")
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("skipping: no /dev/full: %v", err)
	}
	dir := t.TempDir()
	for _, dump := range []bool{true, false} {
		job := Job{Name: "full", Filename: "/dev/full", IOEngine: "psync", RW: "write", BlockSize: 4 * KiB, Size: 64 * KiB,
			ContinueOnError: "all", IgnoreError: IgnoreErrors{Write: []Errno{ENOSPC}}, ErrorDump: dump}
		jf := writeJobFile(t, dir, "full.fio", JobFile{Jobs: []Job{job}})
		stderr, err := runFio(t, dir, Args(jf, filepath.Join(dir, "full.json"))...)
		if err != nil {
			t.Fatalf("fio: %v\n%s", err, stderr)
		}
		rep, err := ParseStderr(bytes.NewReader(stderr), "full.stderr")
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseResultFile(filepath.Join(dir, "full.json"))
		if err != nil {
			t.Fatal(err)
		}
		jr, _ := res.Job("full")
		ja := AnalyzeJob("full", "/dev/full", jr, GapAnalysis{}, rep)
		if jr.TotalErr != 16 || jr.FirstError != ENOSPC {
			t.Fatalf("error_dump=%v: fio counted total_err %d, first %v; want 16 ENOSPC (64 KiB / 4 KiB)", dump, jr.TotalErr, jr.FirstError)
		}
		if dump {
			want := []ErrnoCount{{Errno: ENOSPC, Name: "ENOSPC", Class: ClassCapacity, Count: 16}}
			if diff := cmp.Diff(want, ja.Errors); diff != "" || ja.Unreported != 0 || ja.DataIntegrityFailure() {
				t.Errorf("error_dump=1 (-want +got):\n%s\nunreported %d", diff, ja.Unreported)
			}
			if len(rep.IOErrors) != 1 || rep.IOErrors[0].Dir != "write" || rep.IOErrors[0].FirstOffset != 0 || rep.IOErrors[0].Message != "No space left on device" {
				t.Errorf("io errors %+v", rep.IOErrors)
			}
		} else if ja.IOErrors != 0 || ja.Unreported != 16 {
			t.Errorf("error_dump=0: %d errors printed, %d unreported; want 0 and 16", ja.IOErrors, ja.Unreported)
		}
	}
}

// rchar is the bytes process pid read (/proc/PID/io "rchar").
func rchar(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatalf("cannot watch fio's I/O: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/io: %q: %v", pid, line, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/io has no rchar: %q", pid, b)
	return 0
}
