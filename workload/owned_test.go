package workload

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fuseFDs returns the descriptors of pid that are open on /dev/fuse.
func fuseFDs(t *testing.T, pid int) []string {
	t.Helper()
	dir := filepath.Join("/proc", itoa(pid), "fd")
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil // gone
	}
	var out []string
	for _, de := range des {
		if l, err := os.Readlink(filepath.Join(dir, de.Name())); err == nil && l == "/dev/fuse" {
			out = append(out, de.Name())
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The FUSE connection is ours alone: neither fio nor its job processes
// hold /dev/fuse (it is opened close-on-exec), and every one of them
// carries the workload's marker.
func TestFioHoldsNoFUSEDescriptor(t *testing.T) {
	w, _ := startSmall(t, nil)
	pids, err := MarkedProcesses(w.Marker())
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) < 2 {
		t.Fatalf("marked processes %v: want fio and its job process", pids)
	}
	main := w.Processes()[0].Pid()
	found := false
	for _, pid := range pids {
		found = found || pid == main
		if fds := fuseFDs(t, pid); len(fds) > 0 {
			t.Errorf("pid %d (%s) holds /dev/fuse as fd %v", pid, procComm(pid), fds)
		}
	}
	if !found {
		t.Errorf("fio's main process %d is not among the marked %v", main, pids)
	}
	if fds := fuseFDs(t, os.Getpid()); len(fds) != 1 {
		t.Errorf("this process holds /dev/fuse as %v, want one descriptor", fds)
	}
}

// fio's job processes survive a SIGKILL of fio's main process (own
// sessions); Stop finds them by the marker, kills them and unmounts.
func TestStopKillsOrphanedJobProcesses(t *testing.T) {
	w, _ := startSmall(t, nil)
	p := w.Processes()[0]
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	time.Sleep(100 * time.Millisecond)
	left, err := MarkedProcesses(w.Marker())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Fatal("no job process outlived fio's main process: the test shows nothing")
	}
	rep, err := w.Stop(StopOptions{Grace: time.Second, KillAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(left, rep.Stragglers); d != "" {
		t.Errorf("stragglers (-alive after the kill +killed by Stop):\n%s", d)
	}
	if after, _ := MarkedProcesses(w.Marker()); len(after) > 0 {
		t.Errorf("marked processes after Stop: %v", after)
	}
	if m, _ := Mounted(w.FS().Dir()); m {
		t.Errorf("%s still mounted", w.FS().Dir())
	}
}

func TestReadOwned(t *testing.T) {
	good := `{"kind":"owner","pid":12,"start_ticks":345,"marker":"fiomig-12-345"}
{"kind":"tmpdir","path":"/tmp/fiomig-mnt-1"}
{"kind":"mount","path":"/tmp/fiomig-mnt-1"}
{"kind":"fio","pid":13,"start_ticks":350,"volume":"vol-001"}
`
	es, err := ReadOwned(strings.NewReader(good+`{"kind":"fio","pid":14,"sta`), "o.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []OwnedEntry{
		{Kind: OwnedOwner, Pid: 12, StartTicks: 345, Marker: "fiomig-12-345"},
		{Kind: OwnedTmpDir, Path: "/tmp/fiomig-mnt-1"},
		{Kind: OwnedMount, Path: "/tmp/fiomig-mnt-1"},
		{Kind: OwnedFio, Pid: 13, StartTicks: 350, Volume: "vol-001"},
	}
	if d := cmp.Diff(want, es); d != "" {
		t.Errorf("(-want +got), the cut-off last line ignored:\n%s", d)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"kind":"mount","path":"rel"}`, `o.jsonl:5: mount line: field "path" must be a clean absolute path`},
		{`{"kind":"mount","path":"/a/../b"}`, `o.jsonl:5: mount line: field "path"`},
		{`{"kind":"fio","start_ticks":3}`, `o.jsonl:5: fio line: field "pid" must be > 0`},
		{`{"kind":"owner","pid":3,"start_ticks":3}`, `o.jsonl:5: owner line: field "marker" is missing`},
		{`{"kind":"fio","pid":3}`, `o.jsonl:5: fio line: field "start_ticks" is missing`},
		{`{"kind":"bogus"}`, `o.jsonl:5: field "kind": unknown kind "bogus"`},
		{`{"kind":"mount","path":"/x","pth":"/y"}`, `o.jsonl:5: not an owned-file line: json: unknown field "pth"`},
		{`[1]`, `o.jsonl:5: not an owned-file line`},
	} {
		_, err := ReadOwned(strings.NewReader(good+tc.in+"\n"), "o.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadOwned(..%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// The janitor leaves a live owner's run alone and, for a dead one, removes
// its recorded temporary directory (no process or mount is left to it).
func TestJanitorKeepsLiveRunsAndRemovesDeadOnesDirs(t *testing.T) {
	root := t.TempDir()
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	liveDir := filepath.Join(root, "fio-mig-1", "fio")
	deadDir := filepath.Join(root, ".fio-staging-2")
	tmp := filepath.Join(t.TempDir(), "fiomig-backing-x")
	for _, d := range []string{liveDir, deadDir, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir string, es ...OwnedEntry) {
		l, err := openLedger(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		for _, e := range es {
			if err := l.add(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(liveDir, OwnedEntry{Kind: OwnedTmpDir, Path: tmp})
	// A dead owner: this process's pid with another start time.
	dead := OwnedEntry{Kind: OwnedOwner, Pid: me.Pid, StartTicks: me.StartTicks + 1, Marker: "fiomig-dead"}
	if err := os.WriteFile(filepath.Join(deadDir, OwnedFile), []byte(mustJSON(dead)+"\n"+mustJSON(OwnedEntry{Kind: OwnedTmpDir, Path: tmp})+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Janitor(JanitorOptions{Roots: []string{root}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ledgers) != 2 {
		t.Fatalf("ledgers %v, want 2", rep.Ledgers)
	}
	var whats []string
	for _, a := range rep.Actions {
		whats = append(whats, a.What+" "+a.Target)
	}
	want := []string{"remove " + tmp, "keep " + itoa(me.Pid)} // ledgers in path order: .fio-staging-2 first
	if d := cmp.Diff(want, whats); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("dry run removed %s: %v", tmp, err)
	}
	if _, err := Janitor(JanitorOptions{Roots: []string{root}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("%s not removed: %v", tmp, err)
	}
}

// BenchmarkMarkedProcesses: one scan of /proc for a marker, as Stop makes
// once per stop and Janitor once per dead ledger.
func BenchmarkMarkedProcesses(b *testing.B) {
	for b.Loop() {
		if _, err := MarkedProcesses("fiomig-bench-none"); err != nil {
			b.Fatal(err)
		}
	}
}
