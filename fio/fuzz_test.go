package fio

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// gapsByBruteForce is the reference for Completions: sort, then look at
// neighbours.
func gapsByBruteForce(times []int64) (longest Gap, zero int) {
	s := slices.Clone(times)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i]-s[i-1] > longest.EndMs-longest.StartMs {
			longest = Gap{StartMs: s[i-1], EndMs: s[i]}
		}
	}
	if len(s) > 0 {
		for sec := (s[0] + 999) / 1000; sec*1000+999 <= s[len(s)-1]; sec++ {
			lo, _ := slices.BinarySearch(s, sec*1000)
			if lo == len(s) || s[lo] > sec*1000+999 {
				zero++
			}
		}
	}
	return longest, zero
}

func checkAgainstBruteForce(t *testing.T, times []int64) {
	t.Helper()
	got := analyze(t, GapOptions{}, times...)
	longest, zero := gapsByBruteForce(times)
	if got.LongestGap != longest || got.ZeroSeconds != zero || got.Completions != int64(len(times)) {
		t.Fatalf("times %v: got longest %v zero %d n %d; brute force %v zero %d", times, got.LongestGap, got.ZeroSeconds, got.Completions, longest, zero)
	}
}

func TestCompletionsMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := r.IntN(200)
		span := 1 + r.Int64N(100_000)
		times := make([]int64, n)
		for i := range times {
			times[i] = 1_700_000_000_000 + r.Int64N(span)
		}
		checkAgainstBruteForce(t, times)
	}
}

func FuzzCompletions(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		var times []int64
		for i := 0; i+1 < len(data); i += 2 {
			times = append(times, int64(data[i])<<8|int64(data[i+1]))
		}
		checkAgainstBruteForce(t, times)
	})
}

// seedFiles seeds f with the fixtures under testdata/dir, cut to 2 KiB:
// the fuzzer minimises every new input, which takes minutes on 10 KiB JSON.
func seedFiles(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b[:min(len(b), 2048)])
		}
	}
}

// FuzzLogReader: any input gives entries in range or an error, never a
// panic; what it reads from a well-formed 6-column rendering reads back
// identically.
func FuzzLogReader(f *testing.F) {
	seedFiles(f, "logs")
	f.Fuzz(func(t *testing.T, data []byte) {
		lr := NewLogReader(bytes.NewReader(data), "fuzz.log")
		var entries []LogEntry
		for lr.Scan() {
			e := lr.Entry()
			if e.Dir > Trim || e.TimeMs < 0 || e.BlockSize < 0 || e.Offset < -1 {
				t.Fatalf("entry out of range: %+v", e)
			}
			entries = append(entries, e)
		}
		var b bytes.Buffer
		for _, e := range entries {
			off := e.Offset
			if off < 0 {
				off = 0
			}
			b.WriteString(formatLine(e.TimeMs, e.Value, int64(e.Dir), e.BlockSize, off, int64(e.Prio)))
		}
		lr2 := NewLogReader(&b, "again.log")
		for i := 0; lr2.Scan(); i++ {
			e := lr2.Entry()
			want := entries[i]
			if want.Offset < 0 {
				want.Offset = 0
			}
			if e != want {
				t.Fatalf("line %d: reread %+v, want %+v", i+1, e, want)
			}
		}
		if err := lr2.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

func formatLine(v ...int64) string {
	var b []byte
	for i, x := range v {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, []byte(itoa(x))...)
	}
	return string(append(b, '\n'))
}

func itoa(x int64) string {
	if x == 0 {
		return "0"
	}
	neg := x < 0
	var b []byte
	for x != 0 {
		d := x % 10
		if d < 0 {
			d = -d
		}
		b = append([]byte{byte('0' + d)}, b...)
		x /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func FuzzParseResult(f *testing.F) {
	seedFiles(f, "json")
	f.Add([]byte(`{"jobs":[{"jobname":"j","read":{"clat_ns":{"N":1,"percentile":{"50.000000":7},"bins":{"7":1}}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseResult(bytes.NewReader(data), "fuzz.json")
		if err == nil && res == nil {
			t.Fatal("nil result without an error")
		}
	})
}

func FuzzParseStderr(f *testing.F) {
	seedFiles(f, "stderr")
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := ParseStderr(bytes.NewReader(data), "fuzz.stderr")
		if err != nil {
			return
		}
		for _, e := range rep.IOErrors {
			if e.Count < 1 || e.FirstLine > e.LastLine {
				t.Fatalf("bad aggregate %+v", e)
			}
		}
	})
}
