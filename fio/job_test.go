package fio

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/google/go-cmp/cmp"
)

func migrationFile(documented bool) JobFile {
	return JobFile{
		Comment:    []string{"fiomig migration workload for volume vol-0"},
		Jobs:       []Job{MigrationWorkload("vol-0", "/mnt/fiomig/vol-0", "fio/vol-0", 10*time.Minute)},
		Documented: documented,
	}
}

func multiFile() JobFile {
	a := MigrationWorkload("vol-a", "/mnt/fio:mig/vol-a", "logs/vol-a", 90*time.Second)
	a.RateIOPS = 200
	a.Description = "first volume"
	b := Job{
		Name: "vol-b", Filename: "/mnt/fiomig/vol-b", IOEngine: "psync", RW: "write", BlockSize: 64 * KiB,
		Size: 1536, Runtime: 1500 * time.Millisecond, Thread: true, Verify: "crc32c", DoVerify: boolPtr(false),
		LogAlternateEpoch: true, LogAlternateEpochClockID: 1, WriteLatLog: "logs/vol-b", LogAvgMsec: 500,
		PerJobLogs: boolPtr(true), Extra: []Option{{Key: "randseed", Value: "42", Doc: "seed of the offset generator"}, {Key: "group_reporting"}},
	}
	return JobFile{Jobs: []Job{a, b}, Documented: true}
}

func TestJobFileGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		file JobFile
	}{
		{"migration.fio", migrationFile(true)},
		{"migration-plain.fio", migrationFile(false)},
		{"multi.fio", multiFile()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.file.Render(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
}

// The default workload is what issue 5 specifies; these are the spec's
// values, not the code's.
func TestMigrationWorkloadIsTheSpecifiedOne(t *testing.T) {
	j := MigrationWorkload("v", "/f", "p", time.Hour)
	if j.IOEngine != "libaio" || !j.Direct || j.RW != "randrw" || j.RWMixRead != 70 || j.BlockSize != 4096 ||
		j.IODepth != 1 || j.NumJobs != 1 || j.Size != 1<<30 || !j.TimeBased || j.Runtime != time.Hour {
		t.Errorf("workload shape differs from the spec: %+v", j)
	}
	if j.ContinueOnError != "all" || !j.ErrorDump {
		t.Errorf("continue_on_error=%q error_dump=%v, want all and on", j.ContinueOnError, j.ErrorDump)
	}
	for _, e := range []Errno{EREMOTEIO, ENOLINK, ENOTCONN, EIO, EILSEQ} {
		if !slices.Contains(j.IgnoreError.Read, e) || !slices.Contains(j.IgnoreError.Write, e) {
			t.Errorf("ignore_error read/write lists %v / %v lack %v", j.IgnoreError.Read, j.IgnoreError.Write, e)
		}
	}
	if j.Verify != "md5" && j.Verify != "crc32c" || j.VerifyBacklog <= 0 {
		t.Errorf("verify=%q verify_backlog=%d, want md5 or crc32c with a backlog", j.Verify, j.VerifyBacklog)
	}
	if j.WriteLatLog == "" || j.LogAvgMsec != 0 || !(j.LogUnixEpoch || j.LogAlternateEpoch) || !j.LogOffset {
		t.Errorf("want a per-I/O latency log with absolute times and offsets: %+v", j)
	}
	if got := Args("job.fio", "out.json"); !slices.Contains(got, "--output=out.json") || !slices.Contains(got, "--output-format=json+") {
		t.Errorf("Args = %v, want JSON+ to a file", got)
	}
	// Changing the returned job must not change the package's list.
	j.IgnoreError.Read[0] = 999
	if MigrationIgnoredErrnos[0] == 999 {
		t.Error("MigrationWorkload shares MigrationIgnoredErrnos' backing array")
	}
}

func TestSizeAndDurationRendering(t *testing.T) {
	for _, tc := range []struct {
		in   Size
		want string
	}{{4096, "4k"}, {GiB, "1g"}, {3 * MiB, "3m"}, {1536, "1536"}, {1 << 40, "1t"}, {0, "0"}, {1, "1"}, {5 * GiB / 2, "2560m"}} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Size(%d) = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{{time.Minute, "60s"}, {1500 * time.Millisecond, "1500ms"}, {1500 * time.Microsecond, "1500us"}} {
		if got := fioDuration(tc.in); got != tc.want {
			t.Errorf("fioDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (IgnoreErrors{Read: []Errno{5, 121}, Write: []Errno{28}}).String(); got != "5:121,28" {
		t.Errorf("IgnoreErrors = %q, want 5:121,28", got)
	}
}

func TestJobValidate(t *testing.T) {
	ok := Job{Name: "j", Filename: "/f"}
	for _, tc := range []struct {
		name   string
		mutate func(*Job)
		want   string // substring of the error; "" = valid
	}{
		{"minimal", func(*Job) {}, ""},
		{"no name", func(j *Job) { j.Name = "" }, "name must be non-empty"},
		{"global", func(j *Job) { j.Name = "Global" }, "not \"global\""},
		{"bracket", func(j *Job) { j.Name = "a]b" }, "brackets"},
		{"no file", func(j *Job) { j.Filename = "" }, "filename is required"},
		{"newline in value", func(j *Job) { j.Description = "a\nb" }, "newline"},
		{"newline in extra key", func(j *Job) { j.Extra = []Option{{Key: "a=b", Value: "1"}} }, "newline or '='"},
		{"time_based without runtime", func(j *Job) { j.TimeBased = true }, "needs a runtime"},
		{"rwmixread", func(j *Job) { j.RWMixRead = 101 }, "outside 0..100"},
		{"negative", func(j *Job) { j.IODepth = -1 }, "negative"},
		{"verify_only time_based", func(j *Job) { j.VerifyOnly, j.Verify, j.TimeBased, j.Runtime = true, "md5", true, time.Second }, "verify_only does not support time_based"},
		{"backlog without verify", func(j *Job) { j.VerifyBacklog = 8 }, "need verify="},
		{"ignore without continue", func(j *Job) { j.IgnoreError.Read = []Errno{EIO} }, "without continue_on_error"},
		{"two epochs", func(j *Job) { j.LogUnixEpoch, j.LogAlternateEpoch = true, true }, "exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := ok
			tc.mutate(&j)
			err := j.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if tc.want != "" {
				if s := (JobFile{Jobs: []Job{j}}).String(); s != "" {
					t.Errorf("String() of an invalid job file = %q, want \"\"", s)
				}
			}
		})
	}
	if err := (JobFile{Jobs: []Job{ok, ok}}).Validate(); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate job names: %v", err)
	}
	if err := (JobFile{}).Validate(); err == nil {
		t.Error("empty job file validated")
	}
}

// Real fio must accept every rendered job file as is: --parse-only fails on
// an unknown option or a bad value (exit 1, "Bad option").
func TestRenderedJobFilesParseWithRealFio(t *testing.T) {
	tooltest.Command(t, "fio")
	dir := t.TempDir()
	for name, jf := range map[string]JobFile{"migration.fio": migrationFile(true), "multi.fio": multiFile()} {
		p := writeJobFile(t, dir, name, jf)
		stderr, err := runFio(t, dir, "--parse-only", p)
		if err != nil || len(bytes.TrimSpace(stderr)) > 0 {
			t.Errorf("fio --parse-only %s: %v, stderr %q", name, err, stderr)
		}
	}
	// And fio does reject what it does not know, so the check above can fail.
	bad := filepath.Join(dir, "bad.fio")
	if err := os.WriteFile(bad, []byte("[x]\nfilename=/tmp/x\nverify_backlogg=3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runFio(t, dir, "--parse-only", bad); err == nil {
		t.Error("fio --parse-only accepted an unknown option")
	}
	// --parse-only does not run ignore_error's parser; a real run does and
	// rejects symbolic names fio 3.33 does not know, which is why
	// IgnoreErrors renders numbers.
	sym := filepath.Join(dir, "sym.fio")
	if err := os.WriteFile(sym, []byte("[x]\nfilename="+filepath.Join(dir, "x")+"\nsize=4k\ncontinue_on_error=all\nignore_error=EREMOTEIO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runFio(t, dir, "--output="+filepath.Join(dir, "sym.out"), sym); err == nil {
		t.Log("this fio accepts ignore_error=EREMOTEIO (newer than 3.33?); numbers still work")
	}
}

func TestLatLogName(t *testing.T) {
	if diff := cmp.Diff("run/vol-0_lat.1.log", LatLogName("run/vol-0", 1)); diff != "" {
		t.Error(diff)
	}
}

// fio caps each data direction apart (rate_iops=reads,writes; a single
// value caps both): a total of 100 at rwmixread=70 must reach fio as 70,30,
// never as a bare 100 (100 reads + 100 writes per second).
func TestRateIOPSRendersTheReadWriteSplit(t *testing.T) {
	line := func(j Job) string {
		var b bytes.Buffer
		if err := (JobFile{Jobs: []Job{j}}).Render(&b); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, "rate_iops=") {
				return l
			}
		}
		return ""
	}
	mig := MigrationWorkload("v", "/f", "p", time.Hour)
	mig.RateIOPS = 100
	half := Job{Name: "h", Filename: "/f", RW: "rw", RateIOPS: 9}
	write := Job{Name: "w", Filename: "/f", RW: "randwrite", RateIOPS: 100}
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{mig, "rate_iops=70,30"},
		{half, "rate_iops=5,4"}, // fio's default rwmixread 50; reads rounded
		{write, "rate_iops=100"},
	} {
		if got := line(tc.job); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.job.Name, got, tc.want)
		}
	}
	tiny := mig
	tiny.RateIOPS = 1 // 1,0: fio would leave writes uncapped
	if err := tiny.Validate(); err == nil || !strings.Contains(err.Error(), "uncapped") {
		t.Errorf("rate_iops 1 at 70/30: Validate() = %v, want an error naming the uncapped direction", err)
	}
}
