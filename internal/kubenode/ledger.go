package kubenode

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine-wide names: one cluster per machine (the lock), so fixed.
const (
	// BaseDir holds everything a cluster writes (data, sockets, logs,
	// kubelet and containerd roots, pod mounts).
	BaseDir = "/var/lib/fiomig-kubenode"
	// LedgerPath records what a running cluster made, for Janitor.
	LedgerPath = BaseDir + ".ledger.json"
	// LockPath is flock(2)ed by the one cluster that runs.
	LockPath = "/run/fiomig-kubenode.lock"
	// Netns is the network namespace every daemon runs in.
	Netns = "fiomig-kubenode"
	// hostVeth and nodeVeth are the veth pair joining it to the root
	// namespace (the test process reaches the API server through it).
	hostVeth = "fmkn-host"
	nodeVeth = "fmkn-node"
	// cgroupPrefix starts the name of each kubelet's cgroupRoot
	// (/sys/fs/cgroup/<controller>/fiomig-kubenode-<i>).
	cgroupPrefix = "fiomig-kubenode-"
	// cniPrefix starts each node's CNI network name.
	cniPrefix = "fiomig-kubenode-n"
)

// kubeletSysctls are the host sysctls the kubelet sets at start
// (research: vm.overcommit_memory=1, kernel.panic=10, ...): saved before
// and restored after.
var kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// ledger is what a cluster made, written before each thing is made, so
// that Janitor can undo the work of a process that was killed.
type ledger struct {
	Owner      int       `json:"owner"`
	OwnerStart uint64    `json:"owner_start"`
	Started    time.Time `json:"started"`
	Procs      []proc    `json:"procs"`
	// Before is the machine as it was before the cluster.
	Before Snapshot `json:"before"`
}

// Snapshot is what of the machine a cluster may change, as it was: the
// kubelet's sysctls, which machine-wide folders existed, and the entries
// of the machine-wide folders daemons write into whatever their
// configuration says (containerd's pod namespaces in /run/netns, its
// shims' sockets in /run/containerd/s, libcni's result cache, the
// kubelet's /var/log/containers links).
type Snapshot struct {
	Sysctls map[string]string   `json:"sysctls"`
	Exists  map[string]bool     `json:"exists"`
	Entries map[string][]string `json:"entries"`
}

// machinePaths are the machine-wide folders a cluster's daemons create
// outside BaseDir whatever their configuration (containerd's shim socket
// folder, libcni's cache, the kubelet's device-plugin socket folder and
// container log links).
var machinePaths = []string{"/run/containerd", "/run/containerd/s", "/var/lib/cni", "/var/lib/cni/results", "/var/lib/kubelet", "/var/log/containers"}

// entryDirs are the folders whose new entries are the cluster's.
var entryDirs = []string{"/run/netns", "/run/containerd/s", "/var/lib/cni/results", "/var/log/containers"}

// TakeSnapshot reads the machine's state a cluster may change.
func TakeSnapshot() (Snapshot, error) {
	s := Snapshot{Exists: map[string]bool{}, Entries: map[string][]string{}}
	var err error
	if s.Sysctls, err = readSysctls(); err != nil {
		return s, err
	}
	for _, p := range machinePaths {
		_, err := os.Lstat(p)
		s.Exists[p] = err == nil
	}
	for _, d := range entryDirs {
		s.Entries[d] = dirEntries(d)
	}
	return s, nil
}

func dirEntries(dir string) []string {
	var out []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// newEntries are dir's entries that were not in before.
func (s Snapshot) newEntries(dir string) []string {
	var out []string
	for _, n := range dirEntries(dir) {
		if !slices.Contains(s.Entries[dir], n) {
			out = append(out, n)
		}
	}
	return out
}

// proc is a started daemon: its pid and start time (field 22 of
// /proc/<pid>/stat, so a reused pid is not killed).
type proc struct {
	Name  string `json:"name"`
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func (l *ledger) save() error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp := LedgerPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, LedgerPath)
}

func readLedger() (*ledger, error) {
	b, err := os.ReadFile(LedgerPath)
	if err != nil {
		return nil, err
	}
	var l ledger
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", LedgerPath, err)
	}
	return &l, nil
}

// startTime is field 22 of /proc/<pid>/stat (0 when pid does not exist).
func startTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func alive(p proc) bool { return p.Pid > 0 && startTime(p.Pid) == p.Start }

// lock takes LockPath (flock, exclusive), waiting up to wait; logf hears
// once that it waits and for whom.
func lock(wait time.Duration, logf func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(LockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			f.Truncate(0)
			fmt.Fprintf(f, "%d\n", os.Getpid())
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("kubenode: lock %s: %w", LockPath, err)
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(LockPath)
			f.Close()
			return nil, fmt.Errorf("kubenode: %s is held by pid %s for over %v: one cluster per machine", LockPath, strings.TrimSpace(string(holder)), wait)
		}
		if !told {
			holder, _ := os.ReadFile(LockPath)
			logf("kubenode: waiting for %s (held by pid %s: one cluster per machine)", LockPath, strings.TrimSpace(string(holder)))
			told = true
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Janitor removes what a cluster whose process died left behind (its
// ledger names the daemons, saved sysctls and pre-existing network
// namespaces; everything else is found by name: processes referring to
// BaseDir, processes in the kubelets' cgroups, mounts under BaseDir, the
// network namespace, the cgroups, /var/log/containers links into
// BaseDir). It takes the machine's cluster lock first (waiting up to
// wait), so a running cluster is never touched. It returns one line per
// thing it removed.
func Janitor(wait time.Duration, logf func(string, ...any)) ([]string, error) {
	f, err := lock(wait, logf)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sweep(false)
}

// sweep undoes a cluster: graceful stops the daemons with SIGTERM first.
// The caller holds the lock.
func sweep(graceful bool) ([]string, error) {
	var did []string
	var errs []error
	l, err := readLedger()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if l == nil {
		l = &ledger{}
	}
	// Kubelets first (they would restart containers), then every
	// container (the processes in the kubelets' cgroups), then the rest.
	var kubelets, others []proc
	for _, p := range l.Procs {
		if strings.HasPrefix(p.Name, "kubelet") {
			kubelets = append(kubelets, p)
		} else {
			others = append(others, p)
		}
	}
	did = append(did, stop(kubelets, graceful)...)
	did = append(did, killCgroupProcs()...)
	did = append(did, killReferring()...) // shims (and anything else) naming BaseDir
	slices.Reverse(others)                // started last, stopped first
	did = append(did, stop(others, graceful)...)
	did = append(did, killReferring()...)
	did = append(did, killCgroupProcs()...)

	d, err := unmountUnder(BaseDir)
	did, errs = append(did, d...), appendErr(errs, err)
	d, err = removePodNetns(l.Before)
	did, errs = append(did, d...), appendErr(errs, err)
	if _, err := os.Stat(filepath.Join("/run/netns", Netns)); err == nil {
		if out, err := exec.Command("ip", "netns", "delete", Netns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns delete %s: %w: %s", Netns, err, out))
		} else {
			did = append(did, "netns "+Netns)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + hostVeth); err == nil {
		exec.Command("ip", "link", "delete", hostVeth).Run()
		did = append(did, "link "+hostVeth)
	}
	for _, k := range slices.Sorted(mapsKeys(l.Before.Sysctls)) {
		path := "/proc/sys/" + k
		if cur, _ := os.ReadFile(path); strings.TrimSpace(string(cur)) != l.Before.Sysctls[k] {
			if err := os.WriteFile(path, []byte(l.Before.Sysctls[k]), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore sysctl %s: %w", k, err))
			} else {
				did = append(did, fmt.Sprintf("sysctl %s %s -> %s", k, strings.TrimSpace(string(cur)), l.Before.Sysctls[k]))
			}
		}
	}
	d, err = removeCgroups()
	did, errs = append(did, d...), appendErr(errs, err)
	did = append(did, removeLinksInto("/var/log/containers", BaseDir)...)
	did = append(did, removeMachineEntries(l.Before)...)
	if _, err := os.Stat(BaseDir); err == nil {
		if err := os.RemoveAll(BaseDir); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "dir "+BaseDir)
		}
	}
	for _, p := range slices.Backward(machinePaths) {
		if l.Before.Exists != nil && !l.Before.Exists[p] {
			if _, err := os.Lstat(p); err == nil {
				if err := os.RemoveAll(p); err != nil {
					errs = append(errs, err)
				} else {
					did = append(did, "dir "+p)
				}
			}
		}
	}
	if err := os.Remove(LedgerPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return did, errors.Join(errs...)
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// stop ends the live procs: SIGTERM and up to 10 s when graceful, then
// SIGKILL.
func stop(procs []proc, graceful bool) []string {
	var did []string
	var live []proc
	for _, p := range procs {
		if alive(p) {
			live = append(live, p)
			if graceful {
				syscall.Kill(p.Pid, syscall.SIGTERM)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range live {
		for graceful && alive(p) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(p) {
			syscall.Kill(p.Pid, syscall.SIGKILL)
			waitGone(p)
			did = append(did, fmt.Sprintf("killed %s pid %d", p.Name, p.Pid))
		} else {
			did = append(did, fmt.Sprintf("stopped %s pid %d", p.Name, p.Pid))
		}
	}
	return did
}

func waitGone(p proc) {
	for i := 0; i < 50 && alive(p); i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupDirs are the kubelets' cgroup roots in every v1 hierarchy (and
// the unified one).
func cgroupDirs() []string {
	var out []string
	hier, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range hier {
		entries, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", h.Name()))
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), cgroupPrefix) {
				out = append(out, filepath.Join("/sys/fs/cgroup", h.Name(), e.Name()))
			}
		}
	}
	return out
}

// killCgroupProcs SIGKILLs every process in the kubelets' cgroups (the
// containers).
func killCgroupProcs() []string {
	var did []string
	seen := map[int]bool{}
	for _, root := range cgroupDirs() {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				if pid > 0 && !seen[pid] && pid != os.Getpid() {
					seen[pid] = true
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						did = append(did, fmt.Sprintf("killed container process pid %d", pid))
					}
				}
			}
			return nil
		})
	}
	return did
}

// referring lists processes (not this one) whose command line or working
// directory names BaseDir: containerd shims, and daemons a lost ledger
// no longer names.
func referring() []proc {
	var out []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(string(cmdline), BaseDir+"/") || strings.HasPrefix(cwd, BaseDir+"/") {
			name := strings.SplitN(string(cmdline), "\x00", 2)[0]
			out = append(out, proc{Name: filepath.Base(name), Pid: pid, Start: startTime(pid)})
		}
	}
	return out
}

func killReferring() []string {
	var did []string
	for _, p := range referring() {
		if syscall.Kill(p.Pid, syscall.SIGKILL) == nil {
			waitGone(p)
			did = append(did, fmt.Sprintf("killed %s pid %d", p.Name, p.Pid))
		}
	}
	return did
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unmountUnder(dir string) ([]string, error) {
	var did []string
	var errs []error
	for range 3 { // a lazy unmount can uncover a mount beneath
		mps, err := mountsUnder(dir)
		if err != nil {
			return did, err
		}
		if len(mps) == 0 {
			return did, nil
		}
		errs = nil
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("umount %s: %w", mp, err))
			} else {
				did = append(did, "umount "+mp)
			}
		}
	}
	return did, errors.Join(errs...)
}

// podNetns lists /run/netns/cni-* entries not in before (containerd's
// pod sandbox namespaces).
func podNetns(before Snapshot) []string {
	var out []string
	for _, n := range before.newEntries("/run/netns") {
		if strings.HasPrefix(n, "cni-") {
			out = append(out, n)
		}
	}
	return out
}

func removePodNetns(before Snapshot) ([]string, error) {
	var did []string
	var errs []error
	for _, n := range podNetns(before) {
		p := filepath.Join("/run/netns", n)
		syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "pod netns "+n)
		}
	}
	return did, errors.Join(errs...)
}

// removeCgroups removes the kubelets' cgroup trees, deepest first,
// retrying while killed processes leave them.
func removeCgroups() ([]string, error) {
	var did []string
	var last error
	for range 50 {
		var dirs []string
		for _, root := range cgroupDirs() {
			filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
		}
		if len(dirs) == 0 {
			return did, nil
		}
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		last = nil
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				last = fmt.Errorf("rmdir %s: %w", d, err)
			} else if strings.Count(d, "/") == 5 {
				did = append(did, "cgroup "+d)
			}
		}
		if last == nil {
			return did, nil
		}
		killCgroupProcs()
		time.Sleep(100 * time.Millisecond)
	}
	return did, last
}

// removeLinksInto removes the symbolic links in dir that point under
// target (the kubelet's /var/log/containers links).
func removeLinksInto(dir, target string) []string {
	var did []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, target+"/") {
			if os.Remove(p) == nil {
				did = append(did, "link "+p)
			}
		}
	}
	return did
}

// removeMachineEntries removes the entries that appeared in
// /run/containerd/s (shim sockets no process listens on any more) and
// /var/lib/cni/results (libcni's cache of the cluster's pod networks)
// since before; under the lock, only this cluster's containerds made
// them.
func removeMachineEntries(before Snapshot) []string {
	var did []string
	listening := unixListeners()
	for _, n := range before.newEntries("/run/containerd/s") {
		p := filepath.Join("/run/containerd/s", n)
		if !listening[p] && os.Remove(p) == nil {
			did = append(did, "shim socket "+p)
		}
	}
	for _, n := range before.newEntries("/var/lib/cni/results") {
		if os.Remove(filepath.Join("/var/lib/cni/results", n)) == nil {
			did = append(did, "cni cache "+n)
		}
	}
	return did
}

// unixListeners are the paths of the bound unix sockets (/proc/net/unix).
func unixListeners() map[string]bool {
	out := map[string]bool{}
	b, _ := os.ReadFile("/proc/net/unix")
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 8 && strings.HasPrefix(f[7], "/") {
			out[f[7]] = true
		}
	}
	return out
}

// Leftovers lists what of a cluster is still on the machine, compared
// with before (TakeSnapshot before Start, or Cluster.Before): processes
// referring to BaseDir or in the kubelets' cgroups, mounts under BaseDir,
// the cluster's network namespace and veth, cgroups, BaseDir, the ledger,
// new entries of /run/netns, /run/containerd/s, /var/lib/cni/results and
// /var/log/containers, machine-wide folders that did not exist, and
// sysctls that differ. A test asserts it is empty after Close or Janitor.
func Leftovers(before Snapshot) []string {
	var out []string
	for _, p := range referring() {
		out = append(out, fmt.Sprintf("process %s pid %d", p.Name, p.Pid))
	}
	for _, root := range cgroupDirs() {
		out = append(out, "cgroup "+root)
	}
	mps, _ := mountsUnder(BaseDir)
	for _, mp := range mps {
		out = append(out, "mount "+mp)
	}
	for _, p := range []string{"/sys/class/net/" + hostVeth, BaseDir, LedgerPath} {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	for _, d := range entryDirs {
		for _, n := range before.newEntries(d) {
			// Other tests' namespaces come and go in /run/netns: only
			// the cluster's and containerd's pod sandboxes' are ours.
			if d == "/run/netns" && n != Netns && !strings.HasPrefix(n, "cni-") {
				continue
			}
			out = append(out, filepath.Join(d, n))
		}
	}
	for _, p := range machinePaths {
		if _, err := os.Lstat(p); err == nil && !before.Exists[p] {
			out = append(out, p)
		}
	}
	for k, v := range before.Sysctls {
		if cur, _ := os.ReadFile("/proc/sys/" + k); strings.TrimSpace(string(cur)) != v {
			out = append(out, fmt.Sprintf("sysctl %s = %s, was %s", k, strings.TrimSpace(string(cur)), v))
		}
	}
	slices.Sort(out)
	return out
}

// readSysctls reads the kubelet's sysctls.
func readSysctls() (map[string]string, error) {
	m := map[string]string{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			return nil, err
		}
		m[k] = strings.TrimSpace(string(b))
	}
	return m, nil
}
