package history

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/internal/pgtest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// writeRun writes a small run directory under parent named name: seed,
// one migration per pause (the longest pause on worker-1), pause-bound
// failing when a pause is over 5 s, and the verdict that follows.
func writeRun(t testing.TB, parent, name string, seed int64, pauses ...float64) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := record.Plan{Tool: "fiomig", Scenario: "migrations", Backend: "sim", Seed: seed,
		Command: fmt.Sprintf("fiomig run --seed=%d", seed), Params: record.Params{Migrations: len(pauses), PauseCritS: 5, SampleIntervalS: 0.1, FreezesAllowed: 1, Seed: record.DefaultSeedThresholds()},
		Topology: record.Topology{Nodes: []record.Node{{Name: "node-1", IP: "10.0.0.1"}}, Hosts: []record.HostInfo{{Name: "worker-1", HostNQN: "nqn.host:worker-1"}},
			Volumes: []record.VolumeInfo{{Name: "vol-1", NQN: "nqn.x:vol-1", NSIDs: []int{1}, Consumers: []string{"worker-1"}}}}}
	sum := record.Summary{Seed: seed, Verdict: record.Pass}
	pb := record.CheckResult{Name: checks.CheckPauseBound, Verdict: record.Pass}
	for i, p := range pauses {
		id := fmt.Sprintf("mig-%04d", i+1)
		sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: id, NQN: "nqn.x:" + id, Outcome: "Completed", Freezes: 1,
			Hosts: map[string]record.HostPauses{"worker-1": {LongestPauseS: p, Freezes: 1, Windows: [][2]float64{{10, 10 + p}}}}})
		if p > 5 {
			pb.Verdict, sum.Verdict = record.Fail, record.Fail
			pb.Failing = append(pb.Failing, id)
		}
	}
	sum.Checks = []record.CheckResult{pb, {Name: checks.CheckLeakedControllers, Verdict: record.Pass}}
	sum.Churn = &record.Churn{Reconnects: len(pauses)}
	sum = reports.WithStats(sum)
	if err := record.WriteJSON(filepath.Join(dir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteJSON(filepath.Join(dir, record.SummaryFile), sum); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStoreSQLite(t *testing.T) {
	testStore(t, filepath.Join(t.TempDir(), "h", "history.db"))
}

func TestStorePostgres(t *testing.T) {
	srv := pgtest.Start(t)
	testStore(t, srv.Database(t, "store"))
}

func testStore(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != len(Migrations) {
		t.Fatalf("schema version %d, %v; want %d", v, err, len(Migrations))
	}
	root := t.TempDir()
	a := writeRun(t, root, "fio-mig-1700000100", 1, 2, 2.5, 3)
	b := writeRun(t, root, "fio-mig-1700000000", 2, 2, 6) // started earlier
	labels := Labels{Commit: "c1", Branch: "main"}
	ra, err := s.Add(ctx, a, labels)
	if err != nil || !ra.Added || ra.Entry.ID != "fio-mig-1700000100" || ra.Entry.Seq != 1 {
		t.Fatalf("add a: %+v, %v", ra, err)
	}
	rb, err := s.Add(ctx, b, labels)
	if err != nil || !rb.Added || rb.Entry.Seq != 2 {
		t.Fatalf("add b: %+v, %v", rb, err)
	}
	// Again, with other labels: nothing changes, and the result says what
	// is stored (commit c1, branch main), not what this add gave.
	again, err := s.Add(ctx, a, Labels{Commit: "c9"})
	if err != nil || again.Added || again.Entry.Seq != 1 || again.Entry.Commit != "c1" || again.Entry.Branch != "main" {
		t.Fatalf("add a again: %+v, %v; want not added, seq 1, the stored labels", again, err)
	}
	// The same run id with other content is refused, naming the id.
	clash := writeRun(t, t.TempDir(), "fio-mig-1700000100", 3, 9)
	if _, err := s.Add(ctx, clash, labels); err == nil || !strings.Contains(err.Error(), `"fio-mig-1700000100"`) {
		t.Fatalf("clash: %v", err)
	}
	if r, err := s.Add(ctx, clash, Labels{RunID: "other", Commit: "c2"}); err != nil || !r.Added {
		t.Fatalf("clash under another --run-id: %+v, %v", r, err)
	}

	es, err := s.Entries(ctx, Filter{Commit: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	if want := []string{"fio-mig-1700000000", "fio-mig-1700000100"}; !slices.Equal(ids, want) {
		t.Fatalf("entries %v, want %v (by start time)", ids, want)
	}
	e := es[1]
	if e.Figures["pause_p50_seconds"] != 2.5 || e.Figures["pause_max_seconds"] != 3 || e.Figures["over_bound_fraction"] != 0 || e.Figures["reconnects"] != 3 || e.Figures["pause_crit_seconds"] != 5 {
		t.Errorf("figures of a: %v", e.Figures)
	}
	if es[0].Figures["over_bound_fraction"] != 0.5 || es[0].Verdict != record.Fail || verdictOf(es[0], checks.CheckPauseBound) != record.Fail {
		t.Errorf("b: %+v", es[0])
	}
	if e.Seeds != "1" || e.Cluster != "sim" || e.Commit != "c1" || e.Branch != "main" || e.Kind != KindRun || e.StartedUnixS != 1700000100 {
		t.Errorf("labels of a: %+v", e)
	}
	if last, err := s.Entries(ctx, Filter{Last: 1}); err != nil || len(last) != 1 || last[0].ID != "other" {
		t.Errorf("last 1: %+v, %v", last, err)
	}

	// What compare --history reads back is what was added.
	set, err := s.RunSet(ctx, "history", []string{"fio-mig-1700000100"})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := reports.LoadRunSet(a)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(orig.Runs, set.Runs); d != "" {
		t.Errorf("stored run differs (-added +read back):\n%s", d)
	}
	if _, err := s.RunSet(ctx, "history", []string{"nope"}); err == nil {
		t.Error("RunSet of an unknown id: no error")
	}
}

// TestAddSweep files a sweep directory as one entry whose members are its
// seeds, and its figures pool them.
func TestAddSweep(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sweep := filepath.Join(t.TempDir(), "sweep-1700000000")
	writeRun(t, sweep, "seed-1", 1, 1, 2)
	writeRun(t, sweep, "seed-2", 2, 3, 7)
	writeRun(t, sweep, "seed-4", 4, 4)
	r, err := s.Add(ctx, sweep, Labels{})
	if err != nil {
		t.Fatal(err)
	}
	e := r.Entry
	if e.Kind != KindSweep || e.Seeds != "1-2,4" || e.Verdict != record.Fail || len(e.Checks) != 3 {
		t.Errorf("sweep entry: %+v", e)
	}
	// Longest pauses pooled: 1, 2, 3, 4, 7 → p50 3; one of five over 5 s.
	if e.Figures["pause_p50_seconds"] != 3 || e.Figures["over_bound_fraction"] != 0.2 || e.Figures["failed_runs_fraction"] != 0.333333 {
		t.Errorf("sweep figures: %v", e.Figures)
	}
	set, err := s.RunSet(ctx, "h", []string{e.ID})
	if err != nil || len(set.Runs) != 3 || set.Runs[2].Summary.Seed != 4 || !strings.HasSuffix(set.Runs[2].Dir, "seed-4") {
		t.Errorf("sweep read back: %+v, %v", set, err)
	}
}

// TestMigrations: a database of schema version 1 is brought to the
// latest on Open; one of a version this code does not know is refused.
func TestMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	old, err := open(ctx, path, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := old.SchemaVersion(ctx); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	if _, err := old.Add(ctx, writeRun(t, t.TempDir(), "fio-mig-1700000000", 1, 2), Labels{}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SchemaVersion(ctx); v != 2 {
		t.Errorf("after Open: version %d, want 2", v)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'runs_order'").Scan(&n); err != nil || n != 1 {
		t.Errorf("index runs_order: %d, %v", n, err)
	}
	if es, err := s.Entries(ctx, Filter{}); err != nil || len(es) != 1 {
		t.Errorf("the version-1 run after migrating: %v, %v", es, err)
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO schema_migrations (version, what, applied_unix_s) VALUES (99, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("a future schema: %v", err)
	}
}

// helperEnv makes the test binary a child that adds directories to a
// history (TestConcurrentAdd): FIOMIG_HISTORY_HELPER=<dsn>, the
// directories in FIOMIG_HISTORY_DIRS (separated by newlines).
const helperEnv = "FIOMIG_HISTORY_HELPER"

func TestHelperAdd(t *testing.T) {
	dsn := os.Getenv(helperEnv)
	if dsn == "" {
		t.Skip("helper process of TestConcurrentAdd only")
	}
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range strings.Split(os.Getenv("FIOMIG_HISTORY_DIRS"), "\n") {
		if _, err := s.Add(ctx, d, Labels{Commit: "c"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConcurrentAddSQLite(t *testing.T) {
	testConcurrentAdd(t, filepath.Join(t.TempDir(), "history.db"))
}

func TestConcurrentAddPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	testConcurrentAdd(t, srv.Database(t, "concurrent"))
}

// testConcurrentAdd runs two processes that add 20 run directories each
// to a fresh history at once, 10 of them the same in both (in opposite
// order): every directory lands exactly once, sequence numbers are 1..30
// without a gap, and neither process fails.
func testConcurrentAdd(t *testing.T, dsn string) {
	root := t.TempDir()
	var shared, own [2][]string
	for i := range 10 {
		shared[0] = append(shared[0], writeRun(t, root, fmt.Sprintf("fio-mig-17000000%02d", i), int64(i), 2, 3))
	}
	shared[1] = slices.Clone(shared[0])
	slices.Reverse(shared[1])
	for p := range 2 {
		for i := range 10 {
			own[p] = append(own[p], writeRun(t, root, fmt.Sprintf("fio-mig-18000%d00%02d", p, i), int64(100*p+i), 2, float64(i)))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([][]byte, 2)
	for p := range 2 {
		var dirs []string
		for i := range 10 {
			dirs = append(dirs, shared[p][i], own[p][i])
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAdd$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+dsn, "FIOMIG_HISTORY_DIRS="+strings.Join(dirs, "\n"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[p], errs[p] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for p := range 2 {
		if errs[p] != nil {
			t.Fatalf("process %d: %v\n%s", p, errs[p], outs[p])
		}
	}
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	es, err := s.Entries(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	ids := map[string]int{}
	for _, e := range es {
		seqs = append(seqs, int(e.Seq))
		ids[e.ID]++
		if len(e.Checks) != 1 || len(e.Figures) == 0 {
			t.Errorf("%s landed partly: %d members, %d figures", e.ID, len(e.Checks), len(e.Figures))
		}
	}
	slices.Sort(seqs)
	want := make([]int, 30)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("seqs %v, want 1..30", seqs)
	}
	if len(ids) != 30 {
		t.Errorf("%d distinct runs, want 30", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
	t.Logf("%d runs from two processes: %s", len(es), strconv.Itoa(len(ids)))
}

// TestSeriesOrder: runs are ordered by the start in their directory's
// name, the -N suffix of runs started in the same second included, not by
// the order they were added (a shell glob sorts -10 before -2).
func TestSeriesOrder(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root := t.TempDir()
	for _, name := range []string{"fio-mig-1700000001", "fio-mig-1700000000-10", "fio-mig-1700000000-2", "fio-mig-1700000000"} {
		if _, err := s.Add(ctx, writeRun(t, root, name, 1, 2), Labels{}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := s.Entries(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.ID)
	}
	if want := []string{"fio-mig-1700000000", "fio-mig-1700000000-2", "fio-mig-1700000000-10", "fio-mig-1700000001"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}
