package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"testing"
)

// jsonLine is encoding/json's encoding of l, as TimelineWriter configures
// it (HTML escaping off), without the newline.
func jsonLine(t testing.TB, l Line) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// checkAppendLine: appendLine gives encoding/json's bytes, or declines
// (leaving its buffer as it was) exactly for the lines it documents.
func checkAppendLine(t testing.TB, l Line) {
	prefix := []byte("prefix")
	got, ok := appendLine(bytes.Clone(prefix), &l)
	nested := len(l.Controllers) > 0 || len(l.Subsystems) > 0 || len(l.Evidence) > 0 || len(l.Details) > 0
	if !ok {
		if !nested && finite(l.T) && finite(l.HeartbeatIntervalS) {
			t.Errorf("appendLine declined a flat line %+v", l)
		}
		if !bytes.Equal(got, prefix) {
			t.Errorf("appendLine declined but changed the buffer: %q", got)
		}
		return
	}
	if nested {
		t.Errorf("appendLine encoded a line with nested values %+v", l)
	}
	if want := jsonLine(t, l); !bytes.Equal(got[len(prefix):], want) {
		t.Errorf("appendLine\n got %s\nwant %s", got[len(prefix):], want)
	}
}

// TestAppendLineMatchesJSON holds the reflection-free encoder to
// encoding/json on every field, the float forms at the exponent
// boundaries, and every kind of string escape.
func TestAppendLineMatchesJSON(t *testing.T) {
	all := Line{T: 12.345678, Kind: KindFormat, Host: "h1", Hosts: []string{"a", "b"}, Version: 2, HeartbeatIntervalS: 0.1,
		Migration: "mig-0001", NQN: "nqn.x", Phase: PhaseFailed, Reason: "r", SourceEndpoints: []string{"10.0.0.1:4420"},
		TargetEndpoints: []string{"10.0.0.2:4420", "[::1]:4420"}, Fault: "f", Action: "inject", Target: "storage-1",
		Volume: "vol-1", Completed: Int64(1000), Errors: Int64(0), Queued: Int64(-3), Errno: 84, VerifyErrors: Int64(math.MaxInt64),
		Controller: "nvme3", Message: "m", Node: "n", RejectedConnects: Int64(math.MinInt64), NotAllowedConnects: Int64(7),
		Endpoints: []string{"e"}, Pod: "p", PodState: "killed", Repeat: true}
	lines := []Line{
		all,
		{T: 0, Kind: KindHeartbeat, Hosts: []string{"storage-1"}},
		{Kind: KindIO, Hosts: []string{}, Endpoints: []string{}, Volume: "v"},
		{T: math.Copysign(0, -1), Kind: "x", HeartbeatIntervalS: math.Copysign(0, -1)},
		{T: math.Inf(1), Kind: "x"},
		{T: 1, Kind: "x", HeartbeatIntervalS: math.NaN()},
		{T: 1, Kind: KindSample, Controllers: []Controller{{Name: "nvme0"}}},
		{T: 1, Kind: KindSample, Subsystems: []Subsystem{{NQN: "n"}}},
		{T: 1, Kind: KindFault, Evidence: map[string]string{"k": "v"}},
		{T: 1, Kind: KindPhase, Details: map[string]string{"k": "v"}},
		{T: 1, Kind: KindFault, Evidence: map[string]string{}, Details: map[string]string{}, Controllers: []Controller{}},
	}
	for _, f := range []float64{1e-6, 9.99999e-7, 1e-7, 1.5e-10, 1e-100, 5e-324, 1e20, 1e21, 123456789012345678901234.0,
		math.MaxFloat64, 0.1, 2188.259542, 1e6, -1e-7, -2.5, 100} {
		lines = append(lines, Line{T: f, Kind: "x", HeartbeatIntervalS: f})
	}
	for _, s := range []string{"", `"quoted" \back\slash`, "<html> & 'x'", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
		"bad utf8 \xff\xfe and \xc3", "line sep \u2028 para sep \u2029", "é ü 日本 🚀", "\xe2\x80", "nvme0n1: no usable path - requeuing I/O"} {
		lines = append(lines, Line{T: 1, Kind: KindKernel, Host: s, Message: s, Hosts: []string{s, s}, Reason: s, PodState: s})
	}
	for _, l := range lines {
		checkAppendLine(t, l)
	}
	// Every line of a real run's timeline.
	f, err := os.Open("testdata/timeline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		checkAppendLine(t, l)
		n++
	}
	if n == 0 {
		t.Fatal("testdata/timeline.jsonl has no line")
	}
}

// FuzzAppendLine: for any strings and numbers, appendLine gives
// encoding/json's bytes.
func FuzzAppendLine(f *testing.F) {
	f.Add(1.5, "kernel", "storage-1", "Reconnecting in 2 seconds...", int64(3), 84)
	f.Add(1e-7, "io", "\x00\"\\\u2028\xff", "<&>", int64(-1), 0)
	f.Fuzz(func(t *testing.T, tm float64, kind, host, msg string, n int64, errno int) {
		checkAppendLine(t, Line{T: tm, Kind: kind, Host: host, Hosts: []string{host, msg}, Message: msg, Completed: &n,
			Errno: errno, HeartbeatIntervalS: tm / 3, Endpoints: []string{msg}})
	})
}

// BenchmarkTimelineAppend appends the lines that make up most of a run's
// timeline (a kernel line and an io line) to a batched writer, flushed to
// io.Discard every 100 lines.
func BenchmarkTimelineAppend(b *testing.B) {
	tw := NewTimelineWriter(io.Discard, "bench")
	tw.SetBatched(true)
	kernel := Line{T: 2188.259542, Kind: KindKernel, Host: "storage-2", Controller: "nvme12", Message: "Failed reconnect attempt 720/1800"}
	ioLine := Line{T: 2188.3, Kind: KindIO, Host: "storage-1", NQN: "nqn.2023-02.io.simplyblock:5f3c0d2a:lvol:00020000-0000-4000-8000-000000000001",
		Volume: "vol-001", Completed: Int64(1000), Errors: Int64(0), Queued: Int64(0), Pod: "fio-vol-001-ns1", PodState: "running"}
	n := 0
	for b.Loop() {
		if err := tw.Append(kernel); err != nil {
			b.Fatal(err)
		}
		if err := tw.Append(ioLine); err != nil {
			b.Fatal(err)
		}
		if n++; n%50 == 0 {
			if err := tw.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
