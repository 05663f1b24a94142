package fio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fiomig/fiomig/internal/synthlog"
)

// benchLines is the size of the benchmark log: 10 million per-I/O lines,
// about 55 hours of a 50 IOPS volume or one hour at 2800 IOPS.
const benchLines = 10_000_000

func benchLog(b *testing.B, columns int) (path string, size int64) {
	b.Helper()
	path = filepath.Join(b.TempDir(), "bench_lat.1.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := synthlog.Write(f, benchLines, columns, 1); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}

// BenchmarkLogReader10M streams a 10M-line fio 3.33 log (6 columns)
// through LogReader; lines/s is the figure to compare with fiologparser.py.
func BenchmarkLogReader10M(b *testing.B) {
	path, size := benchLog(b, 6)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		lr := NewLogReader(f, path)
		n := 0
		for lr.Scan() {
			n++
		}
		f.Close()
		if lr.Err() != nil || n != benchLines {
			b.Fatalf("%d lines, %v", n, lr.Err())
		}
	}
	b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkAnalyzeLog10M is the full gap analysis of a 10M-line log in
// fiologparser.py's 4-column format (the same file it is timed on).
func BenchmarkAnalyzeLog10M(b *testing.B) {
	path, size := benchLog(b, 4)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ga, err := AnalyzeLogFile(path, GapOptions{})
		if err != nil || ga.Completions != benchLines {
			b.Fatalf("%+v, %v", ga.Completions, err)
		}
	}
	b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
