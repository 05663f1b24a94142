package workload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// OwnedFile is the ledger a Workload keeps in Config.OutDir (so in
// <run dir>/fio/ once the run moves it there): one JSON object per line,
// appended and synced to disk before the thing it names exists, so that
// whatever kills fiomig (kill -9 included) leaves a record of what to clean
// up. Janitor reads it.
const OwnedFile = "owned.jsonl"

// MarkerEnv is the environment variable every fio process of a Workload is
// started with, set to the owner's Marker. fio's job processes inherit it
// even though each runs in a session of its own (fio backend.c setsid), so
// a scan of /proc/<pid>/environ finds all of them: the group kill does not.
const MarkerEnv = "FIOMIG_OWNER"

// Owned kinds (OwnedEntry.Kind).
const (
	OwnedOwner  = "owner"  // the fiomig process: Pid, StartTicks, Marker
	OwnedMount  = "mount"  // a FUSE mount point: Path
	OwnedTmpDir = "tmpdir" // a temporary directory made for the workload: Path
	OwnedFio    = "fio"    // one fio process: Pid, StartTicks, Volume
)

// OwnedEntry is one line of OwnedFile.
type OwnedEntry struct {
	Kind string `json:"kind"`
	// Pid and StartTicks identify a process (start time in clock ticks
	// since boot, proc(5) /proc/<pid>/stat field 22): a pid reused by
	// another process has another start time.
	Pid        int    `json:"pid,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"`
	// Marker is the value of MarkerEnv for this owner's processes.
	Marker string `json:"marker,omitempty"`
	Path   string `json:"path,omitempty"`
	Volume string `json:"volume,omitempty"`
}

// ReadOwned parses an OwnedFile; name is used in errors, which read
// "name:line: ..." and name the field: a line that is not a JSON object, an
// unknown field or kind, an owner or fio line without pid or start_ticks,
// an owner without marker, a mount or tmpdir line without an absolute path.
// A last line cut short by a crash (no newline, not JSON) is ignored: the
// writer syncs each line before acting on it, so nothing it names exists.
func ReadOwned(r io.Reader, name string) ([]OwnedEntry, error) {
	var out []OwnedEntry
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return out, nil
		}
		if err != nil && err != io.EOF {
			return out, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		complete := err == nil
		text := strings.TrimSpace(string(b))
		if text == "" {
			if !complete {
				return out, nil
			}
			continue
		}
		var e OwnedEntry
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if derr := dec.Decode(&e); derr != nil || dec.More() {
			if !complete {
				return out, nil // cut short by a crash
			}
			if derr == nil {
				derr = errors.New("trailing data")
			}
			return out, fmt.Errorf("%s:%d: not an owned-file line: %w", name, n, derr)
		}
		if err := e.validate(); err != nil {
			return out, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		out = append(out, e)
		if !complete {
			return out, nil
		}
	}
}

func (e OwnedEntry) validate() error {
	switch e.Kind {
	case OwnedOwner, OwnedFio:
		if e.Pid <= 0 {
			return fmt.Errorf("%s line: field \"pid\" must be > 0, got %d", e.Kind, e.Pid)
		}
		if e.StartTicks == 0 {
			return fmt.Errorf("%s line: field \"start_ticks\" is missing", e.Kind)
		}
		if e.Kind == OwnedOwner && e.Marker == "" {
			return errors.New("owner line: field \"marker\" is missing")
		}
	case OwnedMount, OwnedTmpDir:
		if !filepath.IsAbs(e.Path) || filepath.Clean(e.Path) != e.Path || e.Path == "/" {
			return fmt.Errorf("%s line: field \"path\" must be a clean absolute path other than /, got %q", e.Kind, e.Path)
		}
	default:
		return fmt.Errorf("field \"kind\": unknown kind %q (want %s, %s, %s or %s)", e.Kind, OwnedOwner, OwnedMount, OwnedTmpDir, OwnedFio)
	}
	return nil
}

// ledger appends OwnedEntry lines to an OwnedFile.
type ledger struct {
	mu     sync.Mutex
	f      *os.File
	marker string
}

// self is this process as an owner: pid, start ticks and the marker.
func self() (OwnedEntry, error) {
	pid := os.Getpid()
	st, err := ProcStartTicks(pid)
	if err != nil {
		return OwnedEntry{}, err
	}
	return OwnedEntry{Kind: OwnedOwner, Pid: pid, StartTicks: st, Marker: fmt.Sprintf("fiomig-%d-%d", pid, st)}, nil
}

// openLedger creates dir/OwnedFile (appending when it exists) and records
// this process as the owner.
func openLedger(dir string) (*ledger, error) {
	owner, err := self()
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, OwnedFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	l := &ledger{f: f, marker: owner.Marker}
	if err := l.add(owner); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// add appends e and syncs it to disk.
func (l *ledger) add(e OwnedEntry) error {
	if l == nil {
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("workload: %s: %w", l.f.Name(), err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("workload: %s: %w", l.f.Name(), err)
	}
	return nil
}

func (l *ledger) close() {
	if l != nil {
		l.f.Close()
	}
}

// ProcStartTicks returns process pid's start time in clock ticks since boot
// (proc(5) /proc/<pid>/stat field 22); the error wraps fs.ErrNotExist when
// there is no such process.
func ProcStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// comm (field 2) is in parentheses and may hold anything: fields
	// resume after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' after comm", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	const startField = 22 - 3 // fields after comm start with field 3 (state)
	if len(f) <= startField {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after comm, want > %d", pid, len(f), startField)
	}
	return strconv.ParseUint(f[startField], 10, 64)
}

// Alive reports whether the process (pid, startTicks) still runs: a pid
// with another start time is another process, and a zombie (exited, not
// yet reaped by a parent that may never do so) runs no more.
func Alive(pid int, startTicks uint64) bool {
	st, err := ProcStartTicks(pid)
	return err == nil && st == startTicks && processRunning(pid)
}

// MarkedProcesses returns the pids of every process whose environment holds
// MarkerEnv=marker (root can read every process's environ; a process that
// exits meanwhile is skipped), sorted.
func MarkedProcesses(marker string) ([]int, error) {
	des, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := []byte(MarkerEnv + "=" + marker)
	var out []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", de.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range splitNUL(env) {
			if string(kv) == string(want) {
				out = append(out, pid)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func splitNUL(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		out = append(out, b[:i])
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}

// killMarked sends SIGKILL to every process carrying marker and returns
// their pids. A process that is gone already is not an error.
func killMarked(marker string) ([]int, error) {
	pids, err := MarkedProcesses(marker)
	if err != nil {
		return nil, err
	}
	var killed []int
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
			continue
		}
		killed = append(killed, pid)
	}
	return killed, errors.Join(errs...)
}

// MaxLoadFactor caps LoadFactor, so that a stop never waits more than
// MaxLoadFactor times its named deadline.
const MaxLoadFactor = 4

// LoadFactor is how much slower than idle this machine is likely to be:
// the 1-minute load average per CPU (/proc/loadavg), at least 1 and at most
// MaxLoadFactor (1 when it cannot be read). Deadlines for work whose duration depends
// on the scheduler — a process exiting, a mount going idle — are scaled by
// it, so that a loaded 2-core CI machine does not turn into false failures.
func LoadFactor() float64 {
	load, ok := LoadAverage()
	if !ok {
		return 1
	}
	return min(MaxLoadFactor, max(1, load/float64(runtime.NumCPU())))
}

// LoadAverage is this machine's 1-minute load average from /proc/loadavg;
// ok is false when it cannot be read.
func LoadAverage() (load float64, ok bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	load, err = strconv.ParseFloat(f[0], 64)
	return load, err == nil
}

// scaled is d times LoadFactor.
func scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * LoadFactor())
}

// processRunning reports whether pid is a process that is not a zombie.
func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
