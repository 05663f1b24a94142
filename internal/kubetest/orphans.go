package kubetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// reapOrphans kills etcd and kube-apiserver processes started from binDir
// whose test binary is gone (a test killed by its timeout or a signal never
// runs Stop; envtest starts them in their own process group, so they
// outlive it), and removes the envtest directories named in their
// arguments. A process counts as orphaned when its parent is not a Go test
// binary (*.test). It returns what it removed, for the log.
func reapOrphans(binDir string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil || (exe != filepath.Join(binDir, "etcd") && exe != filepath.Join(binDir, "kube-apiserver")) {
			continue
		}
		if parentExe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(ppid(pid)), "exe")); err == nil && strings.HasSuffix(parentExe, ".test") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			continue
		}
		out = append(out, filepath.Base(exe)+" pid "+p.Name())
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			_, dir, ok := strings.Cut(arg, "-dir=") // --data-dir=, --cert-dir=
			if ok && strings.Contains(dir, "k8s_test_framework_") {
				// envtest's directory is the parent of its data/cert dirs, or the dir itself.
				for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
					if strings.HasPrefix(filepath.Base(d), "k8s_test_framework_") {
						os.RemoveAll(d)
						out = append(out, d)
						break
					}
				}
			}
		}
	}
	return out
}

// ppid is the parent pid of pid (0 when unknown).
func ppid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...; comm may hold spaces, so cut after ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
