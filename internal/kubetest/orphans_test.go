package kubetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
)

// alive reports whether pid runs (a zombie, or a process gone, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// TestReapOrphans: an "etcd" from the bin directory whose test binary is
// gone is killed and its envtest directory removed; one whose parent is a
// running test binary is left alone.
func TestReapOrphans(t *testing.T) {
	sh := tooltest.Command(t, "sh")
	bin := t.TempDir()
	fake := filepath.Join(bin, "etcd")
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, b, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.MkdirTemp("", "k8s_test_framework_")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(data)

	// Ours: parent is this test binary.
	ours := exec.Command(fake, "-c", "sleep 60; :", "--data-dir="+filepath.Join(data, "mine"))
	if err := ours.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { ours.Process.Kill(); ours.Wait() }()

	// Orphan: started by a shell that exits at once.
	pidFile := filepath.Join(t.TempDir(), "pid")
	out, err := exec.Command(sh, "-c", `"$0" -c "sleep 60; :" --data-dir="$1"/data >/dev/null 2>&1 & echo $! >"$2"`, fake, data, pidFile).CombinedOutput()
	if err != nil {
		t.Fatalf("start orphan: %v: %s", err, out)
	}
	pb, _ := os.ReadFile(pidFile)
	orphan, err := strconv.Atoi(strings.TrimSpace(string(pb)))
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Command("kill", "-9", strconv.Itoa(orphan)).Run()
	for i := 0; i < 50 && ppid(orphan) != 0 && ppid(orphan) == os.Getpid(); i++ {
		time.Sleep(10 * time.Millisecond)
	}

	// Each fake forks a sleep; until that child has exec'd it is itself an
	// "etcd" whose parent is not a test binary, and reaping it would end
	// the fake (which would then run ":" and exit). Wait for both.
	for _, pid := range []int{ours.Process.Pid, orphan} {
		for i := 0; i < 200 && !childExecd(pid, fake); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}

	reaped := reapOrphans(bin)
	if !strings.Contains(strings.Join(reaped, " "), "etcd pid "+strconv.Itoa(orphan)) {
		t.Errorf("reaped %v, want the orphan etcd pid %d", reaped, orphan)
	}
	for i := 0; i < 100 && alive(orphan); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(orphan) {
		t.Errorf("orphan %d still runs", orphan)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("orphan's envtest directory %s still there (%v)", data, err)
	}
	if !alive(ours.Process.Pid) {
		t.Errorf("the etcd of a running test (pid %d) was killed", ours.Process.Pid)
	}
}

// childExecd reports whether pid has a child whose executable is no longer
// exe (it has exec'd something else).
func childExecd(pid int, exe string) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		c, err := strconv.Atoi(p.Name())
		if err != nil || ppid(c) != pid {
			continue
		}
		if e, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe")); err == nil && e != exe {
			return true
		}
	}
	return false
}
