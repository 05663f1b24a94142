package fio

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testdata/json/small-write.json is fio 3.33's json+ output of
// `fio --name=small --filename=/tmp/fx/small.img --rw=write --bs=4k
// --size=32k --ioengine=psync --output-format=json+`; the other files are
// derived from it (cut after 1500 bytes, inside line 65; a comma removed on
// line 9; a number quoted on line 71; preamble.json prepends the note fio
// versions before 3.33 printed into the output file), or are what fio prints
// in the output file when it fails before running (parse-failure.json).
func TestParseResultFixture(t *testing.T) {
	res, err := ParseResultFile(filepath.Join("testdata", "json", "small-write.json"))
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Version              string
		TimestampMs          int64
		Jobs                 int
		Name                 string
		Error                Errno
		ElapsedS, RuntimeMs  int64
		Options              map[string]string
		WriteBytes, WriteIOs int64
		WriteIOPS            float64
		ReadIOs              int64
		Clat, Lat, Slat      Latency
		ReadClat             Latency
	}
	j := res.Jobs[0]
	got := summary{res.FioVersion, res.TimestampMs, len(res.Jobs), j.Name, j.Error, j.ElapsedS, j.JobRuntimeMs, j.Options,
		j.Write.IOBytes, j.Write.TotalIOs, j.Write.IOPS, j.Read.TotalIOs, j.Write.Clat, j.Write.Lat, j.Write.Slat, j.Read.Clat}
	want := summary{
		Version: "fio-3.33", TimestampMs: 1795978696518, Jobs: 1, Name: "small", ElapsedS: 1,
		Options:    map[string]string{"name": "small", "filename": "/tmp/fx/small.img", "rw": "write", "bs": "4k", "size": "32k", "ioengine": "psync"},
		WriteBytes: 32768, WriteIOs: 8, WriteIOPS: 8000,
		Clat: Latency{MinNs: 1160, MaxNs: 21979, MeanNs: 4172.25, StddevNs: 7219.868712, N: 8,
			Percentiles: []Percentile{{1, 1160}, {5, 1160}, {10, 1160}, {20, 1208}, {30, 1400}, {40, 1400}, {50, 1400}, {60, 1480},
				{70, 1720}, {80, 3024}, {90, 21888}, {95, 21888}, {99, 21888}, {99.5, 21888}, {99.9, 21888}, {99.95, 21888}, {99.99, 21888}},
			Bins: []Bin{{1160, 1}, {1208, 1}, {1400, 2}, {1480, 1}, {1720, 1}, {3024, 1}, {21888, 1}}},
		Lat: Latency{MinNs: 1185, MaxNs: 22755, MeanNs: 4299.25, StddevNs: 7482.920758, N: 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("small-write.json (-want +got):\n%s", diff)
	}
	if res.Documents != 1 || len(res.Preamble) != 0 {
		t.Errorf("documents %d, preamble %q", res.Documents, res.Preamble)
	}
	if p, ok := j.Write.Clat.Percentile(99.9); !ok || p != 21888 {
		t.Errorf("Percentile(99.9) = %d, %v", p, ok)
	}
	if _, ok := j.Write.Clat.Percentile(42); ok {
		t.Error("Percentile(42) found")
	}
}

func TestParseResultPreamble(t *testing.T) {
	res, err := ParseResultFile(filepath.Join("testdata", "json", "preamble.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1"}
	if diff := cmp.Diff(want, res.Preamble); diff != "" || len(res.Jobs) != 1 || res.Jobs[0].Write.TotalIOs != 8 {
		t.Errorf("preamble (-want +got):\n%s\njobs %+v", diff, res.Jobs)
	}
}

func TestParseResultErrors(t *testing.T) {
	for _, tc := range []struct {
		file      string
		truncated bool
		line      int
		contains  string
	}{
		{"empty.json", true, 1, "empty, no JSON document"},
		{"small-write-truncated.json", true, 65, "JSON document 1 ends after 1500 bytes"},
		{"malformed.json", false, 10, "malformed fio JSON"},
		{"wrongtype.json", false, 71, "total_ios"},
		{"parse-failure.json", false, 1, `only text (fio failed before running?): "Unknown error EREMOTEIO`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join("testdata", "json", tc.file)
			res, err := ParseResultFile(p)
			if err == nil {
				t.Fatalf("parsed %+v, want an error", res)
			}
			if errors.Is(err, ErrTruncated) != tc.truncated {
				t.Errorf("errors.Is(%v, ErrTruncated) = %v, want %v", err, !tc.truncated, tc.truncated)
			}
			var line int
			var pe *ParseError
			var te *TruncatedError
			switch {
			case errors.As(err, &pe):
				line = pe.Line
			case errors.As(err, &te):
				line = te.Line
			default:
				t.Fatalf("error %T %v is neither ParseError nor TruncatedError", err, err)
			}
			if line != tc.line || !strings.Contains(err.Error(), tc.contains) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q at line %d; want line %d, mentioning %q and the file", err, line, tc.line, tc.contains)
			}
		})
	}
}
