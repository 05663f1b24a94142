package hostcmd

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/montanaflynn/stats"
)

// benchCopies copies of healthy.tsv (4 subsystems, 8 controllers, every
// attribute the kernel shows) make the benchmark host: 104 controllers in
// 52 subsystems, the size of the 102-controller comparison.
const benchCopies = 13

// Instance strides of one copy: healthy.tsv's subsystem instances are 0..5
// and its controller instances 0..7.
const subsysStride, ctrlStride = 6, 8

var (
	reSubsys = regexp.MustCompile(`^nvme-subsys(\d+)$`)
	reLeg    = regexp.MustCompile(`^nvme(\d+)c(\d+)n(\d+)$`)
	reHead   = regexp.MustCompile(`^(nvme|ng)(\d+)n(\d+)$`)
	reCtrl   = regexp.MustCompile(`^nvme(\d+)$`)
	// The cluster UUID inside every subsystem NQN of healthy.tsv.
	clusterUUID = "00000002-0000-4000-8000-000000000002"
)

// benchTree returns the benchmark host as "path relative to /sys" ->
// content: healthy.tsv copied copies times, copy k with subsystem instances
// shifted by k·6, controller instances by k·8 (in every path component that
// names one: nvme-subsysS, nvmeN, nvmeScCnH, nvmeSnH, ngSnH) and its NQNs
// made its own (the cluster UUID's last digits are k).
func benchTree(tb testing.TB, copies int) map[string]string {
	tb.Helper()
	f, err := os.Open(healthy)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	type attr struct{ path, value string }
	var attrs []attr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, v, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !strings.HasPrefix(p, "/sys/") {
			tb.Fatalf("%s: line %q is not /sys/<path>\\t<value>", healthy, sc.Text())
		}
		attrs = append(attrs, attr{strings.TrimPrefix(p, "/sys/"), v})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	num := func(s string, plus int) string {
		n, _ := strconv.Atoi(s)
		return strconv.Itoa(n + plus)
	}
	tree := map[string]string{}
	for k := range copies {
		ds, dc := k*subsysStride, k*ctrlStride
		cluster := clusterUUID[:len(clusterUUID)-4] + fmt.Sprintf("%04d", k)
		for _, a := range attrs {
			parts := strings.Split(a.path, "/")
			for i, c := range parts {
				switch {
				case reSubsys.MatchString(c):
					m := reSubsys.FindStringSubmatch(c)
					parts[i] = "nvme-subsys" + num(m[1], ds)
				case reLeg.MatchString(c):
					m := reLeg.FindStringSubmatch(c)
					parts[i] = "nvme" + num(m[1], ds) + "c" + num(m[2], dc) + "n" + m[3]
				case reHead.MatchString(c):
					m := reHead.FindStringSubmatch(c)
					parts[i] = m[1] + num(m[2], ds) + "n" + m[3]
				case reCtrl.MatchString(c):
					m := reCtrl.FindStringSubmatch(c)
					parts[i] = "nvme" + num(m[1], dc)
				}
			}
			tree[strings.Join(parts, "/")] = strings.ReplaceAll(a.value, clusterUUID, cluster)
		}
	}
	return tree
}

// treeDigest is the sha256 of the tree's sorted "path\tvalue\n" lines: the
// same digest means the same host.
func treeDigest(tree map[string]string) string {
	h := sha256.New()
	keys := make([]string, 0, len(tree))
	for p := range tree {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, p := range keys {
		fmt.Fprintf(h, "%s\t%s\n", p, tree[p])
	}
	return fmt.Sprintf("%x", h.Sum(nil))[:16]
}

func writeTree(tb testing.TB, root string, tree map[string]string) {
	tb.Helper()
	for p, v := range tree {
		dst := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(v+"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestBenchTree: the benchmark host reads as 104 controllers in 52
// subsystems, clean for inspect, and nvme-cli lists the same paths.
func TestBenchTree(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, benchTree(t, benchCopies))
	code, out, errOut := run(t, "inspect", "--sys-root", dir)
	if code != exitPass || !strings.HasPrefix(out, fmt.Sprintf("inspected %d subsystems, %d controllers\n", 4*benchCopies, 8*benchCopies)) {
		t.Fatalf("inspect of the benchmark tree: exit %d\n%s%s", code, out, errOut)
	}
}

// BenchmarkInspectProcess times the host tool as a process, as scripts run
// it: "fiomig-host inspect --sys-root /sys -o json" (A) against "nvme
// list-subsys -o json" (B: nvme-cli, the yardstick), in turn (A B A B ...),
// on the same 104-controller tree on a tmpfs mounted at /sys in a private
// mount namespace; "fiomig inspect" (the whole harness binary) runs third
// in each round, for comparison only. The metrics are medians over the
// rounds of each command's wall time in ms and of the per-round ratio A/B
// (median as montanaflynn/stats defines it: the mean of the two middle
// values for an even count). Needs root (the mount namespace), nvme-cli
// and the go command.
func BenchmarkInspectProcess(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: /sys is replaced by a tmpfs in a private mount namespace")
	}
	nvme, err := exec.LookPath("nvme")
	if err != nil {
		b.Skip("nvme-cli is not installed (make tools installs it)")
	}
	dir := b.TempDir()
	bin, whole := filepath.Join(dir, "fiomig-host"), filepath.Join(dir, "fiomig")
	for _, c := range [][2]string{{bin, "../../cmd/fiomig-host"}, {whole, "../../cmd/fiomig"}} {
		if out, err := exec.Command("go", "build", "-o", c[0], c[1]).CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", c[1], err, out)
		}
	}
	tree := benchTree(b, benchCopies)

	// The mount namespace belongs to this goroutine's thread only: it stays
	// locked to it (never unlocked, so the thread ends with the goroutine)
	// and children forked from it see the tmpfs as /sys.
	runtime.LockOSThread()
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		b.Skipf("unshare(CLONE_NEWNS): %v", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		b.Fatalf("make / private in the new mount namespace: %v", err)
	}
	if err := syscall.Mount("bench-sys", "/sys", "tmpfs", 0, ""); err != nil {
		b.Fatalf("mount tmpfs on /sys: %v", err)
	}
	writeTree(b, "/sys", tree)
	b.Logf("tree %s: %d attributes", treeDigest(tree), len(tree))

	runOnce := func(name string, args ...string) float64 {
		cmd := exec.Command(name, args...)
		start := time.Now()
		out, err := cmd.Output()
		ms := float64(time.Since(start)) / float64(time.Millisecond)
		if err != nil || len(out) == 0 {
			b.Fatalf("%s %v: %v (%d bytes of output)", name, args, err, len(out))
		}
		return ms
	}
	var a, v, w, ratio []float64
	for b.Loop() {
		ta := runOnce(bin, "inspect", "--sys-root", "/sys", "-o", "json")
		tb := runOnce(nvme, "list-subsys", "-o", "json")
		tw := runOnce(whole, "inspect", "--sys-root", "/sys", "-o", "json")
		a, v, w, ratio = append(a, ta), append(v, tb), append(w, tw), append(ratio, ta/tb)
	}
	med := func(xs []float64) float64 { m, _ := stats.Median(xs); return m }
	b.ReportMetric(med(a), "fiomig-host-ms")
	b.ReportMetric(med(v), "nvme-cli-ms")
	b.ReportMetric(med(ratio), "host/nvme-cli")
	b.ReportMetric(med(w), "fiomig-ms")
}
