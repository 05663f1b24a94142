package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBatchedWriterWritesOnlyCompletedTicks: a batched timeline holds, at
// any moment, exactly the ticks flushed so far — what a killed run keeps.
func TestBatchedWriterWritesOnlyCompletedTicks(t *testing.T) {
	path := filepath.Join(t.TempDir(), TimelineFile)
	tw, err := CreateTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	tw.SetBatched(true)
	tick := func(ts float64) {
		for _, h := range []string{"a", "b"} {
			if err := tw.Append(Line{T: ts, Kind: KindSample, Host: h}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tick(0.1)
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	tick(0.2) // not flushed: the run "dies" here
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "\n"); got != 2 || strings.Contains(string(b), `"t":0.2`) {
		t.Errorf("after one flushed tick the file holds:\n%s\nwant exactly tick 0.1's two lines", b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadTimeline(path)
	if err != nil || len(lines) != 4 {
		t.Errorf("after Close: %d lines, %v; want all 4", len(lines), err)
	}
}

// TestExpanderRebuildsPerTickStates: version-2 heartbeats become the named
// hosts' last states at the heartbeat's time; version-1 lines pass as they are.
func TestExpanderRebuildsPerTickStates(t *testing.T) {
	a1 := []Controller{{Name: "nvme0", NQN: "n", Address: "10.0.0.1:4420", State: "live", Legs: []Leg{{NSID: 1, ANA: "optimized"}}}}
	b1 := []Controller{{Name: "nvme0", NQN: "n", Address: "10.0.0.2:4420", State: "connecting", Legs: []Leg{}}}
	in := []Line{
		{T: 0, Kind: KindFormat, Version: FormatChangeOnly, HeartbeatIntervalS: 0.1},
		{T: 0.1, Kind: KindSample, Host: "a", Controllers: a1},
		{T: 0.1, Kind: KindSample, Host: "b", Controllers: b1},
		{T: 0.2, Kind: KindPhase, Migration: "m", NQN: "n", Phase: PhasePending},
		{T: 0.2, Kind: KindHeartbeat, Hosts: []string{"a", "b"}},
		{T: 0.3, Kind: KindSample, Host: "b", Controllers: a1},
		{T: 0.3, Kind: KindHeartbeat, Hosts: []string{"a"}},
	}
	got, err := Expand(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{
		in[0], in[1], in[2], in[3],
		{T: 0.2, Kind: KindSample, Host: "a", Controllers: a1, Repeat: true},
		{T: 0.2, Kind: KindSample, Host: "b", Controllers: b1, Repeat: true},
		in[5],
		{T: 0.3, Kind: KindSample, Host: "a", Controllers: a1, Repeat: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Expand (-want +got):\n%s", d)
	}
	v1 := []Line{{T: 1, Kind: KindSample, Host: "a", Controllers: a1}, {T: 1.5, Kind: KindHeartbeat, Host: "a"}}
	if got, err := Expand(v1); err != nil || !cmp.Equal(got, v1) {
		t.Errorf("version 1 through Expand: %v, %v; want it unchanged", got, err)
	}
	if _, err := Expand([]Line{{T: 1, Kind: KindHeartbeat, Hosts: []string{"ghost"}}}); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("heartbeat before any sample of its host: err %v, want one naming the host", err)
	}
}

// TestScanStatesRejectsAMalformedFormatLine: a format line needs its version.
func TestScanStatesRejectsAMalformedFormatLine(t *testing.T) {
	err := ScanStates(strings.NewReader(`{"t":0,"kind":"format"}`+"\n"), "tl", func(Line) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `tl:1: format line has no "version"`) {
		t.Errorf("err %v", err)
	}
}
