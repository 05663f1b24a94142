package history

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkEDivisive: the change-point search with the default 999
// permutations on a series with one shift, 30 runs (a month of nightly
// runs) and 200 (fiomig history changes --last 200).
func BenchmarkEDivisive(b *testing.B) {
	for _, n := range []int{30, 200} {
		xs := series(1, n, n*2/3, 2, 0.25, 1)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				EDivisive(xs, DefaultChangeOptions)
			}
		})
	}
}

// BenchmarkAddSQLite: filing one run directory (3 migrations) into an
// SQLite history, each under a new run id.
func BenchmarkAddSQLite(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "h.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	dir := writeRun(b, b.TempDir(), "fio-mig-1700000000", 1, 2, 3, 4)
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Add(ctx, dir, Labels{RunID: fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
		}
	}
}
