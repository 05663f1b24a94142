package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// JanitorAction is one thing Janitor removed (or, dry, would remove) or
// left alone, and why.
type JanitorAction struct {
	// What: "kill" (a process), "unmount" (a FUSE mount), "remove" (a
	// temporary directory) or "keep" (something found and left alone).
	What string `json:"what"`
	// Target is the pid or the path.
	Target string `json:"target"`
	// Ledger is the OwnedFile that recorded it ("" for a stale mount found
	// in the mount table alone).
	Ledger string `json:"ledger,omitempty"`
	Reason string `json:"reason"`
	// Err is what went wrong doing it, if anything.
	Err string `json:"error,omitempty"`
}

// Line is the action in one line for a person: "kill 123: why (ledger)",
// "would unmount /mnt/x: why", "keep /tmp/y: why", with ": FAILED: err"
// when it went wrong; dryRun says "would".
func (a JanitorAction) Line(dryRun bool) string {
	line := a.What + " " + a.Target + ": " + a.Reason
	if dryRun && a.What != "keep" {
		line = "would " + line
	}
	if a.Ledger != "" {
		line += " (" + a.Ledger + ")"
	}
	if a.Err != "" {
		line += ": FAILED: " + a.Err
	}
	return line
}

// JanitorReport is what Janitor did.
type JanitorReport struct {
	// Ledgers are the OwnedFiles read, sorted.
	Ledgers []string        `json:"ledgers"`
	Actions []JanitorAction `json:"actions"`
}

// JanitorOptions configure Janitor.
type JanitorOptions struct {
	// Roots are the directories searched for OwnedFiles: a run directory,
	// an --out directory holding run directories and staging directories
	// (.fio-staging-*), or a workload's OutDir; up to 3 levels deep.
	Roots []string
	// DryRun: report what would be done, do nothing.
	DryRun bool
	// MountInfo is the mount table to read (default MountInfoFile).
	MountInfo string
}

// Janitor cleans up what a fiomig killed without a chance to stop (kill -9,
// a crash, a lost machine) left behind, from what its OwnedFiles recorded:
//
//   - For each ledger whose owner process is gone: every process carrying
//     its marker (fio and its job processes; MarkerEnv) and every recorded
//     fio process still running with its recorded start time is killed
//     (SIGKILL); then each recorded mount point still mounted as FSType is
//     unmounted (its FUSE connection aborted first, then a plain unmount,
//     then a lazy detach); then each recorded temporary directory that is
//     no longer a mount point is removed.
//   - A ledger whose owner still runs is left alone ("keep"): that run is
//     alive.
//   - Beyond the ledgers, a FSType mount whose server is gone (stat answers
//     ENOTCONN) is stale whoever made it, and is unmounted.
//
// It never touches a process, mount or directory no ledger names, except
// such a dead mount. Errors of single actions are in the report (Err); the
// error is for roots that cannot be read.
func Janitor(opts JanitorOptions) (JanitorReport, error) {
	rep := JanitorReport{Ledgers: []string{}, Actions: []JanitorAction{}}
	if opts.MountInfo == "" {
		opts.MountInfo = MountInfoFile
	}
	var ledgers []string
	for _, root := range opts.Roots {
		found, err := findLedgers(root, 3)
		if err != nil {
			return rep, err
		}
		ledgers = append(ledgers, found...)
	}
	slices.Sort(ledgers)
	ledgers = slices.Compact(ledgers)
	rep.Ledgers = append(rep.Ledgers, ledgers...)
	act := func(a JanitorAction, do func() error) {
		if !opts.DryRun && do != nil {
			if err := do(); err != nil {
				a.Err = err.Error()
			}
		}
		rep.Actions = append(rep.Actions, a)
	}
	handled := map[string]bool{} // mount points dealt with via a ledger
	for _, lp := range ledgers {
		entries, err := readOwnedFile(lp)
		if err != nil {
			act(JanitorAction{What: "keep", Target: lp, Ledger: lp, Reason: "unreadable ledger: " + err.Error()}, nil)
			continue
		}
		var owners []OwnedEntry
		for _, e := range entries {
			if e.Kind == OwnedOwner {
				owners = append(owners, e)
			}
		}
		live := false
		for _, o := range owners {
			if Alive(o.Pid, o.StartTicks) {
				live = true
				act(JanitorAction{What: "keep", Target: strconv.Itoa(o.Pid), Ledger: lp,
					Reason: "the fiomig that owns this ledger still runs: its run is alive"}, nil)
			}
		}
		for _, e := range entries {
			if e.Kind == OwnedMount {
				handled[e.Path] = true
			}
		}
		if live {
			continue
		}
		// Processes first: they hold files of the mount.
		var killed []int
		for _, o := range owners {
			pids, err := MarkedProcesses(o.Marker)
			if err != nil {
				return rep, err
			}
			for _, pid := range pids {
				if slices.Contains(killed, pid) {
					continue
				}
				killed = append(killed, pid)
				act(JanitorAction{What: "kill", Target: strconv.Itoa(pid), Ledger: lp,
					Reason: fmt.Sprintf("%s (%s) of a dead fiomig run", procComm(pid), MarkerEnv+"="+o.Marker)},
					func() error { return ignoreESRCH(syscall.Kill(pid, syscall.SIGKILL)) })
			}
		}
		for _, e := range entries {
			if e.Kind != OwnedFio || slices.Contains(killed, e.Pid) || !Alive(e.Pid, e.StartTicks) {
				continue
			}
			killed = append(killed, e.Pid)
			act(JanitorAction{What: "kill", Target: strconv.Itoa(e.Pid), Ledger: lp,
				Reason: fmt.Sprintf("fio of volume %s of a dead fiomig run", e.Volume)},
				func() error { return ignoreESRCH(syscall.Kill(e.Pid, syscall.SIGKILL)) })
		}
		if !opts.DryRun {
			waitGone(killed, scaled(ReapTimeout))
		}
		for _, e := range entries {
			if e.Kind != OwnedMount {
				continue
			}
			m, err := mountedAs(opts.MountInfo, e.Path)
			if err != nil {
				return rep, err
			}
			if m == nil {
				continue
			}
			if m.FSType != FSType {
				act(JanitorAction{What: "keep", Target: e.Path, Ledger: lp,
					Reason: fmt.Sprintf("mounted as %s, not %s: not fiomig's any more", m.FSType, FSType)}, nil)
				continue
			}
			act(JanitorAction{What: "unmount", Target: e.Path, Ledger: lp, Reason: "FUSE volumes of a dead fiomig run"},
				func() error { return unmountStale(e.Path, *m) })
		}
		for _, e := range entries {
			if e.Kind != OwnedTmpDir {
				continue
			}
			if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if !strings.HasPrefix(filepath.Base(e.Path), "fiomig-") {
				act(JanitorAction{What: "keep", Target: e.Path, Ledger: lp, Reason: "not named fiomig-*: not removed"}, nil)
				continue
			}
			path := e.Path
			act(JanitorAction{What: "remove", Target: path, Ledger: lp, Reason: "temporary directory of a dead fiomig run"},
				func() error {
					if m, err := mountedBelow(opts.MountInfo, path); err != nil || m != "" {
						if err == nil {
							err = fmt.Errorf("%s is still mounted: not removed", m)
						}
						return err
					}
					return os.RemoveAll(path)
				})
		}
	}
	// Dead mounts no ledger (found) names.
	all, err := readMountInfo(opts.MountInfo)
	if err != nil {
		return rep, err
	}
	for _, m := range all {
		if m.FSType != FSType || handled[m.MountPoint] {
			continue
		}
		if !deadFUSE(m.MountPoint) {
			continue
		}
		act(JanitorAction{What: "unmount", Target: m.MountPoint,
			Reason: "its FUSE server is gone (ENOTCONN); no ledger found for it"},
			func() error { return unmountStale(m.MountPoint, m) })
	}
	return rep, nil
}

// findLedgers returns the OwnedFiles at most depth directories below root.
func findLedgers(root string, depth int) ([]string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("workload: janitor: %w", err)
	}
	base := strings.Count(root, string(filepath.Separator))
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // unreadable below root: not ours to judge
		}
		if d.IsDir() && strings.Count(p, string(filepath.Separator))-base > depth {
			return fs.SkipDir
		}
		if !d.IsDir() && d.Name() == OwnedFile {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workload: janitor: %w", err)
	}
	return out, nil
}

func readOwnedFile(p string) ([]OwnedEntry, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return ReadOwned(bytes.NewReader(b), p)
}

func readMountInfo(path string) ([]MountEntry, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer fh.Close()
	es, err := ParseMountInfo(fh, path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return es, nil
}

// mountedAs returns the topmost mount at dir, or nil.
func mountedAs(mountInfo, dir string) (*MountEntry, error) {
	es, err := readMountInfo(mountInfo)
	if err != nil {
		return nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].MountPoint == dir {
			return &es[i], nil
		}
	}
	return nil, nil
}

// mountedBelow returns a mount point at or below dir, or "".
func mountedBelow(mountInfo, dir string) (string, error) {
	es, err := readMountInfo(mountInfo)
	if err != nil {
		return "", err
	}
	for _, e := range es {
		if e.MountPoint == dir || strings.HasPrefix(e.MountPoint, dir+"/") {
			return e.MountPoint, nil
		}
	}
	return "", nil
}

// deadFUSE reports whether the FUSE mount at dir has lost its server: stat
// fails with ENOTCONN. A server that does not answer within a second is
// not called dead (it may be busy): only a ledger can say it is ours.
func deadFUSE(dir string) bool {
	res := make(chan error, 1)
	go func() {
		var st syscall.Stat_t
		res <- syscall.Stat(dir, &st)
	}()
	select {
	case err := <-res:
		return errors.Is(err, syscall.ENOTCONN)
	case <-time.After(time.Second):
		return false
	}
}

// unmountStale aborts the FUSE connection of mount m (nothing may hang on
// it) and unmounts dir, lazily if it is still busy.
func unmountStale(dir string, m MountEntry) error {
	_ = os.WriteFile(filepath.Join("/sys/fs/fuse/connections", strconv.Itoa(m.Minor), "abort"), []byte("1"), 0o200)
	if err := unmountBusy(dir, time.Now().Add(scaled(2*time.Second))); err != nil {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("lazy unmount %s: %w", dir, err)
		}
	}
	return nil
}

func ignoreESRCH(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// procComm is the command name of pid ("?" when gone).
func procComm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
