package reports

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// writeLatLog writes a fio per-I/O latency log (6 columns: time ms since
// the Unix epoch, latency ns, direction, block size, offset, priority):
// from epoch+10 s to epoch+30 s, 10 I/Os a second at 1 ms, except none from
// 14.2 s to 16.6 s (the fio gap of swimlaneFixture) and one 2.3 s I/O
// completing at 16.6 s; then a truncated last line (fio killed mid-write).
func writeLatLog(t *testing.T, epochMs int64) string {
	t.Helper()
	var b bytes.Buffer
	for ms := int64(10000); ms < 30000; ms += 100 {
		if ms >= 14200 && ms < 16600 {
			continue
		}
		lat := int64(1_000_000)
		if ms == 16600 {
			lat = 2_300_000_000
		}
		fmt.Fprintf(&b, "%d, %d, %d, 4096, %d, 0\n", epochMs+ms, lat, ms%2, ms*4096)
	}
	b.WriteString("17965")
	path := filepath.Join(t.TempDir(), "lat_lat.1.log")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadFioSeconds: completions and p99 latency per run second, seconds
// without a completion NaN, the truncated last line dropped.
func TestReadFioSeconds(t *testing.T) {
	const epoch = 1_796_000_000_000
	fs, err := ReadFioSeconds(writeLatLog(t, epoch), epoch, record.FioWorkloadVolume{Volume: "vol1", NQN: "nqn.2023-02.io.simplyblock:vol1", Host: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	if fs.FirstS != 10 || len(fs.IOPS) != 20 {
		t.Fatalf("first second %d, %d seconds; want 10, 20", fs.FirstS, len(fs.IOPS))
	}
	// Second 14 holds 14.0 and 14.1; 15 none; 16 from 16.6 on: 4.
	if got := fmt.Sprint(fs.IOPS[3:8]); got != "[10 2 0 4 10]" {
		t.Errorf("IOPS of seconds 13-17 = %s, want [10 2 0 4 10]", got)
	}
	if !math.IsNaN(fs.P99Ms[5]) || fs.P99Ms[3] != 1 {
		t.Errorf("p99 of seconds 13 and 15 = %v, %v; want 1 ms and NaN", fs.P99Ms[3], fs.P99Ms[5])
	}
	// Second 16: latencies 2300, 1, 1, 1 ms; type 7 p99: rank 0.99·3 = 2.97 → 1 + 0.97·(2300 − 1).
	if want := 1 + 0.97*2299; math.Abs(fs.P99Ms[6]-want) > 1e-9 {
		t.Errorf("p99 of second 16 = %v ms, want %v", fs.P99Ms[6], want)
	}
	if _, err := ReadFioSeconds(filepath.Join(t.TempDir(), "gone.log"), epoch, record.FioWorkloadVolume{}); err == nil {
		t.Error("a missing log gave no error")
	}
}

// TestWriteFioFigure: with fio's per-second figures, Write draws
// plots/fio-<migration>.png beside the swimlane, and report.html embeds it.
func TestWriteFioFigure(t *testing.T) {
	const epoch = 1_796_000_000_000
	plan, sum, tl := swimlaneFixture()
	fs, err := ReadFioSeconds(writeLatLog(t, epoch), epoch, record.FioWorkloadVolume{Volume: "vol1", NQN: "nqn.2023-02.io.simplyblock:vol1", Host: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteRun(dir, Input{Plan: plan, Summary: sum, Timeline: tl, FioSeconds: []FioSeconds{fs}}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, PlotsDir, "fio-m1.png")); err != nil || st.Size() < 1000 {
		t.Fatalf("plots/fio-m1.png: %v", err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, HTMLReportFile))
	if !bytes.Contains(page, []byte(`data-plot="fio-m1"`)) {
		t.Error("report.html does not embed the fio plot")
	}
}
